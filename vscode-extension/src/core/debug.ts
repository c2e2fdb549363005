/**
 * The `pypto` debugger's pure parts (no VS Code API): the launch configuration of a dump,
 * the adapter's command line, and the names whose values show at line ends while stopped.
 * The adapter is `<python> -m pypto_lsp debug` (docs/debugger.md); views/debug.ts wires it.
 */

export const DEBUG_TYPE = 'pypto';

export const ADAPTER_ARGS = ['-m', 'pypto_lsp', 'debug'] as const;
/** The adapter's custom request (pypto_lsp/debug/adapter.py on_pyptoErrorMap) and the command using it. */
export const ERROR_MAP_DAP_REQUEST = 'pyptoErrorMap';
export const SHOW_TILE_ERROR_MAP = 'pypto-lsp.debug.showTileErrorMap';

/** The note under a tile's picture: what it is compared with, where the run stands. */
export function tileMapNote(expr: string, res: { against?: string; line?: number }): string {
    return `'${expr}' at line ${res.line ?? '?'} against ${res.against ?? 'the previous pass'}`;
}

export interface PyptoLaunch {
    type: string;
    request: 'launch';
    name: string;
    program: string;
    config?: string;
    inputs?: string;
    expected?: string;
    entry?: string;
    stopOnEntry?: boolean;
    stopOnNaN?: boolean;
    stopOnFirstDifference?: boolean;
    stopOnFinding?: boolean;
    [key: string]: unknown;
}

/** The configuration "Debug this pass" starts for a dump file (goldens found as `validate` does). */
export function launchFor(program: string, fileName: string): PyptoLaunch {
    return {
        type: DEBUG_TYPE,
        request: 'launch',
        name: `Debug ${fileName}`,
        program,
        stopOnNaN: true,
        stopOnFirstDifference: true,
        stopOnFinding: true,
    };
}

/**
 * A configuration as VS Code hands it to `resolveDebugConfiguration`: an empty one (F5 without
 * launch.json) becomes the active dump's; `program` missing means the active dump. Undefined:
 * nothing to debug (no dump open), the caller says so.
 */
export function completeLaunch(config: Record<string, unknown>, activeDump: string | undefined, activeName: string | undefined): PyptoLaunch | undefined {
    if (!config.type && !config.request && !config.name) {
        return activeDump ? launchFor(activeDump, activeName ?? activeDump) : undefined;
    }
    const program = typeof config.program === 'string' && config.program ? config.program : activeDump;
    if (!program) {
        return undefined;
    }
    return { ...config, type: DEBUG_TYPE, request: 'launch', name: String(config.name ?? `Debug ${activeName ?? program}`), program } as PyptoLaunch;
}

export interface InlineTarget {
    /** 0-based line */
    line: number;
    /** 0-based column of the name */
    column: number;
    name: string;
}

const DEF = /^(\s*)def\s+\w+\s*\(/;
const ASSIGN = /^(\s*)([A-Za-z_]\w*)\s*:\s*pl\./;
const FOR = /^(\s*)for\s+([A-Za-z_]\w*)\s*,/;

/**
 * The names assigned in the stopped statement's function, from its `def` to the stopped line
 * (0-based, included): each gets its value at its line's end (VS Code evaluates the name).
 */
export function inlineTargets(lines: readonly string[], stoppedLine: number): InlineTarget[] {
    let start = 0;
    for (let i = Math.min(stoppedLine, lines.length - 1); i >= 0; i--) {
        if (DEF.test(lines[i])) {
            start = i + 1;
            break;
        }
    }
    const out: InlineTarget[] = [];
    for (let i = start; i <= Math.min(stoppedLine, lines.length - 1); i++) {
        const m = ASSIGN.exec(lines[i]) ?? FOR.exec(lines[i]);
        if (m) {
            out.push({ line: i, column: m[1].length, name: m[2] });
        }
    }
    return out;
}
