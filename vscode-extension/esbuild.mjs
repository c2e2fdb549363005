// Bundle src/extension.ts (+ vscode-languageclient) into dist/extension.js, and copy the
// pictures' scripts into dist/webview/: Vega, Vega-Lite and vega-embed as pinned and built in
// ../pypto_lsp/report_assets (package.json there), and render.js, the drawing code report.html shares.
//   node esbuild.mjs [--production] [--watch]
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';

const assets = new URL('../pypto_lsp/report_assets/', import.meta.url);
mkdirSync(new URL('dist/webview/', import.meta.url), { recursive: true });
for (const f of ['vega.min.js', 'vega-lite.min.js', 'vega-embed.min.js', 'render.js', 'memmap.js', 'taskgraph.js', 'LICENSES.txt']) {
    copyFileSync(new URL(f, assets), new URL(`dist/webview/${f}`, import.meta.url));
}

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const options = {
    entryPoints: ['src/extension.ts'],
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    outfile: 'dist/extension.js',
    external: ['vscode'],
    sourcemap: !production,
    minify: production,
    logLevel: 'info',
};

if (watch) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
} else {
    await esbuild.build(options);
}
