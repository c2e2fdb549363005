/** The pictures webview page and its messages (src/core/pictures.ts). */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { errorMapNote, isFromWebview, makeNonce, passChartNote, PICTURE_CMD, webviewHtml, WEBVIEW_SCRIPTS } from '../../src/core/pictures';

const root = path.resolve(__dirname, '..', '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

describe('pictures webview', () => {
    const html = webviewHtml({
        title: 'Error map · <out>',
        scriptUris: WEBVIEW_SCRIPTS.map((f) => `https://file+.vscode-resource/ext/dist/webview/${f}`),
        cspSource: 'https://file+.vscode-resource',
        nonce: 'N0NCE',
    });
    test('loads the four scripts in order, each with the nonce, and nothing from the network', () => {
        const srcs = [...html.matchAll(/<script nonce="N0NCE" src="([^"]+)"><\/script>/g)].map((m) => m[1].split('/').pop());
        assert.deepEqual(srcs, ['vega.min.js', 'vega-lite.min.js', 'vega-embed.min.js', 'render.js']);
        assert.equal((html.match(/<script/g) ?? []).length, 5); // + the boot script
        assert.equal((html.match(/<script nonce="N0NCE"/g) ?? []).length, 5);
        assert.match(html, /default-src 'none'; script-src 'nonce-N0NCE' 'unsafe-eval'/);
        assert.doesNotMatch(html, /http:\/\//);
    });
    test('theme-aware: VS Code colour variables, redrawn on a theme change', () => {
        assert.match(html, /var\(--vscode-editor-foreground\)/);
        assert.match(html, /MutationObserver\(draw\)\.observe\(document\.body, \{ attributes: true, attributeFilter: \['class'\] \}\)/);
    });
    test('the title is escaped', () => {
        assert.match(html, /<title>Error map · &lt;out&gt;<\/title>/);
    });
    test('nonce', () => {
        const n = makeNonce();
        assert.match(n, /^[A-Za-z0-9]{32}$/);
        assert.notEqual(n, makeNonce());
    });
    test('messages from the webview', () => {
        assert.ok(isFromWebview({ type: 'open', file: '/a/11_after_X.py' }));
        assert.ok(!isFromWebview({ type: 'open' }));
        assert.ok(!isFromWebview({ type: 'ready' }));
        assert.ok(!isFromWebview(null));
    });
    test('notes', () => {
        assert.match(errorMapNote({ maps: [], unavailable: 'validation is off here' }, '11.py'), /No error map for 11.py: validation is off here/);
        assert.match(errorMapNote({ maps: [{}], kept: true }, '11.py'), /from the last computed map/);
        assert.match(passChartNote({ passes: [1, 2, 3], known: 0 }), /none validated yet/);
        assert.match(passChartNote({ passes: [1, 2, 3], known: 2 }), /2 of 3 passes validated/);
    });
});

describe('package.json: pictures', () => {
    test('showPassChart is on the PyPTO Passes view title, showErrorMap is contributed', () => {
        const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
        assert.ok(ids.includes(PICTURE_CMD.showErrorMap) && ids.includes(PICTURE_CMD.showPassChart));
        const title = pkg.contributes.menus['view/title'].filter((m: { command: string }) => m.command === PICTURE_CMD.showPassChart);
        assert.deepEqual(title.map((m: { when: string }) => m.when), ['view == pypto-lsp.passes']);
    });
    test('the webview scripts are packaged', () => {
        const ignore = fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8');
        assert.match(ignore, /^!dist\/webview\/\*\*$/m);
    });
});
