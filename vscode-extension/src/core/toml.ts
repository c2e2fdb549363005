/**
 * Writing the `[[cases]]` entry of `pypto-lsp.toml` for "Configure Golden
 * Tensors". A small line-based editor, not a TOML library: it only ever adds or
 * rewrites `dumps` / `inputs` / `expected` keys of one `[[cases]]` table and
 * leaves every other line (comments, other tables, other keys) as the user wrote it.
 * No `vscode` import.
 */
import * as path from 'path';

export const CONFIG_FILE = 'pypto-lsp.toml';

export interface GoldenCase {
    /** the dumps folder, relative to the toml file (forward slashes) */
    dumps: string;
    inputs: string;
    expected: string;
}

/** A TOML basic string. JSON's escapes (\" \\ \n \uXXXX ...) are all valid TOML escapes. */
export function tomlString(s: string): string {
    return JSON.stringify(s);
}

/** The value of a one-line `key = "..."` or `key = '...'`; undefined if the line is not that key. */
export function readStringKey(line: string, key: string): string | undefined {
    const m = /^\s*([A-Za-z0-9_-]+|"[^"]*")\s*=\s*(.*)$/.exec(line);
    if (!m) {
        return undefined;
    }
    const k = m[1].startsWith('"') ? m[1].slice(1, -1) : m[1];
    if (k !== key) {
        return undefined;
    }
    const rest = m[2].trim();
    if (rest.startsWith("'")) {
        const end = rest.indexOf("'", 1);
        return end > 0 ? rest.slice(1, end) : undefined;
    }
    if (rest.startsWith('"')) {
        // the basic string up to the first unescaped quote
        let i = 1;
        while (i < rest.length && rest[i] !== '"') {
            i += rest[i] === '\\' ? 2 : 1;
        }
        try {
            return JSON.parse(rest.slice(0, i + 1)) as string;
        } catch {
            return rest.slice(1, i);
        }
    }
    return undefined;
}

/** A folder path as the server would compare it: forward slashes, no "./", no trailing slash. */
export function normaliseRelDir(p: string): string {
    let s = p.replace(/\\/g, '/').replace(/\/+$/, '');
    while (s.startsWith('./')) {
        s = s.slice(2);
    }
    return s === '' ? '.' : s;
}

/** `target` as written in a toml in `tomlDir`: relative (forward slashes) when inside `root`, else absolute. */
export function tomlPath(tomlDir: string, target: string, root?: string): string {
    const insideRoot = root === undefined || !path.relative(root, target).startsWith('..');
    const rel = path.relative(tomlDir, target);
    if (insideRoot && rel !== '' && !path.isAbsolute(rel)) {
        return rel.split(path.sep).join('/');
    }
    return target;
}

const HEADER = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;

interface Block {
    /** line index of the `[[cases]]` header */
    start: number;
    /** exclusive end: the next header or the end of the file */
    end: number;
}

function casesBlocks(lines: string[]): Block[] {
    const blocks: Block[] = [];
    let current: Block | undefined;
    lines.forEach((line, i) => {
        const m = HEADER.exec(line);
        if (!m) {
            return;
        }
        if (current) {
            current.end = i;
            current = undefined;
        }
        if (/^\s*\[\[/.test(line) && m[1] === 'cases') {
            current = { start: i, end: lines.length };
            blocks.push(current);
        }
    });
    return blocks;
}

/**
 * Add or update the `[[cases]]` entry whose `dumps` is `c.dumps`, returning the new file text.
 * `existing` may be empty (new file).
 */
export function upsertCase(existing: string, c: GoldenCase): string {
    const eol = existing.includes('\r\n') ? '\r\n' : '\n';
    const lines = existing === '' ? [] : existing.split(/\r?\n/);
    // a trailing newline gives one empty last element: keep the text's shape
    const hadTrailingNewline = lines.length > 0 && lines[lines.length - 1] === '';
    if (hadTrailingNewline) {
        lines.pop();
    }
    const want = normaliseRelDir(c.dumps);
    for (const b of casesBlocks(lines)) {
        let dumpsLine = -1;
        for (let i = b.start + 1; i < b.end; i++) {
            const v = readStringKey(lines[i], 'dumps');
            if (v !== undefined && normaliseRelDir(v) === want) {
                dumpsLine = i;
            }
        }
        if (dumpsLine < 0) {
            continue;
        }
        for (const key of ['inputs', 'expected'] as const) {
            const value = `${key} = ${tomlString(c[key])}`;
            let found = false;
            for (let i = b.start + 1; i < b.end; i++) {
                if (readStringKey(lines[i], key) !== undefined || new RegExp(`^\\s*${key}\\s*=`).test(lines[i])) {
                    lines[i] = value;
                    found = true;
                }
            }
            if (!found) {
                const at = key === 'inputs' ? dumpsLine + 1 : lineAfterKey(lines, b, 'inputs', dumpsLine) + 1;
                lines.splice(at, 0, value);
                b.end += 1;
            }
        }
        return lines.join(eol) + eol;
    }
    const block = ['[[cases]]', `dumps = ${tomlString(want)}`, `inputs = ${tomlString(c.inputs)}`, `expected = ${tomlString(c.expected)}`];
    const out = lines.slice();
    while (out.length > 0 && out[out.length - 1].trim() === '') {
        out.pop();
    }
    if (out.length > 0) {
        out.push('');
    }
    out.push(...block);
    return out.join(eol) + eol;
}

function lineAfterKey(lines: string[], b: Block, key: string, fallback: number): number {
    for (let i = b.start + 1; i < b.end; i++) {
        if (readStringKey(lines[i], key) !== undefined) {
            return i;
        }
    }
    return fallback;
}

/** Where the toml may live, nearest first: the dumps folder's parent up to (and including) `root`. */
export function tomlCandidateDirs(dumpsDir: string, root: string | undefined): string[] {
    const dirs: string[] = [];
    let d = path.dirname(dumpsDir);
    for (;;) {
        dirs.push(d);
        if (root === undefined || path.relative(root, d) === '' || path.relative(root, d).startsWith('..')) {
            break;
        }
        const up = path.dirname(d);
        if (up === d) {
            break;
        }
        d = up;
    }
    return dirs;
}
