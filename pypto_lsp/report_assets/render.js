/* pypto-lsp pictures: the pass chart and the error map as Vega-Lite specs.
 * Shared by report.html (inlined by `pypto-lsp validate --report`) and the VS Code webviews.
 * Needs vega, vega-lite and vega-embed loaded first (window.vegaEmbed). Plain browser script. */
(function (root) {
    'use strict';

    function cssVar(name, fallback) {
        var v = getComputedStyle(document.body).getPropertyValue(name);
        return v && v.trim() ? v.trim() : fallback;
    }

    /* Colours from the page: VS Code's theme variables in a webview, the report's own otherwise. */
    function theme() {
        var dark = document.body.classList.contains('vscode-dark') || document.body.classList.contains('vscode-high-contrast') ||
            (!document.body.classList.contains('vscode-light') && window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches);
        return {
            dark: dark,
            fg: cssVar('--vscode-editor-foreground', cssVar('--fg', dark ? '#d4d4d4' : '#1f2328')),
            bg: cssVar('--vscode-editor-background', cssVar('--bg', dark ? '#1e1e1e' : '#ffffff')),
            muted: cssVar('--vscode-descriptionForeground', cssVar('--muted', dark ? '#8b8b8b' : '#6e7781')),
            grid: dark ? '#3c3c3c' : '#e4e4e4',
            bad: cssVar('--vscode-errorForeground', dark ? '#f48771' : '#cf222e'),
            warn: cssVar('--vscode-editorWarning-foreground', dark ? '#cca700' : '#bf8700'),
            accent: cssVar('--vscode-focusBorder', dark ? '#3794ff' : '#0969da'),
            font: cssVar('--vscode-font-family', 'system-ui, sans-serif'),
        };
    }

    function config(t) {
        return {
            background: null,
            font: t.font,
            view: { stroke: null },
            axis: { labelColor: t.fg, titleColor: t.fg, gridColor: t.grid, domainColor: t.muted, tickColor: t.muted },
            legend: { labelColor: t.fg, titleColor: t.fg },
            title: { color: t.fg, anchor: 'start' },
            text: { color: t.fg },
        };
    }

    function fmt(x) {
        if (x === null || x === undefined) { return 'n/a'; }
        if (x === 0) { return '0'; }
        return Math.abs(x) >= 1e-3 && Math.abs(x) < 1e5 ? Number(x.toPrecision(6)).toString() : x.toExponential(3);
    }

    /* ------------------------------------------------------------------ pass chart */

    function passChartSpec(data, t, maxWidth) {
        var pts = data.points.filter(function (p) { return p.max_abs_diff !== null; });
        var positive = pts.map(function (p) { return p.max_abs_diff; }).filter(function (x) { return x > 0; });
        var lo = positive.length ? Math.min.apply(null, positive) : 1e-8;
        if (data.atol) { lo = Math.min(lo, data.atol); }
        var floor = lo / 10;
        var hi = Math.max(data.atol || 1, positive.length ? Math.max.apply(null, positive) : 1);
        var top = hi * 10;
        var order = data.passes.map(function (p) { return p.label; });
        var rows = pts.map(function (p) {
            return {
                label: p.label, file: p.file, index: p.index, tensor: p.tensor, status: p.status,
                state: p.unchanged ? 'IR unchanged' : (p.passed ? 'pass' : 'fail'),
                y: Math.max(p.max_abs_diff, floor), max_abs_diff: fmt(p.max_abs_diff),
            };
        });
        var errors = data.passes.filter(function (p) { return p.status === 'error'; }).map(function (p) {
            return { label: p.label, file: p.file, index: p.index, y: top, kind: p.error ? p.error.kind : 'error',
                message: p.error ? p.error.message : '', line: p.error && p.error.line ? p.error.line : '' };
        });
        var memory = data.passes.filter(function (p) { return p.memory && p.memory.hazards > 0; }).map(function (p) {
            return { label: p.label, file: p.file, index: p.index, y: top / 3, hazards: p.memory.hazards, first: p.memory.first || '' };
        });
        var unchanged = data.passes.filter(function (p) { return p.unchanged; }).map(function (p) {
            return { label: p.label, file: p.file, index: p.index };
        });
        var x = { field: 'label', type: 'ordinal', sort: order, scale: { domain: order }, title: 'pass',
            axis: { labelAngle: -40, labelLimit: 180, labelOverlap: false } };
        var y = { field: 'y', type: 'quantitative', scale: { type: 'log', domain: [floor, top] }, title: 'max |Δ| (log)' };
        var layers = [
            { name: 'unchanged', data: { values: unchanged }, mark: { type: 'bar', color: t.muted, opacity: 0.18 },
                encoding: { x: x, tooltip: [{ field: 'label', title: 'pass' }, { value: 'IR unchanged from the pass before', title: 'note' }] } },
            { name: 'tolerance', data: { values: data.atol ? [{ y: data.atol }] : [] },
                mark: { type: 'rule', color: t.bad, strokeDash: [6, 4] }, encoding: { y: y } },
            { name: 'tolerance_label', data: { values: data.atol ? [{ y: data.atol, text: 'atol ' + fmt(data.atol) }] : [] },
                mark: { type: 'text', align: 'left', dx: 4, dy: -6, color: t.bad }, encoding: { y: y, x: { value: 0 }, text: { field: 'text' } } },
            { name: 'first_divergent', data: { values: data.passes.filter(function (p) { return p.first_divergent; }) },
                mark: { type: 'rule', color: t.bad, strokeWidth: 2 }, encoding: { x: x,
                    tooltip: [{ field: 'label', title: 'first divergent pass' }] } },
            { name: 'lines', data: { values: rows }, mark: { type: 'line', opacity: 0.6 },
                encoding: { x: x, y: y, color: { field: 'tensor', type: 'nominal', title: 'output' } } },
            { name: 'passes', data: { values: rows }, params: [{ name: 'pick', select: { type: 'point', on: 'click', fields: ['file'] } }],
                mark: { type: 'point', filled: true, size: 70, cursor: 'pointer' },
                encoding: {
                    x: x, y: y,
                    color: { condition: { test: "datum.state === 'IR unchanged'", value: t.muted }, field: 'tensor', type: 'nominal', title: 'output' },
                    shape: { field: 'state', type: 'nominal', title: 'verdict', scale: { domain: ['pass', 'fail', 'IR unchanged'], range: ['circle', 'square', 'circle'] } },
                    tooltip: [{ field: 'label', title: 'pass' }, { field: 'tensor', title: 'output' }, { field: 'max_abs_diff', title: 'max |Δ|' },
                        { field: 'state', title: 'verdict' }, { field: 'file', title: 'file' }],
                } },
            { name: 'errors', data: { values: errors }, mark: { type: 'point', shape: 'cross', filled: true, size: 160, color: t.bad, cursor: 'pointer' },
                encoding: { x: x, y: y, tooltip: [{ field: 'label', title: 'pass' }, { field: 'kind', title: 'error' }, { field: 'message', title: 'message' },
                    { field: 'line', title: 'line' }, { field: 'file', title: 'file' }] } },
            { name: 'memory', data: { values: memory }, mark: { type: 'point', shape: 'diamond', filled: true, size: 140, color: t.warn, cursor: 'pointer' },
                encoding: { x: x, y: y, tooltip: [{ field: 'label', title: 'pass' }, { field: 'hazards', title: 'memory hazards' }, { field: 'first', title: 'first' }] } },
        ];
        var width = Math.max(360, Math.min(1400, 28 * order.length, (maxWidth || 1e9) - 220));
        return {
            $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
            title: { text: 'max |Δ| per pass', subtitle: subtitle(data) },
            width: width, height: 260, config: config(t), layer: layers,
        };
    }

    function subtitle(data) {
        var c = data.counts || {};
        var s = (c.pass || 0) + ' pass, ' + (c.fail || 0) + ' fail, ' + (c.error || 0) + ' error';
        var fd = data.passes.filter(function (p) { return p.first_divergent; })[0];
        return s + (fd ? ' · first divergent: ' + fd.label : ' · no divergent pass');
    }

    /* ------------------------------------------------------------------ error map */

    /* Cells as rows, split by the tolerance: [within, over]. Numbers stay numbers (the tooltip formats them). */
    function mapRows(m) {
        var c = m.cells, n = c.d.length, ok = [], bad = [], labels = {}, i;
        var positive = Infinity;
        for (i = 0; i < m.stores.length; i++) { labels[m.stores[i].id] = m.stores[i].op + ' at line ' + m.stores[i].line; }
        for (i = 0; i < n; i++) { if (c.d[i] !== null && c.d[i] > 0 && c.d[i] < positive) { positive = c.d[i]; } }
        var floor = isFinite(positive) ? positive / 2 : 1e-12;
        var br = m.bin[0], bc = m.bin[1], R = m.view[0], C = m.view[1];
        for (i = 0; i < n; i++) {
            var row = {
                r: c.r[i], r2: Math.min(c.r[i] + br, R), c: c.c[i], c2: Math.min(c.c[i] + bc, C),
                v: c.d[i] === null ? Number.MAX_VALUE : Math.max(c.d[i], floor),
                i: c.i[i], j: c.j[i], a: c.a[i], e: c.e[i], d: c.d[i],
                store: labels[c.s[i]] || 'not written by a recorded store',
            };
            (c.bad[i] ? bad : ok).push(row);
        }
        return [ok, bad];
    }

    function errorMapSpec(m, t, maxWidth) {
        var split = mapRows(m);
        var R = m.view[0], C = m.view[1], nr = m.grid[0], nc = m.grid[1];
        var width = Math.max(240, Math.min(900, nc * 8, (maxWidth || 1e9) - 200));
        var height = Math.max(60, Math.min(640, Math.round(width * nr / nc)));
        var x = { field: 'c', type: 'quantitative', scale: { domain: [0, C], nice: false, zero: false }, title: 'column' };
        var x2 = { field: 'c2' };
        var y = { field: 'r', type: 'quantitative', scale: { domain: [0, R], nice: false, zero: false, reverse: true },
            title: m.shape.length > 2 ? 'row (leading dims merged)' : 'row' };
        var y2 = { field: 'r2' };
        var tip = [{ field: 'i', title: 'row' }, { field: 'j', title: 'column' }, { field: 'a', title: 'this pass', format: '.6~g' },
            { field: 'e', title: 'golden', format: '.6~g' }, { field: 'd', title: '|Δ|', format: '.4~e' }, { field: 'store', title: 'written by' }];
        if (m.bin[0] * m.bin[1] > 1) { tip.push({ value: m.bin[0] + '×' + m.bin[1] + ' elements per cell, the worst shown', title: 'cell' }); }
        var tiles = m.tiles.map(function (tl) {
            var st = m.stores[tl.store];
            return { r: tl.r0, r2: tl.r1, c: tl.c0, c2: tl.c1, lane: tl.lanes > 1 ? 'lane ' + tl.lane : 'no split',
                tile: '[' + tl.r0 + ':' + tl.r1 + ', ' + tl.c0 + ':' + tl.c1 + ']', store: st ? st.op + ' at line ' + st.line : '',
                where: (tl.role ? tl.role + ' ' : '') + (tl.lanes > 1 ? 'lane ' + tl.lane + '/' + tl.lanes : '') + (tl.block ? ' block ' + tl.block : '') };
        });
        var lanes = m.lanes.map(function (l) {
            return { r: l.r0, r2: l.r1, c: l.c0, c2: l.c1, text: (l.role ? l.role.toUpperCase() + ' ' : '') + 'lane ' + l.lane };
        });
        var scheme = t.dark ? 'darkblue' : 'blues';
        var layers = [
            { name: 'cells_ok', data: { values: split[0] }, mark: { type: 'rect' },
                encoding: { x: x, x2: x2, y: y, y2: y2, tooltip: tip,
                    color: { field: 'v', type: 'quantitative', scale: { type: 'log', scheme: scheme }, title: '|Δ| within tolerance' } } },
            { name: 'cells_bad', data: { values: split[1] }, mark: { type: 'rect' },
                encoding: { x: x, x2: x2, y: y, y2: y2, tooltip: tip,
                    color: { field: 'v', type: 'quantitative', scale: { type: 'log', scheme: 'orangered' }, title: '|Δ| over tolerance' } } },
            { name: 'tiles', data: { values: tiles }, mark: { type: 'rect', fillOpacity: 0, stroke: t.fg, strokeWidth: 1, strokeOpacity: 0.8 },
                encoding: { x: x, x2: x2, y: y, y2: y2,
                    tooltip: [{ field: 'tile', title: 'tile' }, { field: 'store', title: 'store' }, { field: 'where', title: 'ran on' }] } },
            { name: 'lanes', data: { values: lanes }, mark: { type: 'rect', fillOpacity: 0, stroke: t.accent, strokeWidth: 3, strokeDash: [8, 4] },
                encoding: { x: x, x2: x2, y: y, y2: y2, tooltip: [{ field: 'text', title: 'lane half' }] } },
            { name: 'lane_labels', data: { values: lanes }, mark: { type: 'text', align: 'left', baseline: 'top', dx: 4, dy: 4, color: t.accent, fontWeight: 'bold' },
                encoding: { x: x, y: y, text: { field: 'text' } } },
        ];
        return {
            $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
            title: { text: "'" + m.tensor + "' |Δ| against the golden" + (m.file ? ' · ' + m.file.split(/[\\/]/).pop() : ''),
                subtitle: m.bad_elements + ' of ' + m.elements + ' elements over atol ' + fmt(m.atol) + ' + rtol ' + fmt(m.rtol) +
                    ' × |golden| · max |Δ| ' + fmt(m.max_abs_diff) + ' · shape [' + m.shape.join(', ') + ']' +
                    (m.bin[0] * m.bin[1] > 1 ? ' · cells of ' + m.bin[0] + '×' + m.bin[1] : '') +
                    ' · ' + m.tiles.length + ' tile(s) from ' + m.stores.length + ' store(s)' },
            width: width, height: height, config: config(t), layer: layers,
            resolve: { scale: { color: 'independent' } },
        };
    }

    /* SVG (inspectable, testable) up to SVG_MAX_CELLS cells; a bigger map draws on a canvas (several times faster). */
    var SVG_MAX_CELLS = 8192;

    function embed(el, spec, onClick, renderer) {
        var opts = { renderer: renderer || 'svg', actions: false, tooltip: { theme: theme().dark ? 'dark' : 'light' } };
        return root.vegaEmbed(el, spec, opts).then(function (res) {
            if (onClick) {
                res.view.addEventListener('click', function (_ev, item) {
                    if (item && item.datum && item.datum.file) { onClick(item.datum); }
                });
            }
            return res.view;
        });
    }

    /* Draw everything that `data` holds into `host`: {chart?, maps?: [...]}. Resolves when drawn;
     * sets data-rendered on host (tests and the e2e wait for it). options: onPassClick(datum),
     * maxWidth (px: the charts shrink to fit a narrow webview). */
    function renderAll(host, data, options) {
        options = options || {};
        var t = theme(), jobs = [], t0 = performance.now();
        host.removeAttribute('data-rendered');
        if (data.chart) {
            var c = host.querySelector('.pass-chart') || host.appendChild(document.createElement('div'));
            c.className = 'pass-chart';
            c.setAttribute('data-passes', String(data.chart.passes.length));
            jobs.push(embed(c, passChartSpec(data.chart, t, options.maxWidth), options.onPassClick));
        }
        (data.maps || []).forEach(function (m) {
            var d = document.createElement('div');
            d.className = 'error-map';
            d.setAttribute('data-tensor', m.tensor);
            d.setAttribute('data-tiles', String(m.tiles.length));
            host.appendChild(d);
            d.setAttribute('data-cells', String(m.cells.d.length));
            jobs.push(embed(d, errorMapSpec(m, t, options.maxWidth), null, m.cells.d.length > SVG_MAX_CELLS ? 'canvas' : 'svg'));
        });
        return Promise.all(jobs).then(function () {
            host.setAttribute('data-render-ms', String(Math.round(performance.now() - t0)));
            host.setAttribute('data-rendered', 'ok');
        },
            function (err) { host.setAttribute('data-rendered', 'error'); host.appendChild(document.createTextNode(String(err))); throw err; });
    }

    root.pyptoPictures = { passChartSpec: passChartSpec, errorMapSpec: errorMapSpec, renderAll: renderAll, theme: theme, fmt: fmt };
})(typeof window !== 'undefined' ? window : this);
