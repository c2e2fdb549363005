/** How results read in lenses-adjacent UI: tree items, status bar, messages. No `vscode` import. */
import { FileResult, FolderResult, Verdict } from './protocol';

export const VERDICT_LABEL: Record<Verdict, string> = {
    pass: 'PASS',
    fail: 'FAIL',
    error: 'ERROR',
    ran: 'RAN',
    pending: 'PENDING',
    skipped: 'SKIPPED',
};

/** Codicon per verdict (ThemeIcon ids). */
export const VERDICT_ICON: Record<Verdict, string> = {
    pass: 'pass',
    fail: 'error',
    error: 'warning',
    ran: 'circle-filled',
    pending: 'loading~spin',
    skipped: 'circle-slash',
};

/** Theme colour per verdict (ThemeColor ids), undefined = default foreground. */
export const VERDICT_COLOR: Record<Verdict, string | undefined> = {
    pass: 'testing.iconPassed',
    fail: 'testing.iconFailed',
    error: 'problemsWarningIcon.foreground',
    ran: undefined,
    pending: undefined,
    skipped: 'disabledForeground',
};

/** A diff in three significant digits: 0, 9.77e-4, 2.39e-1, 1.50e+2. NaN/undefined -> "n/a". */
export function formatDiff(x: number | undefined | null): string {
    if (x === undefined || x === null || Number.isNaN(x)) {
        return 'n/a';
    }
    if (x === 0) {
        return '0';
    }
    if (!Number.isFinite(x)) {
        return x > 0 ? 'inf' : '-inf';
    }
    return x.toExponential(2);
}

/** 0.004 -> "4 ms", 0.2987 -> "0.30 s", 12.3 -> "12.3 s", 125 -> "2 min 5 s". */
export function formatSeconds(s: number | undefined | null): string {
    if (s === undefined || s === null || !Number.isFinite(s) || s < 0) {
        return '';
    }
    if (s < 0.01) {
        return `${Math.round(s * 1000)} ms`;
    }
    if (s < 10) {
        return `${s.toFixed(2)} s`;
    }
    if (s < 60) {
        return `${s.toFixed(1)} s`;
    }
    const m = Math.floor(s / 60);
    return `${m} min ${Math.round(s - m * 60)} s`;
}

/** Largest max_abs_diff over the result's tensors (NaN when there are none). */
export function maxAbsDiff(r: Pick<FileResult, 'tensors'>): number {
    let best = NaN;
    for (const t of Object.values(r.tensors)) {
        const d = t.max_abs_diff;
        if (Number.isNaN(d)) {
            continue;
        }
        if (Number.isNaN(best) || d > best) {
            best = d;
        }
    }
    return best;
}

/** "out 2.39e-1 ✗, res 0 ✓" — every tensor with its max |Δ| and verdict. */
export function formatTensors(r: Pick<FileResult, 'tensors'>): string {
    return Object.entries(r.tensors)
        .map(([name, t]) => `${name} ${formatDiff(t.max_abs_diff)} ${t.pass ? '✓' : '✗'}`)
        .join(', ');
}

/** The short summary used by tree items: "FAIL 2.39e-1 · 0.30 s" ("" when not validated; the tooltip has the rest). */
export function describeResult(r: FileResult | undefined): string {
    if (!r) {
        return '';
    }
    let head = VERDICT_LABEL[r.status];
    const d = maxAbsDiff(r);
    if (!Number.isNaN(d)) {
        head += ` ${formatDiff(d)}`;
    } else if (r.error && (r.status === 'error' || r.status === 'fail')) {
        head += ` (${r.error.kind})`;
    }
    const t = formatSeconds(r.seconds);
    return t ? `${head} · ${t}${r.cached ? ' (cached)' : ''}` : head;
}

/** Status bar text (codicons allowed): "$(error) PyPTO FAIL 2.39e-1". */
export function statusBarText(r: FileResult | undefined): string {
    if (!r) {
        return '$(circle-outline) PyPTO';
    }
    const d = maxAbsDiff(r);
    const icon = r.status === 'pending' ? 'sync~spin' : VERDICT_ICON[r.status];
    return `$(${icon}) PyPTO ${VERDICT_LABEL[r.status]}${Number.isNaN(d) ? '' : ' ' + formatDiff(d)}`;
}

/** Multi-line tooltip (plain text) for a result. */
export function resultTooltip(r: FileResult | undefined, fileName: string): string {
    if (!r) {
        return `${fileName}: not validated yet`;
    }
    const lines = [`${fileName}: ${VERDICT_LABEL[r.status]}`];
    for (const [name, t] of Object.entries(r.tensors)) {
        lines.push(`  ${name}: max |Δ| ${formatDiff(t.max_abs_diff)}, max rel ${formatDiff(t.max_rel_diff)} ${t.pass ? '✓' : '✗'}`);
    }
    if (r.error) {
        lines.push(`  ${r.error.kind} at line ${r.error.line}: ${r.error.message}`);
    }
    const t = formatSeconds(r.seconds);
    if (t) {
        lines.push(`  ${t}${r.cached ? ' (cached)' : ''}`);
    }
    return lines.join('\n');
}

export interface FolderSummary {
    total: number;
    counts: Record<Verdict, number>;
}

export function summariseFolder(res: FolderResult): FolderSummary {
    const counts: Record<Verdict, number> = { pass: 0, fail: 0, error: 0, ran: 0, pending: 0, skipped: 0 };
    for (const f of res.files) {
        counts[f.status] += 1;
    }
    return { total: res.files.length, counts };
}

/** "50 passes: 35 pass, 15 fail. First divergent: 35_after_AllocateMemoryAddr.py" */
export function folderMessage(res: FolderResult, firstDivergentName: string | null): string {
    const s = summariseFolder(res);
    const order: Verdict[] = ['pass', 'fail', 'error', 'ran', 'pending', 'skipped'];
    const parts = order.filter((v) => s.counts[v] > 0).map((v) => `${s.counts[v]} ${v}`);
    const head = `${s.total} pass${s.total === 1 ? '' : 'es'}: ${parts.join(', ') || 'nothing validated'}.`;
    if (firstDivergentName) {
        return `${head} First divergent: ${firstDivergentName}`;
    }
    return s.counts.fail + s.counts.error > 0 ? head : `${head} No divergent pass.`;
}
