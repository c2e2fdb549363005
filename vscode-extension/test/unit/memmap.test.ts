/** The memory map webview page, its messages and its contribution (src/core/memmap.ts, package.json). */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vm from 'node:vm';
import { describe, test } from 'node:test';
import { isRevealFromWebview, MEMMAP_SCRIPTS, memmapWebviewHtml, memoryMapNote, SHOW_MEMORY_MAP } from '../../src/core/memmap';

const root = path.resolve(__dirname, '..', '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const assets = path.resolve(root, '..', 'pypto_lsp', 'report_assets');

describe('memory map webview', () => {
    const html = memmapWebviewHtml({
        title: 'Memory map · <35>',
        scriptUris: MEMMAP_SCRIPTS.map((f) => `https://file+.vscode-resource/ext/dist/webview/${f}`),
        cspSource: 'https://file+.vscode-resource',
        nonce: 'N0NCE',
    });
    test('loads the pictures bundle then memmap.js, each with the nonce, nothing from the network', () => {
        const srcs = [...html.matchAll(/<script nonce="N0NCE" src="([^"]+)"><\/script>/g)].map((m) => m[1].split('/').pop());
        assert.deepEqual(srcs, ['vega.min.js', 'vega-lite.min.js', 'vega-embed.min.js', 'render.js', 'memmap.js']);
        assert.equal((html.match(/<script/g) ?? []).length, 6);
        assert.equal((html.match(/<script nonce="N0NCE"/g) ?? []).length, 6);
        assert.match(html, /default-src 'none'; script-src 'nonce-N0NCE' 'unsafe-eval'/);
        assert.doesNotMatch(html, /http:\/\//);
        assert.match(html, /<title>Memory map · &lt;35&gt;<\/title>/);
    });
    test('theme-aware: VS Code colour variables, redrawn on a theme change; bars reveal their line', () => {
        assert.match(html, /var\(--vscode-editor-foreground\)/);
        assert.match(html, /MutationObserver\(draw\)\.observe\(document\.body, \{ attributes: true, attributeFilter: \['class'\] \}\)/);
        assert.match(html, /window\.pyptoMemmap\.renderAll\(host, last, \{ maxWidth: document\.body\.clientWidth, onLineClick:/);
        assert.match(html, /postMessage\(\{ type: 'reveal', line: line \}\)/);
    });
    test('messages from the webview', () => {
        assert.ok(isRevealFromWebview({ type: 'reveal', line: 14 }));
        assert.ok(!isRevealFromWebview({ type: 'reveal', line: 0 }));
        assert.ok(!isRevealFromWebview({ type: 'reveal', line: 1.5 }));
        assert.ok(!isRevealFromWebview({ type: 'open', file: '/a.py' }));
        assert.ok(!isRevealFromWebview(null));
    });
    test('notes', () => {
        const counts = { strips: 1, bars: 5, overlaps: 1, findings: 1 };
        assert.match(memoryMapNote({ strips: [{}], counts, run: true, addressed: true }, '35.py'), /35.py · 5 placed values · 1 overlap in red · 1 finding of the last validation · byte addresses/);
        assert.match(memoryMapNote({ strips: [{}], counts: { ...counts, overlaps: 0, findings: 0 }, run: false }, '32.py'), /no overlap · not validated: placement only · before AllocateMemoryAddr/);
        assert.match(memoryMapNote({ strips: [], counts: { strips: 0, bars: 0, overlaps: 0, findings: 0 } }, '11.py'), /nothing placed yet/);
        assert.match(memoryMapNote({ strips: [], error: 'line 3: bad' }, 'x.py'), /does not parse: line 3: bad/);
    });
});

describe('memmap.js (the drawing, shared with pypto-lsp memmap --html)', () => {
    // the script is plain browser code: evaluate it against a stub window and build a strip's spec
    const sandbox: { window: Record<string, unknown> } = { window: {} };
    sandbox.window.pyptoPictures = {
        theme: () => ({ dark: false, fg: '#000', bg: '#fff', muted: '#888', grid: '#eee', bad: '#c00', warn: '#b80', accent: '#06c', font: 'sans' }),
    };
    vm.runInNewContext(fs.readFileSync(path.join(assets, 'memmap.js'), 'utf8'), sandbox);
    const mm = sandbox.window.pyptoMemmap as { stripSpec: (st: unknown, d: unknown, t: unknown, w?: number) => { layer: { name: string; data: { values: unknown[] } }[] } };
    const strip = {
        function: 'k', core: 'AIV', space: 'Vec', capacity: 245760, lines: [6, 20],
        bars: [
            { kind: 'tile', name: 'y', line: 13, end: 16, start: 32768, stop: 49152, nbytes: 16384, dtype: 'FP32', shape: [32, 128], memref: 'MemRef(m, 32768, 16384)', base: 'm' },
            { kind: 'tile', name: 't', line: 14, end: 15, start: 32768, stop: 49152, nbytes: 16384, dtype: 'FP32', shape: [32, 128], memref: 'MemRef(m, 32768, 16384)', base: 'm' },
            { kind: 'pipe', name: 'ring', line: 8, end: 20, start: 0, stop: 2048, nbytes: 2048, slots: 2, slot_size: 1024, direction: 'c2v', placed: true },
        ],
        overlaps: [{ kind: 'overwrite', name: 'y', line: 13, end: 16, other_name: 't', other_line: 14, writers: [{ name: 't', line: 14 }], via: null, space: 'Vec', start: 32768, stop: 49152, x0: 14, x1: 16 }],
        findings: [{ kind: 'overwrite', line: 16, name: 'y', other_line: 15, other_name: 't', space: 'Vec', core: 'AIV0', range: [32768, 49152], message: 'm' }],
    };
    test('a layer per kind: the value bars, the pipe ring over the whole kernel, the red overlap, the finding', () => {
        // (through JSON: the sandbox's arrays are of another realm)
        const spec = JSON.parse(JSON.stringify(mm.stripSpec(strip, { addressed: true }, (sandbox.window.pyptoPictures as { theme: () => unknown }).theme(), 1200))) as {
            layer: { name: string; data: { values: unknown[] } }[];
        };
        const byName = Object.fromEntries(spec.layer.map((l) => [l.name, l.data.values]));
        assert.equal(byName.bars.length, 2);
        assert.deepEqual(byName.pipes.map((r) => [(r as { x: number }).x, (r as { x2: number }).x2]), [[6, 21]]);
        assert.deepEqual(byName.overlaps.map((r) => [(r as { x: number }).x, (r as { x2: number }).x2, (r as { y: number }).y]), [[14, 17, 32768]]);
        assert.equal(byName.findings.length, 1);
        assert.equal(byName.pops.length, 0);
    });
});

describe('package.json: the memory map', () => {
    test('contributed, in the palette and the editor title for a dump', () => {
        const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
        assert.ok(ids.includes(SHOW_MEMORY_MAP));
        const palette = pkg.contributes.menus.commandPalette.filter((m: { command: string }) => m.command === SHOW_MEMORY_MAP);
        assert.deepEqual(palette.map((m: { when: string }) => m.when), ['pypto-lsp.activeIsDump']);
        const title = pkg.contributes.menus['editor/title'].filter((m: { command: string }) => m.command === SHOW_MEMORY_MAP);
        assert.deepEqual(title.map((m: { when: string }) => m.when), ['pypto-lsp.activeIsDump']);
    });
    test('memmap.js is copied into the packaged webview folder', () => {
        assert.match(fs.readFileSync(path.join(root, 'esbuild.mjs'), 'utf8'), /'render\.js', 'memmap\.js'/);
    });
});
