/* pypto-lsp task graph: the runtime's tasks of one run as a Vega-Lite spec.
 * Layers from the top (a task sits one layer below the deepest task it waits for), program order
 * left to right inside a layer; grey arrows are the runtime's dependencies, red dashed segments
 * the racing pairs (no path of dependencies between them). Data: pypto_lsp/validate/taskgraph.py.
 * Shared by `pypto-lsp validate --report` and the VS Code webview.
 * Needs vega, vega-lite, vega-embed and render.js (window.pyptoPictures: theme) first. */
(function (root) {
    'use strict';

    var UNIT_X = 180, UNIT_Y = 84, LABELS_UP_TO = 200;

    function config(t) {
        return {
            background: null,
            font: t.font,
            view: { stroke: null },
            title: { color: t.fg, anchor: 'start', subtitleColor: t.muted },
            text: { color: t.fg },
        };
    }

    /* Where the arrowhead of a segment sits (3/4 of the way) and its angle (degrees clockwise from up, on screen). */
    function arrows(segs) {
        return segs.map(function (s) {
            var dx = (s.x2 - s.x) * UNIT_X, dy = (s.y2 - s.y) * UNIT_Y;
            return { x: s.x + 0.72 * (s.x2 - s.x), y: s.y + 0.72 * (s.y2 - s.y), angle: Math.atan2(dx, -dy) * 180 / Math.PI,
                from: s.from, to: s.to };
        });
    }

    function graphSpec(g, t, maxWidth) {
        var w = Math.max(1, g.width), h = Math.max(1, g.layers);
        var byId = {};
        g.nodes.forEach(function (n) { byId[n.id] = n; });
        function name(i) { var n = byId[i]; return n ? n.label : String(i); }
        var edges = g.edges.map(function (e) { return Object.assign({ text: name(e.from) + ' → ' + name(e.to) }, e); });
        var races = g.races.map(function (r) {
            return Object.assign({ text: r.kind + ' race: ' + name(r.from) + ' and ' + name(r.to) + ' (no dependency orders them)',
                mx: (r.x + r.x2) / 2, my: (r.y + r.y2) / 2 }, r);
        });
        var width = Math.max(260, Math.min(UNIT_X * w, (maxWidth || 1e9) - 60));
        var x = { field: 'x', type: 'quantitative', axis: null, scale: { domain: [-(w - 1) / 2 - 0.6, (w - 1) / 2 + 0.6], nice: false, zero: false } };
        var y = { field: 'y', type: 'quantitative', axis: null, scale: { domain: [-0.5, h - 0.5], nice: false, zero: false, reverse: true } };
        var x2 = { field: 'x2' }, y2 = { field: 'y2' };
        var layers = [
            { name: 'edges', data: { values: edges }, mark: { type: 'rule', color: t.muted, strokeWidth: 1.5 },
                encoding: { x: x, y: y, x2: x2, y2: y2, tooltip: [{ field: 'text', title: 'waits for' }] } },
            { name: 'arrows', data: { values: arrows(g.edges) }, mark: { type: 'point', shape: 'triangle-up', filled: true, size: 60, color: t.muted },
                encoding: { x: x, y: y, angle: { field: 'angle', type: 'quantitative', scale: null } } },
            { name: 'races', data: { values: races }, mark: { type: 'rule', color: t.bad, strokeWidth: 2.5, strokeDash: [6, 4] },
                encoding: { x: x, y: y, x2: x2, y2: y2, tooltip: [{ field: 'text', title: 'race' }] } },
            { name: 'race_kinds', data: { values: races }, mark: { type: 'text', color: t.bad, fontWeight: 'bold', dx: 8, align: 'left' },
                encoding: { x: { field: 'mx', type: 'quantitative', scale: x.scale, axis: null },
                    y: { field: 'my', type: 'quantitative', scale: y.scale, axis: null }, text: { field: 'kind' } } },
            { name: 'nodes', data: { values: g.nodes },
                mark: { type: 'point', shape: 'circle', filled: true, size: 220, cursor: 'pointer', strokeWidth: 2 },
                encoding: { x: x, y: y,
                    color: { condition: { test: 'datum.racing', value: t.bad }, value: t.accent },
                    stroke: { value: t.fg },
                    tooltip: [{ field: 'callee', title: 'task' }, { field: 'line', title: 'line' }, { field: 'id', title: 'task #' },
                        { field: 'layer', title: 'layer' }] } },
        ];
        if (g.nodes.length <= LABELS_UP_TO) {
            layers.push({ name: 'labels', data: { values: g.nodes }, mark: { type: 'text', dy: 18, baseline: 'top', limit: UNIT_X - 12 },
                encoding: { x: x, y: y, text: { field: 'label' } } });
        }
        var c = g.counts || { tasks: g.nodes.length, edges: g.edges.length, races: g.races.length };
        var sub = c.tasks + ' task(s), ' + c.edges + ' dependenc' + (c.edges === 1 ? 'y' : 'ies') + ', ' +
            (c.races ? c.races + ' racing pair(s) in red' : 'no race') + (g.truncated ? ' · the first 500 tasks only' : '');
        var title = 'task graph' + (g.file ? ' · ' + String(g.file).split(/[\\/]/).pop() : '');
        return {
            $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
            title: { text: title, subtitle: sub },
            width: width, height: UNIT_Y * h, config: config(t), layer: layers,
        };
    }

    /* Draw the graph `g` into `host` (a div.task-graph inside it); resolves when drawn and sets data-rendered
     * on host. options: maxWidth (px), onLineClick(line) (a task clicked). */
    function renderAll(host, g, options) {
        options = options || {};
        var t = root.pyptoPictures.theme(), t0 = performance.now();
        host.removeAttribute('data-rendered');
        var d = document.createElement('div');
        d.className = 'task-graph';
        d.setAttribute('data-nodes', String(g.nodes.length));
        d.setAttribute('data-edges', String(g.edges.length));
        d.setAttribute('data-races', String(g.races.length));
        host.appendChild(d);
        if (!g.nodes.length) {
            var p = document.createElement('p');
            p.className = 'task-graph-empty';
            p.textContent = g.unavailable ? 'No task graph: ' + g.unavailable : 'No runtime task in this run.';
            d.appendChild(p);
            host.setAttribute('data-rendered', 'ok');
            return Promise.resolve(null);
        }
        var opts = { renderer: 'svg', actions: false, tooltip: { theme: t.dark ? 'dark' : 'light' } };
        return root.vegaEmbed(d, graphSpec(g, t, options.maxWidth), opts).then(function (res) {
            if (options.onLineClick) {
                res.view.addEventListener('click', function (_ev, item) {
                    if (item && item.datum && typeof item.datum.line === 'number' && item.datum.callee) { options.onLineClick(item.datum.line); }
                });
            }
            host.setAttribute('data-render-ms', String(Math.round(performance.now() - t0)));
            host.setAttribute('data-rendered', 'ok');
            return res.view;
        }, function (err) { host.setAttribute('data-rendered', 'error'); host.appendChild(document.createTextNode(String(err))); throw err; });
    }

    root.pyptoTaskGraph = { graphSpec: graphSpec, arrows: arrows, renderAll: renderAll };
})(typeof window !== 'undefined' ? window : this);
