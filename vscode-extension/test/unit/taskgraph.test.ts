/** The task graph webview page, its note, taskgraph.js's spec and the contribution (src/core/taskgraph.ts, package.json). */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vm from 'node:vm';
import { describe, test } from 'node:test';
import { SHOW_TASK_GRAPH, TASKGRAPH_SCRIPTS, taskGraphNote, taskGraphWebviewHtml } from '../../src/core/taskgraph';

const root = path.resolve(__dirname, '..', '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const assets = path.resolve(root, '..', 'pypto_lsp', 'report_assets');

describe('task graph webview', () => {
    const html = taskGraphWebviewHtml({
        title: 'Task graph · <38>',
        scriptUris: TASKGRAPH_SCRIPTS.map((f) => `https://file+.vscode-resource/ext/dist/webview/${f}`),
        cspSource: 'https://file+.vscode-resource',
        nonce: 'N0NCE',
    });
    test('loads the pictures bundle then taskgraph.js with the nonce; a task reveals its line', () => {
        const srcs = [...html.matchAll(/<script nonce="N0NCE" src="([^"]+)"><\/script>/g)].map((m) => m[1].split('/').pop());
        assert.deepEqual(srcs, ['vega.min.js', 'vega-lite.min.js', 'vega-embed.min.js', 'render.js', 'taskgraph.js']);
        assert.match(html, /<title>Task graph · &lt;38&gt;<\/title>/);
        assert.match(html, /window\.pyptoTaskGraph\.renderAll\(host, last, \{ maxWidth: document\.body\.clientWidth, onLineClick:/);
        assert.match(html, /postMessage\(\{ type: 'reveal', line: line \}\)/);
    });
    test('notes', () => {
        const d = { nodes: [{}, {}], edges: [], races: [{ kind: 'RAW' }], counts: { tasks: 2, edges: 0, races: 1 } };
        assert.equal(taskGraphNote(d, '38.py'), '38.py · 2 tasks · 0 dependencies · 1 racing pair (RAW) in red. Click a task to go to its call.');
        assert.match(taskGraphNote({ ...d, stale: true }, '38.py'), /before your edits/);
        assert.match(taskGraphNote({ nodes: [], edges: [], races: [], unavailable: 'not validated yet' }, '38.py'), /no task graph \(not validated yet\)/);
    });
});

describe('taskgraph.js (the drawing, shared with validate --report)', () => {
    const sandbox: { window: Record<string, unknown> } = { window: {} };
    sandbox.window.pyptoPictures = {
        theme: () => ({ dark: false, fg: '#000', bg: '#fff', muted: '#888', grid: '#eee', bad: '#c00', warn: '#b80', accent: '#06c', font: 'sans' }),
    };
    vm.runInNewContext(fs.readFileSync(path.join(assets, 'taskgraph.js'), 'utf8'), sandbox);
    const tg = sandbox.window.pyptoTaskGraph as { graphSpec: (g: unknown, t: unknown, w?: number) => unknown };
    // the layout of tests/unit/test_taskgraph.py's producer / consumer with a no_dep read
    const g = {
        nodes: [
            { id: 0, line: 21, callee: 'k_scale', x: -0.5, y: 0, layer: 0, label: 'k_scale · L21', racing: true },
            { id: 1, line: 22, callee: 'k_add1', x: 0.5, y: 0, layer: 0, label: 'k_add1 · L22', racing: true },
            { id: 2, line: 23, callee: 'k_add1', x: 0, y: 1, layer: 1, label: 'k_add1 · L23', racing: false },
        ],
        edges: [{ from: 1, to: 2, x: 0.5, y: 0, x2: 0, y2: 1 }],
        races: [{ from: 0, to: 1, kind: 'RAW', x: -0.5, y: 0, x2: 0.5, y2: 0 }],
        layers: 2, width: 2, truncated: false, counts: { tasks: 3, edges: 1, races: 1 },
    };
    test('a layer per part: grey dependencies with arrowheads, red dashed races, the tasks', () => {
        const spec = JSON.parse(JSON.stringify(tg.graphSpec(g, (sandbox.window.pyptoPictures as { theme: () => unknown }).theme(), 1200))) as {
            layer: { name: string; mark: { color?: string; strokeDash?: number[] }; data: { values: Record<string, unknown>[] } }[];
            height: number;
        };
        const by = Object.fromEntries(spec.layer.map((l) => [l.name, l]));
        assert.deepEqual(by.edges.data.values.map((e) => [e.from, e.to]), [[1, 2]]);
        assert.equal(by.edges.mark.color, '#888');
        assert.deepEqual(by.races.data.values.map((r) => [r.from, r.to, r.kind]), [[0, 1, 'RAW']]);
        assert.equal(by.races.mark.color, '#c00');
        assert.deepEqual(by.races.mark.strokeDash, [6, 4]);
        assert.equal(by.nodes.data.values.length, 3);
        assert.deepEqual(by.labels.data.values.map((n) => n.label), ['k_scale · L21', 'k_add1 · L22', 'k_add1 · L23']);
        // the arrow from (0.5, 0) down-left to (0, 1) points down and a little left: between 180 and 270 degrees clockwise from up
        const a = by.arrows.data.values[0].angle as number;
        assert.ok(a < -90 && a > -180, String(a));
        assert.equal(spec.height, 2 * 84);
    });
});

describe('package.json: the task graph', () => {
    test('contributed and in the palette for a dump', () => {
        const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
        assert.ok(ids.includes(SHOW_TASK_GRAPH));
        const palette = pkg.contributes.menus.commandPalette.filter((m: { command: string }) => m.command === SHOW_TASK_GRAPH);
        assert.deepEqual(palette.map((m: { when: string }) => m.when), ['pypto-lsp.activeIsDump']);
    });
    test('taskgraph.js is copied into the packaged webview folder', () => {
        assert.match(fs.readFileSync(path.join(root, 'esbuild.mjs'), 'utf8'), /'memmap\.js', 'taskgraph\.js'/);
    });
});
