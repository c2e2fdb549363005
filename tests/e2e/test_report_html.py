"""``pypto-lsp validate --report``: the HTML file of the shipped broken example, drawn by headless Chromium.

The file is written by the CLI (a subprocess, as a CI job would run it), loaded from disk with
every network request refused, and the DOM Chromium leaves after the scripts ran is read:
the pass chart has one point per pass and the first divergent pass marked, the error map one
rectangle per tile. A screenshot is kept (``PYPTO_PICTURES_OUT`` or the test's tmp folder).
"""

from __future__ import annotations

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
    """The items Vega drew for the mark named ``name`` (one <path>, <line> or <text> each in the SVG)."""
    m = re.search(r'<g[^>]*class="mark-[a-z]+ role-mark ' + re.escape(name) + r'_marks"[^>]*>(.*?)</g>', dom, re.S)
    assert m is not None, f"no {name} marks in the drawn report"
    return re.findall(r"<(?:path|text|line)\b[^>]*>", m.group(1))


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
    dom = _chromium("--dump-dom", html.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    return html, dom.stdout, out


def test_report_is_one_self_contained_file(report: tuple[Path, str, Path]) -> None:
    html, _, _ = report
    text = html.read_text(encoding="utf-8")
    # every script inline: no src=, no stylesheet links, no URL a browser would fetch
    assert not re.search(r"<script[^>]*\bsrc=", text) and "<link" not in text
    assert text.count("<script") == 6  # the data, vega, vega-lite, vega-embed, render.js, the boot
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
    # the summary table: a row per pass, the divergent one flagged
    assert len(re.findall(r"<tr id=\"pass-\d+\"", dom)) == 5
    assert re.search(r'<tr id="pass-3" class="fail first">', dom)
    # one error map (the failing 'out' of 11_after_ConvertTensorToTileOps), the two [32, 128] tiles of its store
    assert len(re.findall(r'class="error-map[ "]', dom)) == 1 and 'data-tensor="out"' in dom and 'data-tiles="2"' in dom
    assert len(_marks(dom, "tiles")) == 2
    # 64 x 128 elements, unbinned: the cells over tolerance are all in the second tile (rows 32-63)
    ok, bad = _marks(dom, "cells_ok"), _marks(dom, "cells_bad")
    assert len(ok) + len(bad) == 64 * 128 and 0 < len(bad) <= 32 * 128
    assert _marks(dom, "lanes") == []  # no split function in this example


@needs_chromium
def test_screenshot(report: tuple[Path, str, Path]) -> None:
    html, _, out = report
    png = out / "report.png"
    r = _chromium("--window-size=1400,1500", f"--screenshot={png}", html.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a drawn page, not a blank one
