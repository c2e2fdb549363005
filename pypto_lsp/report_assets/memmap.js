/* pypto-lsp memory map: each core's on-chip memory over statement order, as Vega-Lite specs.
 * One chart per strip (a kernel's memory space): x = the dump's lines, y = byte address,
 * a bar per placed value over its live range, pipe rings and popped tiles, the overlaps
 * (a value live across a write on its bytes) in red, the sanitizer's findings as red crosses.
 * Data: pypto_lsp/ir/memmap.py. Shared by `pypto-lsp memmap --html` and the VS Code webview.
 * Needs vega, vega-lite, vega-embed and render.js (window.pyptoPictures: theme, fmt) first. */
(function (root) {
    'use strict';

    function theme() {
        return root.pyptoPictures.theme();
    }

    function config(t) {
        return {
            background: null,
            font: t.font,
            view: { stroke: t.grid },
            axis: { labelColor: t.fg, titleColor: t.fg, gridColor: t.grid, domainColor: t.muted, tickColor: t.muted },
            legend: { labelColor: t.fg, titleColor: t.fg },
            title: { color: t.fg, anchor: 'start', subtitleColor: t.muted },
            text: { color: t.fg },
        };
    }

    function bytes(n) {
        if (n >= 1024 && n % 1024 === 0) { return (n / 1024) + ' KB'; }
        return n + ' B';
    }

    function rangeText(a, b) { return '[' + a + ', ' + b + ')'; }

    /* The rows of each layer, all with x, x2 (lines; a value occupies its lines inclusive), y, y2 (bytes). */
    function stripRows(st) {
        var tiles = [], pipes = [], pops = [], overlaps = [], findings = [];
        var sameStart = {};
        st.bars.forEach(function (b) {
            var k = sameStart[b.start] = (sameStart[b.start] || 0) + 1;
            var row = { x: b.line, x2: Math.max(b.end, b.line) + 1, y: b.start, y2: b.stop, name: b.name, line: b.line, end: b.end,
                bytes: rangeText(b.start, b.stop) + ' · ' + bytes(b.stop - b.start), kind: b.kind,
                ymid: b.start + (b.stop - b.start) * [0.5, 0.25, 0.75][(k - 1) % 3] };
            if (b.kind === 'pipe') {
                row.x = st.lines[0];
                row.x2 = st.lines[1] + 1;
                row.what = 'pipe ring (' + b.direction + '), ' + b.slots + ' slot(s) of ' + bytes(b.slot_size) + (b.placed ? '' : ', not placed yet');
                pipes.push(row);
            } else if (b.kind === 'pop') {
                row.what = 'popped from ' + b.ring + ' (slot by push order) · [' + b.shape.join(', ') + '] ' + b.dtype;
                pops.push(row);
            } else {
                row.what = '[' + b.shape.join(', ') + '] ' + b.dtype + ' · ' + b.memref;
                tiles.push(row);
            }
        });
        st.overlaps.forEach(function (o) {
            overlaps.push({ x: o.x0, x2: o.x1 + 1, y: o.start, y2: o.stop, name: o.name, line: o.line, kind: o.kind,
                other: o.other_name + ' (line ' + o.other_line + ')',
                writers: o.writers.map(function (w) { return w.name + ' @' + w.line; }).join(', '),
                via: o.via || '', bytes: rangeText(o.start, o.stop),
                what: o.kind === 'pipe-slot' ? "'" + o.name + "' lies inside the pipe ring '" + o.other_name + "'" :
                    "'" + o.name + "' is read again at line " + o.end + " after '" + o.other_name + "' was written on its bytes at line " + o.other_line });
        });
        st.findings.forEach(function (f) {
            var lo = f.range ? f.range[0] : 0, hi = f.range ? f.range[1] : 0;
            findings.push({ x: f.line + 0.5, y: (lo + hi) / 2, kind: f.kind, name: f.name, line: f.line, core: f.core,
                other: f.other_name ? f.other_name + ' (line ' + f.other_line + ')' : '', message: f.message, bytes: rangeText(lo, hi) });
        });
        return { tiles: tiles, pipes: pipes, pops: pops, overlaps: overlaps, findings: findings };
    }

    function stripSpec(st, data, t, maxWidth) {
        var rows = stripRows(st);
        var top = 1;
        st.bars.forEach(function (b) { top = Math.max(top, b.stop); });
        st.findings.forEach(function (f) { if (f.range) { top = Math.max(top, f.range[1]); } });
        var x = { field: 'x', type: 'quantitative', scale: { domain: [st.lines[0], st.lines[1] + 1], nice: false, zero: false },
            title: 'line (statement order)', axis: { format: 'd', tickMinStep: 1 } };
        var y = { field: 'y', type: 'quantitative', scale: { domain: [0, top], nice: false, zero: true, reverse: true },
            title: st.space + ' byte' + (data.addressed ? '' : ' (virtual)'), axis: { format: '~s' } };
        var tip = [{ field: 'name', title: 'value' }, { field: 'line', title: 'written at line' }, { field: 'end', title: 'last read at line' },
            { field: 'bytes', title: 'bytes' }, { field: 'what', title: 'what' }];
        var scheme = t.dark ? 'tableau20' : 'tableau10';
        var layers = [
            { name: 'pipes', data: { values: rows.pipes }, mark: { type: 'rect', color: t.muted, opacity: 0.22, stroke: t.muted, strokeDash: [4, 3] },
                encoding: { x: x, x2: { field: 'x2' }, y: y, y2: { field: 'y2' }, tooltip: tip } },
            { name: 'bars', data: { values: rows.tiles }, mark: { type: 'rect', opacity: 0.75, stroke: t.bg, strokeWidth: 1, cursor: 'pointer' },
                encoding: { x: x, x2: { field: 'x2' }, y: y, y2: { field: 'y2' }, tooltip: tip,
                    color: { field: 'name', type: 'nominal', legend: null, scale: { scheme: scheme } } } },
            { name: 'pops', data: { values: rows.pops }, mark: { type: 'rect', color: t.accent, opacity: 0.35, stroke: t.accent, cursor: 'pointer' },
                encoding: { x: x, x2: { field: 'x2' }, y: y, y2: { field: 'y2' }, tooltip: tip } },
            { name: 'overlaps', data: { values: rows.overlaps }, mark: { type: 'rect', color: t.bad, opacity: 0.6, stroke: t.bad, strokeWidth: 3, cursor: 'pointer' },
                encoding: { x: x, x2: { field: 'x2' }, y: y, y2: { field: 'y2' },
                    tooltip: [{ field: 'kind', title: 'overlap' }, { field: 'what', title: 'what' }, { field: 'bytes', title: 'bytes' },
                        { field: 'writers', title: 'written on it' }, { field: 'via', title: 'carried as' }] } },
        ];
        if (rows.tiles.length <= 60) {
            layers.push({ name: 'labels', data: { values: rows.tiles }, mark: { type: 'text', align: 'left', baseline: 'middle', dx: 3, fontSize: 10, color: t.fg, limit: 160 },
                encoding: { x: x, y: { field: 'ymid', type: 'quantitative' }, text: { field: 'name' } } });
        }
        layers.push(
            { name: 'findings', data: { values: rows.findings }, mark: { type: 'point', shape: 'cross', filled: true, size: 160, color: t.bad, stroke: t.fg, strokeWidth: 0.5 },
                encoding: { x: x, y: y, tooltip: [{ field: 'kind', title: 'finding' }, { field: 'name', title: 'value' }, { field: 'line', title: 'line' },
                    { field: 'other', title: 'other' }, { field: 'core', title: 'core' }, { field: 'bytes', title: 'bytes' }, { field: 'message', title: 'message' }] } });
        var nlines = st.lines[1] - st.lines[0] + 1;
        var width = Math.max(480, Math.min(1400, Math.max(nlines * 22, 640), (maxWidth || 1e9) - 140));
        var height = Math.max(160, Math.min(420, 18 * rows.tiles.length));
        var sub = rows.tiles.length + ' value(s)' + (st.capacity ? ' · ' + bytes(top) + ' of ' + bytes(st.capacity) + ' used' : '') +
            (rows.pipes.length ? ' · ' + rows.pipes.length + ' pipe ring(s)' : '') +
            (rows.overlaps.length ? ' · ' + rows.overlaps.length + ' overlap(s) in red' : ' · no overlap') +
            (rows.findings.length ? ' · ' + rows.findings.length + ' finding(s) from the run' : '');
        return {
            $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
            title: { text: st.function + ' · ' + st.space + ' (' + st.core + ')', subtitle: sub },
            width: width, height: height, config: config(t), layer: layers,
        };
    }

    /* Draw every strip of `data` into `host`; resolves when drawn and sets data-rendered on host.
     * options: maxWidth (px), onLineClick(line) (a bar or overlap clicked). */
    function renderAll(host, data, options) {
        options = options || {};
        var t = theme(), jobs = [], t0 = performance.now();
        host.removeAttribute('data-rendered');
        host.setAttribute('data-strips', String(data.strips.length));
        host.setAttribute('data-overlaps', String(data.counts ? data.counts.overlaps : 0));
        if (!data.strips.length) {
            var p = document.createElement('p');
            p.className = 'memmap-empty';
            p.textContent = data.error ? 'No memory map: ' + data.error :
                'Nothing placed in this dump: tiles get their memory from InitMemRef on.';
            host.appendChild(p);
        }
        data.strips.forEach(function (st) {
            var d = document.createElement('div');
            d.className = 'memmap-strip';
            d.setAttribute('data-function', st.function);
            d.setAttribute('data-space', st.space);
            d.setAttribute('data-bars', String(st.bars.filter(function (b) { return b.kind === 'tile'; }).length));
            d.setAttribute('data-overlaps', String(st.overlaps.length));
            d.setAttribute('data-findings', String(st.findings.length));
            host.appendChild(d);
            var opts = { renderer: 'svg', actions: false, tooltip: { theme: t.dark ? 'dark' : 'light' } };
            jobs.push(root.vegaEmbed(d, stripSpec(st, data, t, options.maxWidth), opts).then(function (res) {
                if (options.onLineClick) {
                    res.view.addEventListener('click', function (_ev, item) {
                        if (item && item.datum && typeof item.datum.line === 'number') { options.onLineClick(item.datum.line); }
                    });
                }
                return res.view;
            }));
        });
        return Promise.all(jobs).then(function () {
            host.setAttribute('data-render-ms', String(Math.round(performance.now() - t0)));
            host.setAttribute('data-rendered', 'ok');
        }, function (err) { host.setAttribute('data-rendered', 'error'); host.appendChild(document.createTextNode(String(err))); throw err; });
    }

    root.pyptoMemmap = { stripSpec: stripSpec, stripRows: stripRows, renderAll: renderAll };
})(typeof window !== 'undefined' ? window : this);
