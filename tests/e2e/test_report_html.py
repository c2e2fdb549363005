"""``pypto-lsp validate --report``: the HTML file of the shipped broken example, drawn by headless Chromium.

The file is written by the CLI (a subprocess, as a CI job would run it), loaded from disk with
every network request refused, and the DOM Chromium leaves after the scripts ran is read:
the pass chart has one point per pass and the first divergent pass marked, the error map one
rectangle per tile. The map's cells are one raster image: a checker script (added to a copy of
the report, never to the report itself) reads its pixels back from the drawn <image> and where
they land on the page, so the test sees which cells were drawn red and where, and hovers one
element to read its tooltip. A screenshot is
kept (``PYPTO_PICTURES_OUT`` or the test's tmp folder).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "examples" / "broken_elementwise" / "passes_dump"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)")


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        # no network at all: a report that needed one would not draw
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--virtual-time-budget=20000",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _marks(dom: str, name: str) -> list[str]:
    """The items Vega drew for the mark named ``name`` (one <path>, <line>, <text> or <image> each in the SVG)."""
    m = re.search(r'<g[^>]*class="mark-[a-z]+ role-mark ' + re.escape(name) + r'_marks"[^>]*>(.*?)</g>', dom, re.S)
    assert m is not None, f"no {name} marks in the drawn report"
    return re.findall(r"<(?:path|text|line|image)\b[^>]*>", m.group(1))


# Reads the drawn error map back: the <image> Vega drew (its pixels, decoded from its href) and
# where it and the tile outlines sit on the page; a pixel is "red" (the over-tolerance scheme,
# orange to red) when its red channel clearly exceeds its blue one (the within scheme is blues).
CHECKER = """<script>
(function check() {
  var host = document.getElementById('pictures');
  if (!host || host.getAttribute('data-rendered') !== 'ok') { return setTimeout(check, 20); }
  // the pass chart: its SVG against the page, and its last x-axis label (the last pass) against the SVG
  var chart = document.querySelector('.pass-chart'), svgBox = chart.querySelector('svg').getBoundingClientRect();
  var xLabels = Array.prototype.filter.call(chart.querySelectorAll('g.role-axis-label text'), function (t) { return /^[0-9]+ /.test(t.textContent); });
  var lastLabel = xLabels.length ? xLabels[xLabels.length - 1].getBoundingClientRect() : null;
  chart.setAttribute('data-chart-box', JSON.stringify({ page: document.documentElement.clientWidth, svg: [svgBox.left, svgBox.right],
    label: lastLabel ? [lastLabel.left, lastLabel.right] : null, text: xLabels.length ? xLabels[xLabels.length - 1].textContent : null }));
  document.querySelectorAll('.error-map').forEach(function (map) {
    var img = map.querySelector('g.cells_marks image');
    if (!img) { map.setAttribute('data-check', '{"error": "no image"}'); return; }
    var box = img.getBoundingClientRect();
    var tiles = Array.prototype.map.call(map.querySelectorAll('g.tiles_marks path'), function (p) {
      var r = p.getBoundingClientRect(); return [r.top, r.bottom, r.left, r.right]; });
    var im = new Image();
    im.onload = function () {
      var w = im.naturalWidth, h = im.naturalHeight, cv = document.createElement('canvas');
      cv.width = w; cv.height = h;
      var g = cv.getContext('2d'); g.drawImage(im, 0, 0);
      var px = g.getImageData(0, 0, w, h).data, red = [], x, y, o;
      for (y = 0; y < h; y++) { for (x = 0; x < w; x++) { o = (y * w + x) * 4; if (px[o] > px[o + 2] + 8) { red.push([y, x]); } } }
      map.setAttribute('data-check', JSON.stringify({ w: w, h: h, red: red, box: [box.top, box.bottom, box.left, box.right], tiles: tiles }));
    };
    im.src = img.getAttribute('href');
    // hover element [40, 5] (second row tile, over tolerance): what the tooltip says of it
    var ev = { clientX: box.left + 5.5 * box.width / 128, clientY: box.top + 40.5 * box.height / 64, bubbles: true };
    img.dispatchEvent(new PointerEvent('pointermove', ev));
    img.dispatchEvent(new MouseEvent('mousemove', ev));
    setTimeout(function () {
      var tip = document.getElementById('vg-tooltip-element');
      map.setAttribute('data-hover', tip ? tip.textContent : 'no tooltip');
    }, 100);
  });
})();
</script>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    out = Path(os.environ.get("PYPTO_PICTURES_OUT") or tmp_path_factory.mktemp("report"))
    out.mkdir(parents=True, exist_ok=True)
    html = out / "report.html"
    env = {**os.environ, "PYPTO_LSP_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    r = subprocess.run(
        [sys.executable, "-m", "pypto_lsp", "validate", str(BROKEN), "--report", str(html)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1, r.stderr  # the example fails, the report is written all the same
    if CHROMIUM is None:
        return html, "", out
    checked = out / "report-checked.html"
    text = html.read_text(encoding="utf-8")
    end = text.rindex("</body>")  # the page's own (the inlined libraries hold the string too)
    checked.write_text(text[:end] + CHECKER + text[end:], encoding="utf-8")
    dom = _chromium("--dump-dom", checked.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    return html, dom.stdout, out


def test_report_is_one_self_contained_file(report: tuple[Path, str, Path]) -> None:
    html, _, _ = report
    text = html.read_text(encoding="utf-8")
    # every script inline: no src=, no stylesheet links, no URL a browser would fetch
    assert not re.search(r"<script[^>]*\bsrc=", text) and "<link" not in text
    assert text.count("<script") == 7  # the data, vega, vega-lite, vega-embed, render.js, taskgraph.js, the boot
    assert "11_after_ConvertTensorToTileOps.py" in text and "first divergent" in text


@needs_chromium
def test_chromium_draws_the_chart_and_the_map(report: tuple[Path, str, Path]) -> None:
    _, dom, _ = report
    assert re.search(r'<div id="pictures"[^>]* data-rendered="ok"', dom)
    # the chart: one point per pass (5 files, 1 output), the first divergent pass marked once, the tolerance line
    assert 'data-passes="5"' in dom
    assert len(_marks(dom, "passes")) == 5
    assert len(_marks(dom, "first_divergent")) == 1
    assert len(_marks(dom, "tolerance")) == 1
    assert _marks(dom, "errors") == [] and _marks(dom, "memory") == []
    # the chart fits the page and its last label (the last pass) is inside it (issue 35: cut at the right edge)
    box = re.search(r'data-chart-box="([^"]*)"', dom)
    assert box is not None, "the checker did not measure the chart"
    chart = json.loads(box.group(1).replace("&quot;", '"'))
    assert chart["text"].startswith("32 ") and chart["label"] is not None, chart
    assert chart["svg"][1] <= chart["page"] and chart["svg"][0] <= chart["label"][0] and chart["label"][1] <= chart["svg"][1], chart
    # the summary table: a row per pass, the divergent one flagged
    assert len(re.findall(r"<tr id=\"pass-\d+\"", dom)) == 5
    assert re.search(r'<tr id="pass-3" class="fail first">', dom)
    # one error map (the failing 'out' of 11_after_ConvertTensorToTileOps), the two [32, 128] tiles of its store
    assert len(re.findall(r'class="error-map[ "]', dom)) == 1 and 'data-tensor="out"' in dom and 'data-tiles="2"' in dom
    assert len(_marks(dom, "tiles")) == 2
    assert _marks(dom, "lanes") == []  # no split function in this example
    # the cells: one raster image of 128 x 64 pixels (64 x 128 elements, unbinned: a pixel per element)
    assert len(_marks(dom, "cells")) == 1 and 'data-raster="128x64"' in dom
    m = re.search(r"data-check=\"([^\"]*)\"", dom)
    assert m is not None, "the checker did not read the drawn map back"
    check = json.loads(m.group(1).replace("&quot;", '"'))
    assert (check["w"], check["h"]) == (128, 64)
    # red exactly where the data says a cell is over tolerance, and all of it in the second tile (rows 32-63)
    data = json.loads(re.search(r'<script type="application/json" id="pypto-data">(.*?)</script>', dom, re.S).group(1))  # type: ignore[union-attr]
    from pypto_lsp.validate.errormap import decode_cells

    cells = decode_cells(data["maps"][0])
    want = {(r, c) for r, c, b in zip(cells["r"], cells["c"], cells["bad"], strict=True) if b}
    red = {(y, x) for y, x in check["red"]}
    assert red == want and 0 < len(red) <= 32 * 128 and min(y for y, _ in red) >= 32
    top, bottom, _, _ = check["box"]
    second = sorted(check["tiles"])[1]
    for y, _ in red:  # where each red pixel row lands on the page: inside the second tile's outline
        row_top = top + y * (bottom - top) / 64
        assert second[0] - 1 <= row_top and row_top + (bottom - top) / 64 <= second[1] + 1


@needs_chromium
def test_screenshot(report: tuple[Path, str, Path]) -> None:
    html, _, out = report
    png = out / "report.png"
    r = _chromium("--window-size=1400,1500", f"--screenshot={png}", html.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a drawn page, not a blank one


@needs_chromium
def test_hovering_an_element_names_it_its_values_and_its_store(report: tuple[Path, str, Path]) -> None:
    """The map's tooltip, looked up by the pointer's position over the raster: the element's
    index, both values, |Δ|, the verdict and the store (IR line) that wrote it."""
    _, dom, _ = report
    m = re.search(r'data-hover="([^"]*)"', dom)
    assert m is not None, "the checker did not hover the map"
    tip = m.group(1)
    data = json.loads(re.search(r'<script type="application/json" id="pypto-data">(.*?)</script>', dom, re.S).group(1))  # type: ignore[union-attr]
    from pypto_lsp.validate.errormap import decode_cells

    emap = data["maps"][0]
    cells = decode_cells(emap)
    k = next(i for i, (r, c) in enumerate(zip(cells["r"], cells["c"], strict=True)) if (r, c) == (40, 5))
    store = emap["stores"][cells["s"][k]]
    assert tip.startswith("[40, 5]"), tip
    for key in ("this pass", "golden", "|Δ|", "verdict", "written by"):
        assert key in tip, (key, tip)
    assert "over tolerance" in tip and f"{store['op']} at line {store['line']}" in tip
    a, e = float(cells["a"][k]), float(cells["e"][k])
    assert f"{a:.4g}"[:4] in tip and f"{e:.4g}"[:4] in tip and a != e


def test_the_report_shows_each_pass_ir_diff(report: tuple[Path, str, Path]) -> None:
    """Every pass's IR against the pass before, the first divergent pass open with its marks."""
    html = report[0].read_text(encoding="utf-8")
    section = html[html.index("What each pass changed") :]
    folds = re.findall(r"<details id='irdiff-(\d+)'( open)?><summary>([^<]*)", section)
    assert [name.split(" ·")[0] for _, _, name in folds] == [
        "04_after_ConvertToSSA.py",
        "09_after_OutlineIncoreScopes.py",
        "11_after_ConvertTensorToTileOps.py",
        "32_after_InitMemRef.py",
    ]
    assert [bool(o) for _, o, _ in folds] == [False, False, True, False]  # only the first divergent pass open
    first = section[section.index("id='irdiff-3'") : section.index("id='irdiff-4'")]
    # the localisation's first differing value (line 10, 'y_chunk__tile'), outlined with its words
    assert re.search(r"<div class='add blamed finding fdv' data-line='10'>.*?first differing value: &#x27;y_chunk__tile&#x27;", first)
    blamed = {int(n) for n in re.findall(r"class='[^']*blamed[^']*' data-line='(\d+)'", first)}
    assert blamed == set(range(9, 16))  # the changed lines 9-15 the CLI names "look there first"
    assert "pl.MemRef(" not in section  # addresses ignored, as the comparison ignores them
