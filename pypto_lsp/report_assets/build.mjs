// Copies the pinned minified UMD bundles (and their licences) next to this file.
import { copyFileSync, readFileSync } from 'node:fs';
const files = [
    ['vega/build/vega.min.js', 'vega.min.js'],
    ['vega-lite/build/vega-lite.min.js', 'vega-lite.min.js'],
    ['vega-embed/build/vega-embed.min.js', 'vega-embed.min.js'],
];
for (const [from, to] of files) {
    copyFileSync(new URL(`node_modules/${from}`, import.meta.url), new URL(to, import.meta.url));
}
const licences = ['vega', 'vega-lite', 'vega-embed']
    .map((p) => `==== ${p} ${JSON.parse(readFileSync(new URL(`node_modules/${p}/package.json`, import.meta.url))).version} ====\n` +
        readFileSync(new URL(`node_modules/${p}/LICENSE`, import.meta.url), 'utf8'))
    .join('\n');
import { writeFileSync } from 'node:fs';
writeFileSync(new URL('LICENSES.txt', import.meta.url), licences);
