/**
 * The wire types of the pypto-lsp server contract, as the extension sees them.
 * Plain data only: no `vscode` import, so the logic built on them is unit-tested in node.
 */

export type RunOn = 'onSave' | 'onType' | 'manual';

export type Verdict = 'pass' | 'fail' | 'error' | 'ran' | 'pending' | 'skipped';

export interface TensorResult {
    max_abs_diff: number;
    max_rel_diff: number;
    pass: boolean;
}

export interface ResultError {
    kind: string;
    message: string;
    line: number;
    column: number;
}

/** One validated dump file (`pypto-lsp/fileResult`, `pypto-lsp.validateFile`). */
export interface FileResult {
    uri: string;
    file: string;
    status: Verdict;
    tensors: Record<string, TensorResult>;
    seconds: number;
    error: ResultError | null;
    cached: boolean;
    first_divergent: string | null;
}

/** `pypto-lsp.validateFolder` answer. */
export interface FolderResult {
    files: FileResult[];
    first_divergent: string | null;
}

export interface LspPosition {
    line: number;
    character: number;
}

export interface LspRange {
    start: LspPosition;
    end: LspPosition;
}

/** `pypto-lsp.firstDivergentPass` answer (or null). */
export interface DivergentLocation {
    uri: string;
    range: LspRange;
}

/** initializationOptions, and `settings["pypto-lsp"]` of workspace/didChangeConfiguration. */
export interface ServerOptions {
    runOn: RunOn;
    golden: { inputs: string | null; expected: string | null };
    validation: boolean;
    /**
     * Every run setting package.json declares, by its key (core/settings RUN_SETTINGS): rtol, atol,
     * timeoutSeconds, memory, maxAlloc ("512M", "4G", bytes; null: the server's default), exact,
     * sanitize, ... The server's RunSettings declares them (tools/gen_settings.py writes package.json).
     */
    [runSetting: string]: unknown;
}

/** Command ids the server implements (workspace/executeCommand). */
export const SERVER_COMMANDS = {
    validateFile: 'pypto-lsp.validateFile',
    validateFolder: 'pypto-lsp.validateFolder',
    firstDivergentPass: 'pypto-lsp.firstDivergentPass',
    showGeneratedCode: 'pypto-lsp.showGeneratedCode',
    showConfig: 'pypto-lsp.showConfig',
    writeGoldenCase: 'pypto-lsp.writeGoldenCase',
} as const;

/** Server -> client notification sent after every validation of a file. */
export const FILE_RESULT_NOTIFICATION = 'pypto-lsp/fileResult';

const VERDICTS: ReadonlySet<string> = new Set(['pass', 'fail', 'error', 'ran', 'pending', 'skipped']);

function isRecord(v: unknown): v is Record<string, unknown> {
    return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function num(v: unknown, fallback = NaN): number {
    return typeof v === 'number' ? v : fallback;
}

/**
 * Check and normalise a FileResult coming off the wire. Returns undefined for
 * something that is not one (no uri), so a malformed message cannot break the views.
 */
export function parseFileResult(raw: unknown): FileResult | undefined {
    if (!isRecord(raw) || typeof raw.uri !== 'string' || raw.uri === '') {
        return undefined;
    }
    const tensors: Record<string, TensorResult> = {};
    if (isRecord(raw.tensors)) {
        for (const [name, t] of Object.entries(raw.tensors)) {
            if (isRecord(t)) {
                tensors[name] = {
                    max_abs_diff: num(t.max_abs_diff),
                    max_rel_diff: num(t.max_rel_diff),
                    pass: t.pass === true,
                };
            }
        }
    }
    let error: ResultError | null = null;
    if (isRecord(raw.error)) {
        error = {
            kind: typeof raw.error.kind === 'string' ? raw.error.kind : 'error',
            message: typeof raw.error.message === 'string' ? raw.error.message : '',
            line: num(raw.error.line, 0),
            column: num(raw.error.column, 0),
        };
    }
    const status = typeof raw.status === 'string' && VERDICTS.has(raw.status) ? (raw.status as Verdict) : 'error';
    const file = typeof raw.file === 'string' && raw.file ? raw.file : basenameOfUri(raw.uri);
    return {
        uri: raw.uri,
        file,
        status,
        tensors,
        seconds: num(raw.seconds),
        error,
        cached: raw.cached === true,
        first_divergent: typeof raw.first_divergent === 'string' && raw.first_divergent ? raw.first_divergent : null,
    };
}

export function parseFolderResult(raw: unknown): FolderResult {
    if (!isRecord(raw)) {
        return { files: [], first_divergent: null };
    }
    const files = Array.isArray(raw.files)
        ? raw.files.map(parseFileResult).filter((r): r is FileResult => r !== undefined)
        : [];
    const fd = typeof raw.first_divergent === 'string' && raw.first_divergent ? raw.first_divergent : null;
    return { files, first_divergent: fd };
}

export function parseDivergentLocation(raw: unknown): DivergentLocation | null {
    if (!isRecord(raw) || typeof raw.uri !== 'string') {
        return null;
    }
    const r = raw.range;
    const pos = (p: unknown): LspPosition => (isRecord(p) ? { line: num(p.line, 0), character: num(p.character, 0) } : { line: 0, character: 0 });
    const range: LspRange = isRecord(r) ? { start: pos(r.start), end: pos(r.end) } : { start: pos(null), end: pos(null) };
    return { uri: raw.uri, range };
}

export function basenameOfUri(uri: string): string {
    const noQuery = uri.replace(/[?#].*$/, '');
    const parts = noQuery.split('/').filter((p) => p !== '');
    const last = parts.length ? parts[parts.length - 1] : uri;
    try {
        return decodeURIComponent(last);
    } catch {
        return last;
    }
}

/** The answer of `pypto-lsp.writeGoldenCase`: the config file written and how. */
export interface GoldenCaseWritten {
    config: string;
    written: 'added' | 'updated';
}

export function parseGoldenCaseWritten(raw: unknown): GoldenCaseWritten {
    if (!isRecord(raw) || typeof raw.config !== 'string' || (raw.written !== 'added' && raw.written !== 'updated')) {
        throw new Error(`unexpected answer to writeGoldenCase: ${JSON.stringify(raw)}`);
    }
    return { config: raw.config, written: raw.written };
}
