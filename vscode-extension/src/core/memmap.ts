/**
 * The memory map webview's page and messages. Free of the VS Code API (views/memmap.ts holds
 * the panel). The data is the server's `pypto-lsp/memoryMap` answer (pypto_lsp/ir/memmap.py);
 * the drawing is pypto_lsp/report_assets/memmap.js (the same `pypto-lsp memmap --html`
 * inlines) over the pictures' Vega-Lite bundle and render.js (its theme).
 */
import { WEBVIEW_SCRIPTS } from './pictures';

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

export type ToMemmapWebview = { type: 'data'; data: MemoryMapData; note: string } | { type: 'message'; text: string };

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

function escapeHtml(s: string): string {
    return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** The webview page: the extension's own scripts by nonce, nothing from the network ('unsafe-eval': Vega). */
export function memmapWebviewHtml(opts: { title: string; scriptUris: readonly string[]; cspSource: string; nonce: string }): string {
    const { title, scriptUris, cspSource, nonce } = opts;
    const csp = [
        "default-src 'none'",
        `script-src 'nonce-${nonce}' 'unsafe-eval'`,
        `style-src ${cspSource} 'unsafe-inline'`,
        `img-src ${cspSource} data:`,
        `font-src ${cspSource}`,
    ].join('; ');
    const scripts = scriptUris.map((u) => `<script nonce="${nonce}" src="${escapeHtml(u)}"></script>`).join('\n');
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body { color: var(--vscode-editor-foreground); background: var(--vscode-editor-background); font-family: var(--vscode-font-family); padding: 12px 16px; }
#note { color: var(--vscode-descriptionForeground); margin: 4px 0 12px; }
.memmap-strip { margin: 8px 0 20px; }
#vg-tooltip-element { font-family: var(--vscode-font-family); }
</style></head>
<body><div id="note">Loading…</div><div id="memmap"></div>
${scripts}
<script nonce="${nonce}">
(function () {
  const vscode = acquireVsCodeApi();
  const host = document.getElementById('memmap');
  const note = document.getElementById('note');
  let last = null;
  function draw() {
    if (!last) { return; }
    host.innerHTML = '';
    window.pyptoMemmap.renderAll(host, last, { maxWidth: document.body.clientWidth, onLineClick: (line) => vscode.postMessage({ type: 'reveal', line: line }) })
      .catch((e) => { note.textContent = 'Cannot draw: ' + e; });
  }
  window.addEventListener('message', (ev) => {
    const m = ev.data;
    if (m.type === 'message') { note.textContent = m.text; host.innerHTML = ''; last = null; return; }
    if (m.type === 'data') { note.textContent = m.note || ''; last = m.data; draw(); }
  });
  // theme change: VS Code swaps the body classes; draw again with the new colours
  new MutationObserver(draw).observe(document.body, { attributes: true, attributeFilter: ['class'] });
  let resize = null;
  window.addEventListener('resize', () => { clearTimeout(resize); resize = setTimeout(draw, 250); });
  vscode.postMessage({ type: 'ready' });
})();
</script></body></html>
`;
}
