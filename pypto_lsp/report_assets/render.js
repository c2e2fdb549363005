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
            title: { color: t.fg, subtitleColor: t.muted, anchor: 'start' },
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
    /* The cell field is ONE raster image (a pixel per cell, coloured here from the same Vega schemes
     * and log scales the legends show); the tile grid, the lane halves and the legends stay vector
     * marks, few of them. Hovering anywhere on the map looks the cell up by the pointer's position. */

    var TYPED = { float32: Float32Array, float64: Float64Array, int32: Int32Array, int16: Int16Array, uint8: Uint8Array };

    function b64bytes(s) {
        if (typeof Uint8Array.fromBase64 === 'function') { return Uint8Array.fromBase64(s); }
        var bin = atob(s), n = bin.length, out = new Uint8Array(n);
        for (var i = 0; i < n; i++) { out[i] = bin.charCodeAt(i); }
        return out;
    }

    /* The map's cells as typed arrays (see decode_cells in errormap.py), decoded once per map object. */
    var decoded = typeof WeakMap === 'function' ? new WeakMap() : null;
    function mapCells(m) {
        var hit = decoded && decoded.get(m);
        if (hit) { return hit; }
        var c = m.cells, out = { n: c.count };
        Object.keys(c.dtypes).forEach(function (name) {
            var T = TYPED[c.dtypes[name]], b = b64bytes(c[name] || '');
            out[name] = new T(b.buffer, b.byteOffset, b.byteLength / T.BYTES_PER_ELEMENT);
        });
        var n = out.n, a = out.a, e = out.e, d = new Float64Array(n), i;
        for (i = 0; i < n; i++) { d[i] = a[i] === e[i] ? 0 : Math.abs(a[i] - e[i]); }  // NaN stays NaN
        out.d = d;
        if (decoded) { decoded.set(m, out); }
        return out;
    }

    /* 256 RGBA colours of a Vega scheme (t in [0, 1]), read back from a canvas so any CSS colour form parses. */
    function lut(name) {
        var interp = root.vega.scheme(name), cv = document.createElement('canvas'), g, k;
        cv.width = 256; cv.height = 1;
        g = cv.getContext('2d');
        for (k = 0; k < 256; k++) {
            g.fillStyle = typeof interp === 'function' ? interp(k / 255) : interp[Math.round(k / 255 * (interp.length - 1))];
            g.fillRect(k, 0, 1, 1);
        }
        return g.getImageData(0, 0, 256, 1).data;
    }

    /* Log domains of the two colour scales (within / over the tolerance); zeros show at the floor. */
    function domains(cells) {
        var n = cells.n, d = cells.d, bad = cells.bad, positive = Infinity, i, x;
        var dom = [[Infinity, -Infinity], [Infinity, -Infinity]];
        for (i = 0; i < n; i++) { x = d[i]; if (x > 0 && x < positive) { positive = x; } }
        var floor = isFinite(positive) ? positive / 2 : 1e-12;
        for (i = 0; i < n; i++) {
            x = d[i];
            if (x !== x || x === Infinity) { continue; }  // NaN and Inf take the scale's top colour
            x = Math.max(x, floor);
            var k = bad[i] ? 1 : 0;
            if (x < dom[k][0]) { dom[k][0] = x; }
            if (x > dom[k][1]) { dom[k][1] = x; }
        }
        dom.forEach(function (r) {
            if (!isFinite(r[0])) { r[0] = floor; r[1] = floor * 10; }
            if (r[1] < r[0] * 10) {  // less than a decade: one decade around its middle (a flat colour, readable labels)
                var mid = Math.sqrt(r[0] * r[1]);
                r[0] = mid / Math.sqrt(10); r[1] = mid * Math.sqrt(10);
            }
        });
        return { floor: floor, ok: dom[0], bad: dom[1] };
    }

    /* The raster: a pixel per cell, or per block of cells when the grid is finer than the drawn pixels
     * (then each pixel is the block's worst cell: over tolerance first, then the largest |Δ|). */
    function raster(m, cells, doms, schemes, px) {
        var nr = m.grid[0], nc = m.grid[1];
        var fy = Math.max(1, Math.ceil(nr / px[1])), fx = Math.max(1, Math.ceil(nc / px[0]));
        var h = Math.ceil(nr / fy), w = Math.ceil(nc / fx);
        var cv = document.createElement('canvas');
        cv.width = w; cv.height = h;
        var g = cv.getContext('2d'), img = g.createImageData(w, h), out = img.data;
        var luts = [lut(schemes[0]), lut(schemes[1])];
        var lo = [Math.log(doms.ok[0]), Math.log(doms.bad[0])], span = [Math.log(doms.ok[1]) - lo[0], Math.log(doms.bad[1]) - lo[1]];
        var d = cells.d, bad = cells.bad, floor = doms.floor, bestBad, bestD, y, x, r, c, k, v, r1, c1;
        for (y = 0; y < h; y++) {
            for (x = 0; x < w; x++) {
                if (fx === 1 && fy === 1) {
                    k = y * nc + x; bestBad = bad[k]; bestD = d[k];
                    if (bestD !== bestD) { bestD = Infinity; }
                } else {
                    bestBad = -1; bestD = -1; r1 = Math.min(nr, (y + 1) * fy); c1 = Math.min(nc, (x + 1) * fx);
                    for (r = y * fy; r < r1; r++) {
                        for (c = x * fx; c < c1; c++) {
                            k = r * nc + c; v = d[k];
                            if (v !== v) { v = Infinity; }
                            if (bad[k] > bestBad || (bad[k] === bestBad && v > bestD)) { bestBad = bad[k]; bestD = v; }
                        }
                    }
                }
                var s = bestBad > 0 ? 1 : 0, t = bestD === Infinity ? 1 : (Math.log(Math.max(bestD, floor)) - lo[s]) / span[s];
                var li = Math.max(0, Math.min(255, Math.round(t * 255))) * 4, o = (y * w + x) * 4, L = luts[s];
                out[o] = L[li]; out[o + 1] = L[li + 1]; out[o + 2] = L[li + 2]; out[o + 3] = 255;
            }
        }
        g.putImageData(img, 0, 0);
        var url = cv.toDataURL('image/png');
        return { url: url, w: w, h: h, fx: fx, fy: fy, rows: h * fy * m.bin[0], cols: w * fx * m.bin[1] };
    }

    function mapSize(m, maxWidth) {
        var nr = m.grid[0], nc = m.grid[1];
        var width = Math.max(240, Math.min(1000, nc * 8, (maxWidth || 1e9) - 200));
        var height = Math.max(60, Math.min(640, Math.round(width * nr / nc)));
        return [width, height];
    }

    function storeLabel(m, s) {
        var st = s >= 0 ? m.stores[s] : null;
        return st ? st.op + ' at line ' + st.line : 'not written by a recorded store';
    }

    /* What the tooltip says of the element under the pointer (row, col in the 2-D view). */
    function cellTip(m, cells, row, col) {
        var br = m.bin[0], bc = m.bin[1], nc = m.grid[1], C = m.view[1];
        var k = Math.floor(row / br) * nc + Math.floor(col / bc);
        if (k < 0 || k >= cells.n) { return null; }
        var flat = cells.k[k], i = Math.floor(flat / C), j = flat - i * C, s = cells.s[k], tile = null, lane = null, q;
        for (q = 0; q < m.tiles.length; q++) {
            var tl = m.tiles[q];
            if (i >= tl.r0 && i < tl.r1 && j >= tl.c0 && j < tl.c1 && (tile === null || tl.store === s)) { tile = tl; }
        }
        for (q = 0; q < m.lanes.length; q++) {
            var l = m.lanes[q];
            if (i >= l.r0 && i < l.r1 && j >= l.c0 && j < l.c1) { lane = l; }
        }
        var d = cells.d[k], tip = {
            title: '[' + i + ', ' + j + ']' + (br * bc > 1 ? ' · the worst of its ' + br + '×' + bc + ' cell' : ''),
            'this pass': fmt(cells.a[k]), golden: fmt(cells.e[k]), '|Δ|': d !== d ? 'NaN' : fmt(d),
            verdict: cells.bad[k] ? (br * bc > 1 ? 'over tolerance (in this cell)' : 'over tolerance') : 'within tolerance',
            'written by': storeLabel(m, s),
        };
        if (tile) {
            tip.tile = '[' + tile.r0 + ':' + tile.r1 + ', ' + tile.c0 + ':' + tile.c1 + ']' +
                (tile.role ? ' ' + tile.role : '') + (tile.lanes > 1 ? ' lane ' + tile.lane + '/' + tile.lanes : '') + (tile.block ? ' block ' + tile.block : '');
        }
        if (lane) { tip['lane half'] = (lane.role ? lane.role.toUpperCase() + ' ' : '') + 'lane ' + lane.lane; }
        return tip;
    }

    function findItem(node, markName) {
        if (!node) { return null; }
        if (node.marktype && node.name === markName) { return node.items && node.items[0]; }
        var kids = node.items || [], i, hit;
        for (i = 0; i < kids.length; i++) { if ((hit = findItem(kids[i], markName))) { return hit; } }
        return null;
    }

    /* The tooltip handler ``inner`` wrapped: over the map, the cell under the pointer, found by position. */
    function hoverByPosition(view, inner, m, img) {
        var R = m.view[0], C = m.view[1];
        return function (handler, event, item, value) {
            if (value != null && event && handler.getItemBoundingClientRect) {
                var item0 = findItem(view.scenegraph().root, 'cells_marks');
                var r = item0 && handler.getItemBoundingClientRect(item0);
                if (r && r.width > 0 && r.height > 0) {
                    var col = Math.floor((event.clientX - r.x) / r.width * img.cols), row = Math.floor((event.clientY - r.y) / r.height * img.rows);
                    if (row >= 0 && row < R && col >= 0 && col < C) { value = cellTip(m, mapCells(m), row, col) || value; }
                }
            }
            return inner.call(this, handler, event, item, value);
        };
    }

    /* A Vega View whose tooltip handler (vega-embed's, set before the first render) is wrapped by
     * hoverByPosition: setting a handler on a drawn view resets its renderer and draws it again. */
    function hoverViewClass(m, img) {
        return class extends root.vega.View {
            tooltip(handler) {
                if (!arguments.length) { return super.tooltip(); }
                return super.tooltip(handler ? hoverByPosition(this, handler, m, img) : handler);
            }
        };
    }

    function errorMapSpec(m, t, maxWidth) {
        var cells = mapCells(m), doms = domains(cells);
        var R = m.view[0], C = m.view[1], size = mapSize(m, maxWidth), width = size[0], height = size[1];
        var dpr = Math.max(1, Math.min(2, root.devicePixelRatio || 1));
        var schemes = [t.dark ? 'darkblue' : 'blues', 'orangered'];
        var img = raster(m, cells, doms, schemes, [Math.round(width * dpr), Math.round(height * dpr)]);
        var x = { field: 'c', type: 'quantitative', scale: { domain: [0, C], nice: false, zero: false }, title: 'column' };
        var x2 = { field: 'c2' };
        var y = { field: 'r', type: 'quantitative', scale: { domain: [0, R], nice: false, zero: false, reverse: true },
            title: m.shape.length > 2 ? 'row (leading dims merged)' : 'row' };
        var y2 = { field: 'r2' };
        var tiles = m.tiles.map(function (tl) {
            var st = m.stores[tl.store];
            return { r: tl.r0, r2: tl.r1, c: tl.c0, c2: tl.c1, lane: tl.lanes > 1 ? 'lane ' + tl.lane : 'no split',
                tile: '[' + tl.r0 + ':' + tl.r1 + ', ' + tl.c0 + ':' + tl.c1 + ']', store: st ? st.op + ' at line ' + st.line : '',
                where: (tl.role ? tl.role + ' ' : '') + (tl.lanes > 1 ? 'lane ' + tl.lane + '/' + tl.lanes : '') + (tl.block ? ' block ' + tl.block : '') };
        });
        var lanes = m.lanes.map(function (l) {
            return { r: l.r0, r2: l.r1, c: l.c0, c2: l.c1, text: (l.role ? l.role.toUpperCase() + ' ' : '') + 'lane ' + l.lane };
        });
        var hasBad = m.bad_elements > 0, hasOk = false, i;
        for (i = 0; i < cells.n && !hasOk; i++) { hasOk = !cells.bad[i]; }
        function legendLayer(name, dom, scheme, title) {
            // no marks drawn (opacity 0, one point): it only carries the colour scale its legend shows
            return { name: name, data: { values: [{ v: dom[0], r: 0, c: 0 }] }, mark: { type: 'point', opacity: 0, size: 0 },
                encoding: { x: x, y: y, color: { field: 'v', type: 'quantitative', title: title,
                    scale: { type: 'log', domain: dom, nice: false, scheme: scheme } } } };
        }
        var layers = [];
        if (hasOk) { layers.push(legendLayer('legend_ok', doms.ok, schemes[0], '|Δ| within tolerance')); }
        if (hasBad) { layers.push(legendLayer('legend_bad', doms.bad, schemes[1], '|Δ| over tolerance')); }
        layers.push(
            // the image spans whole blocks (the last row/column of cells may reach past the tensor's edge: clipped)
            { name: 'cells', data: { values: [{ url: img.url, r: 0, r2: img.rows, c: 0, c2: img.cols }] },
                mark: { type: 'image', aspect: false, smooth: false, align: 'left', baseline: 'top', clip: true },
                encoding: { x: x, x2: x2, y: y, y2: y2, url: { field: 'url', type: 'nominal' }, tooltip: { value: 'cell' } } },
            { name: 'tiles', data: { values: tiles }, mark: { type: 'rect', fillOpacity: 0, stroke: t.fg, strokeWidth: 1, strokeOpacity: 0.8 },
                encoding: { x: x, x2: x2, y: y, y2: y2,
                    tooltip: [{ field: 'tile', title: 'tile' }, { field: 'store', title: 'store' }, { field: 'where', title: 'ran on' }] } },
            { name: 'lanes', data: { values: lanes }, mark: { type: 'rect', fillOpacity: 0, stroke: t.accent, strokeWidth: 3, strokeDash: [8, 4] },
                encoding: { x: x, x2: x2, y: y, y2: y2, tooltip: [{ field: 'text', title: 'lane half' }] } },
            { name: 'lane_labels', data: { values: lanes }, mark: { type: 'text', align: 'left', baseline: 'top', dx: 4, dy: 4, color: t.accent, fontWeight: 'bold' },
                encoding: { x: x, y: y, text: { field: 'text' }, tooltip: { field: 'text' } } }
        );
        var binned = m.bin[0] * m.bin[1] > 1, pooled = img.fx * img.fy > 1;
        return {
            spec: {
                $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
                title: { text: "'" + m.tensor + "' |Δ| against the golden" + (m.file ? ' · ' + m.file.split(/[\\/]/).pop() : ''),
                    subtitle: [m.bad_elements + ' of ' + m.elements + ' elements over atol ' + fmt(m.atol) + ' + rtol ' + fmt(m.rtol) +
                        ' × |golden| · max |Δ| ' + fmt(m.max_abs_diff) + ' · shape [' + m.shape.join(', ') + ']' +
                        ' · ' + m.tiles.length + ' tile(s) from ' + m.stores.length + ' store(s)' +
                        (m.tiles_dropped ? ' (' + m.tiles_dropped + ' more not outlined)' : '')].concat(binned || pooled ?
                        ['downsampled: ' + (binned ? 'a cell is ' + m.bin[0] + '×' + m.bin[1] + ' elements' : '') + (binned && pooled ? ', ' : '') +
                            (pooled ? 'a pixel is ' + img.fy + '×' + img.fx + ' cells' : '') + ', each showing its worst (over tolerance first)'] : []) },
                width: width, height: height, config: config(t), layer: layers,
                resolve: { scale: { color: 'independent' } },
            },
            raster: img,
        };
    }

    /* Vector marks stay SVG (inspectable, testable) unless the tile outlines are many. */
    var SVG_MAX_TILES = 1500;

    function embed(el, spec, onClick, renderer, viewClass) {
        var opts = { renderer: renderer || 'svg', actions: false, tooltip: { theme: theme().dark ? 'dark' : 'light' } };
        if (viewClass) { opts.viewClass = viewClass; }
        return root.vegaEmbed(el, spec, opts).then(function (res) {
            if (onClick) {
                res.view.addEventListener('click', function (_ev, item) {
                    if (item && item.datum && item.datum.file) { onClick(item.datum); }
                });
            }
            return res.view;
        });
    }

    /* Vega loads an image mark's href asynchronously and draws it on a later frame (and setting the
     * tooltip handler draws the view again), so a view can resolve before its raster is in the page.
     * Resolves once every SVG <image> under `host` has an href (or after `ms`: a canvas renderer has
     * no <image>, and a picture that never loads must not keep data-rendered unset for ever). */
    function imagesLoaded(host, ms) {
        var end = performance.now() + ms;
        return new Promise(function (resolve) {
            (function poll() {
                var imgs = host.querySelectorAll('image'), i, ok = true;
                for (i = 0; i < imgs.length; i++) {
                    var h = imgs[i].getAttribute('href') || imgs[i].getAttributeNS('http://www.w3.org/1999/xlink', 'href');
                    if (!h) { ok = false; break; }
                }
                if (ok || performance.now() > end) { resolve(); } else { setTimeout(poll, 20); }
            })();
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
            var drawn = errorMapSpec(m, t, options.maxWidth);
            d.setAttribute('data-cells', String(m.cells.count));
            d.setAttribute('data-raster', drawn.raster.w + 'x' + drawn.raster.h);
            jobs.push(embed(d, drawn.spec, null, m.tiles.length > SVG_MAX_TILES ? 'canvas' : 'svg', hoverViewClass(m, drawn.raster)));
        });
        return Promise.all(jobs).then(function () { return imagesLoaded(host, 10000); }).then(function () {
            host.setAttribute('data-render-ms', String(Math.round(performance.now() - t0)));
            host.setAttribute('data-rendered', 'ok');
        },
            function (err) { host.setAttribute('data-rendered', 'error'); host.appendChild(document.createTextNode(String(err))); throw err; });
    }

    root.pyptoPictures = { passChartSpec: passChartSpec, errorMapSpec: errorMapSpec, mapCells: mapCells, renderAll: renderAll, theme: theme, fmt: fmt };
})(typeof window !== 'undefined' ? window : this);
