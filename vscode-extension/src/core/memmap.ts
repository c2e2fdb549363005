/**
 * The memory map webview's page and messages. Free of the VS Code API (views/memmap.ts holds
 * the panel). The data is the server's `pypto-lsp/memoryMap` answer (pypto_lsp/ir/memmap.py);
 * the drawing is pypto_lsp/report_assets/memmap.js (the same `pypto-lsp memmap --html`
 * inlines) over the pictures' Vega-Lite bundle and render.js (its theme).
 */
import { drawingPage, PageOptions, WEBVIEW_SCRIPTS } from './pictures';

export const MEMORY_MAP_REQUEST = 'pypto-lsp/memoryMap';
export const SHOW_MEMORY_MAP = 'pypto-lsp.showMemoryMap';

/** The scripts of the memory map webview, in order (file names under dist/webview/). */
export const MEMMAP_SCRIPTS = [...WEBVIEW_SCRIPTS, 'memmap.js'] as const;

/** The server's answer, as far as the extension reads it. */
export interface MemoryMapData {
    uri?: string;
    file?: string;
    addressed?: boolean;
    placed?: boolean;
    run?: boolean;
    error?: string;
    strips: unknown[];
    counts?: { strips: number; bars: number; overlaps: number; findings: number };
}

/** What the webview posts back: a bar clicked (reveal its line, 1-based). */
export interface RevealFromWebview {
    type: 'reveal';
    line: number;
}

export function isRevealFromWebview(m: unknown): m is RevealFromWebview {
    return (
        typeof m === 'object' &&
        m !== null &&
        (m as RevealFromWebview).type === 'reveal' &&
        Number.isInteger((m as RevealFromWebview).line) &&
        (m as RevealFromWebview).line > 0
    );
}

/** A short line above the map. */
export function memoryMapNote(d: MemoryMapData, name: string): string {
    if (d.error) {
        return `${name} does not parse: ${d.error}`;
    }
    const c = d.counts ?? { strips: 0, bars: 0, overlaps: 0, findings: 0 };
    if (c.strips === 0) {
        return `${name}: nothing placed yet (tiles get their memory from InitMemRef on).`;
    }
    const red = c.overlaps === 0 ? 'no overlap' : `${c.overlaps} overlap${c.overlaps === 1 ? '' : 's'} in red`;
    const run = d.run ? ` · ${c.findings} finding${c.findings === 1 ? '' : 's'} of the last validation` : ' · not validated: placement only';
    const where = d.addressed ? 'byte addresses' : 'before AllocateMemoryAddr: one region per buffer';
    return `${name} · ${c.bars} placed value${c.bars === 1 ? '' : 's'} · ${red}${run} · ${where}. Click a bar to go to its line.`;
}

/** The memory map's page; a clicked bar reveals its line. */
export function memmapWebviewHtml(opts: PageOptions): string {
    return drawingPage({
        ...opts,
        hostId: 'memmap',
        style: '.memmap-strip { margin: 8px 0 20px; }',
        render: "window.pyptoMemmap.renderAll(host, last, { maxWidth: document.body.clientWidth, onLineClick: (line) => vscode.postMessage({ type: 'reveal', line: line }) })",
    });
}
