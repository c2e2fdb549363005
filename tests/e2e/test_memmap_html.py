"""``pypto-lsp memmap FILE --html``: the memory map of the shipped broken_memory example, drawn by headless Chromium.

The CLI writes the file (a subprocess, with ``--run``: the sanitizer's finding is added);
Chromium loads it with every network request refused, and the DOM left after the scripts
ran is read: one strip, five value bars, one red overlap, one finding. A screenshot is kept
(``PYPTO_PICTURES_OUT`` or the test's tmp folder).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .test_report_html import CHROMIUM, _chromium, _marks, needs_chromium

ROOT = Path(__file__).resolve().parents[2]
DUMPS = ROOT / "examples" / "broken_memory" / "passes_dump"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pypto_lsp", "memmap", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def memmap(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    out = Path(os.environ.get("PYPTO_PICTURES_OUT") or tmp_path_factory.mktemp("memmap"))
    out.mkdir(parents=True, exist_ok=True)
    html = out / "memmap.html"
    r = _cli(str(DUMPS / "35_after_AllocateMemoryAddr.py"), "--html", str(html), "--run")
    assert r.returncode == 0, r.stderr
    if CHROMIUM is None:
        return html, "", out
    dom = _chromium("--dump-dom", html.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    return html, dom.stdout, out


def test_memmap_html_is_one_self_contained_file(memmap: tuple[Path, str, Path]) -> None:
    text = memmap[0].read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]*\bsrc=", text) and "<link" not in text
    assert text.count("<script") == 7  # the data, vega, vega-lite, vega-embed, render.js, memmap.js, the boot
    data = json.loads(re.search(r"<script type='application/json' id='pypto-data'>(.*?)</script>", text, re.S).group(1))  # type: ignore[union-attr]
    assert data["counts"] == {"strips": 1, "bars": 5, "overlaps": 1, "findings": 1}


@needs_chromium
def test_chromium_draws_the_strips_bars_and_the_red_overlap(memmap: tuple[Path, str, Path]) -> None:
    _, dom, out = memmap
    assert 'data-rendered="ok"' in dom, dom[-3000:]
    strips = re.findall(r'<div class="memmap-strip[^"]*"[^>]*>', dom)
    assert len(strips) == 1
    assert 'data-function="exp_add_mul_incore_0"' in strips[0] and 'data-space="Vec"' in strips[0]
    assert 'data-bars="5"' in strips[0] and 'data-overlaps="1"' in strips[0] and 'data-findings="1"' in strips[0]
    assert len(_marks(dom, "bars")) == 5
    assert len(_marks(dom, "overlaps")) == 1
    assert len(_marks(dom, "findings")) == 1
    assert _marks(dom, "pipes") == [] and _marks(dom, "pops") == []
    labels = [re.sub(r"<[^>]+>", "", t) for t in re.findall(r"<text\b[^>]*>.*?</text>", dom, re.S)]
    assert {"x_chunk__tile", "y_chunk__tile", "t__tile", "t__tile_1", "prod__tile"} <= set(labels)
    png = out / "memmap.png"
    r = _chromium("--window-size=1000,450", f"--screenshot={png}", memmap[0].as_uri())
    assert r.returncode == 0 and png.stat().st_size > 5000


def test_cli_text_json_and_a_dump_before_init_memref(tmp_path: Path) -> None:
    r = _cli(str(DUMPS / "35_after_AllocateMemoryAddr.py"))
    assert r.returncode == 0, r.stderr
    assert "1 overlap(s)" in r.stdout and "'y_chunk__tile' (line 13) is still read at line 16 but 't__tile'" in r.stdout
    r = _cli(str(DUMPS / "32_after_InitMemRef.py"), "--json")
    d = json.loads(r.stdout)
    assert d["counts"] == {"strips": 1, "bars": 5, "overlaps": 0, "findings": 0} and not d["addressed"]
    r = _cli(str(DUMPS / "11_after_ConvertTensorToTileOps.py"), "--html", str(tmp_path / "m.html"))
    assert r.returncode == 0 and (tmp_path / "m.html").is_file()
    bad = tmp_path / "bad.py"
    bad.write_text("def (\n", encoding="utf-8")
    assert _cli(str(bad)).returncode == 2
