/**
 * The HTML of the pictures webviews (pass chart, error map). Free of the VS Code API:
 * the webview panel (views/pictures.ts) hands in the script URIs, the CSP source and a nonce.
 * The drawing code is pypto_lsp/report_assets/render.js, the same that report.html inlines;
 * Vega-Lite, Vega and vega-embed are the bundles pinned in pypto_lsp/report_assets/package.json,
 * copied into dist/webview/ by esbuild.mjs.
 */

export const PASS_CHART_REQUEST = 'pypto-lsp/passChart';
export const ERROR_MAP_REQUEST = 'pypto-lsp/errorMap';

/** The scripts a pictures webview loads, in order (file names under dist/webview/). */
export const WEBVIEW_SCRIPTS = ['vega.min.js', 'vega-lite.min.js', 'vega-embed.min.js', 'render.js'] as const;

/** What the extension posts to the webview. */
export type ToWebview =
    | { type: 'data'; data: { chart?: unknown; maps?: unknown[] }; note?: string }
    | { type: 'message'; text: string };

/** What the webview posts back: a pass clicked in the chart. */
export interface FromWebview {
    type: 'open';
    file: string;
}

export function isFromWebview(m: unknown): m is FromWebview {
    return typeof m === 'object' && m !== null && (m as FromWebview).type === 'open' && typeof (m as FromWebview).file === 'string';
}

export function makeNonce(random: () => number = Math.random): string {
    const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    let s = '';
    for (let i = 0; i < 32; i++) {
        s += chars.charAt(Math.floor(random() * chars.length));
    }
    return s;
}

export function escapeHtml(s: string): string {
    return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

export interface PageOptions {
    title: string;
    scriptUris: readonly string[];
    cspSource: string;
    nonce: string;
}

/**
 * A drawing webview page: the extension's own scripts by nonce, a note line and a host element;
 * it draws each `data` message with `render` (a JS expression over `host`, `last` and `vscode`),
 * again on a theme change or a resize, and says `ready` once listening. Vega compiles its
 * expressions with `new Function`, hence 'unsafe-eval' (nothing from the network).
 */
export function drawingPage(opts: PageOptions & { hostId: string; style: string; render: string }): string {
    const { title, scriptUris, cspSource, nonce, hostId, style, render } = opts;
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
${style}
#vg-tooltip-element { font-family: var(--vscode-font-family); }
</style></head>
<body><div id="note">Loading…</div><div id="${hostId}"></div>
${scripts}
<script nonce="${nonce}">
(function () {
  const vscode = acquireVsCodeApi();
  const host = document.getElementById('${hostId}');
  const note = document.getElementById('note');
  let last = null;
  function draw() {
    if (!last) { return; }
    host.innerHTML = '';
    ${render}
      .catch((e) => { note.textContent = 'Cannot draw: ' + e; });
  }
  window.addEventListener('message', (ev) => {
    const m = ev.data;
    if (m.type === 'message') { note.textContent = m.text; host.innerHTML = ''; last = null; return; }
    if (m.type === 'data') { note.textContent = m.note || ''; last = m.data; draw(); }
  });
  // theme change: VS Code swaps the body classes; draw again with the new colours
  new MutationObserver(draw).observe(document.body, { attributes: true, attributeFilter: ['class'] });
  // a wider or narrower panel: draw again to fit
  let resize = null;
  window.addEventListener('resize', () => { clearTimeout(resize); resize = setTimeout(draw, 250); });
  vscode.postMessage({ type: 'ready' });
})();
</script></body></html>
`;
}

/** The pictures' page (pass chart, error maps); a clicked pass opens its file. */
export function webviewHtml(opts: PageOptions): string {
    return drawingPage({
        ...opts,
        hostId: 'pictures',
        style: '.error-map { margin: 12px 0 24px; }',
        render: "window.pyptoPictures.renderAll(host, last, { maxWidth: document.body.clientWidth, onPassClick: (d) => vscode.postMessage({ type: 'open', file: d.file }) })",
    });
}

/** A short line above an error map answer. */
export function errorMapNote(res: { maps?: unknown[]; unavailable?: string; error?: string | null; kept?: boolean }, name: string): string {
    if (res.unavailable) {
        return `No error map for ${name}: ${res.unavailable}.`;
    }
    if (!res.maps || res.maps.length === 0) {
        return res.error ? `${name} did not run to the end: ${res.error}` : `${name}: no output to map.`;
    }
    return `${name}${res.error ? ` (the run stopped: ${res.error})` : ''}${res.kept ? ' · from the last computed map' : ''}`;
}

/** A short line above the pass chart. */
export function passChartNote(chart: { passes?: unknown[]; known?: number }): string {
    const n = chart.passes?.length ?? 0;
    const known = chart.known ?? n;
    if (known === 0) {
        return `${n} passes, none validated yet: run "Validate All Passes" (in a trusted workspace) to fill the chart.`;
    }
    return known < n ? `${known} of ${n} passes validated; the others show when they are. Click a point to open the pass.` : 'Click a point to open the pass.';
}

/** The commands of the pictures (the error map's is also a lens command of the server). */
export const PICTURE_CMD = {
    showErrorMap: 'pypto-lsp.showErrorMap',
    showPassChart: 'pypto-lsp.showPassChart',
} as const;
