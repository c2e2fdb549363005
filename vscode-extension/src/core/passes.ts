/**
 * Pass dump folders: which files are dumps, their pipeline order, and the tree's
 * filters. No `vscode` import.
 */
import { FileResult, Verdict } from './protocol';

/** A python file inside a `passes_dump*` folder (at any depth), as the server's selector says. */
export function isDumpPath(fsPath: string): boolean {
    const parts = fsPath.split(/[\\/]+/);
    if (parts.length < 2 || !/\.py$/i.test(parts[parts.length - 1])) {
        return false;
    }
    return parts.slice(0, -1).some((p) => p.startsWith('passes_dump'));
}

/** The marker PyPTO writes on the first line of every dump. */
export function hasProgramHeader(firstLine: string): boolean {
    return firstLine.replace(/^\uFEFF/, '').startsWith('# pypto.program:');
}

/** Is this (python) document a pass dump? Path first, then the first line. */
export function isDumpDocument(fsPath: string, firstLine: string): boolean {
    return isDumpPath(fsPath) || (/\.py$/i.test(fsPath) && hasProgramHeader(firstLine));
}

const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

/**
 * Pipeline order = file-name order, numerically aware so that `100_after_X.py`
 * follows `99_after_Y.py` if a pipeline ever grows past two digits.
 */
export function comparePassNames(a: string, b: string): number {
    return collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** The dump files of a folder listing (names), in pipeline order. */
export function sortPassFiles(names: readonly string[]): string[] {
    return names.filter((n) => /\.py$/i.test(n) && !n.startsWith('.')).sort(comparePassNames);
}

/** The file before `name` in pipeline order, or undefined for the first one / an unknown name. */
export function previousPass(names: readonly string[], name: string): string | undefined {
    const sorted = sortPassFiles(names);
    const i = sorted.indexOf(name);
    return i > 0 ? sorted[i - 1] : undefined;
}

/** `35_after_AllocateMemoryAddr.py` -> { index: 35, pass: "AllocateMemoryAddr" }; `00_frontend.py` -> frontend. */
export function parsePassName(name: string): { index: number | undefined; pass: string } {
    const stem = name.replace(/\.py$/i, '');
    const m = /^(\d+)_(?:after_)?(.*)$/.exec(stem);
    if (!m) {
        return { index: undefined, pass: stem };
    }
    return { index: Number(m[1]), pass: m[2] || stem };
}

/**
 * Which passes left the IR as it was, from the server's pass chart (`pypto-lsp/passChart`,
 * computed by pypto_lsp/ir/passdiff.py: comments, blank lines and memory addresses ignored),
 * so the tree and the chart say the same: file name -> unchanged. Passes the answer does not
 * name (or a malformed answer) are left out: not known.
 */
export function unchangedFromChart(chart: unknown): Map<string, boolean> {
    const out = new Map<string, boolean>();
    const passes = typeof chart === 'object' && chart !== null ? (chart as { passes?: unknown }).passes : undefined;
    if (!Array.isArray(passes)) {
        return out;
    }
    for (const p of passes) {
        if (typeof p !== 'object' || p === null) {
            continue;
        }
        const { file, unchanged } = p as { file?: unknown; unchanged?: unknown };
        if (typeof file === 'string' && typeof unchanged === 'boolean') {
            out.set(file.split(/[\\/]/).pop() ?? file, unchanged);
        }
    }
    return out;
}

export interface PassEntry {
    name: string;
    uri: string;
    result?: FileResult;
    /** false when the server says the IR equals the previous dump's (see unchangedFromChart); undefined = not known */
    changed?: boolean;
    firstDivergent: boolean;
}

export interface PassFilters {
    failingOnly: boolean;
    hideUnchanged: boolean;
}

const FAILING: ReadonlySet<Verdict> = new Set(['fail', 'error']);

export function isFailing(e: PassEntry): boolean {
    return e.result !== undefined && FAILING.has(e.result.status);
}

/** Apply the tree's toggles. The first divergent pass is always kept, it is the point of the view. */
export function filterPasses(entries: readonly PassEntry[], f: PassFilters): PassEntry[] {
    return entries.filter((e) => {
        if (e.firstDivergent) {
            return true;
        }
        if (f.failingOnly && !isFailing(e)) {
            return false;
        }
        if (f.hideUnchanged && e.changed === false) {
            return false;
        }
        return true;
    });
}

/**
 * The first divergent pass of a folder when the server has not said: the first
 * failing (fail/error) file in pipeline order. Returns its uri or undefined.
 */
export function inferFirstDivergent(entries: readonly PassEntry[]): string | undefined {
    for (let i = 0; i < entries.length; i++) {
        if (isFailing(entries[i])) {
            return entries[i].uri;
        }
    }
    return undefined;
}
