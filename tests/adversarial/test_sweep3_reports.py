"""Issue 35 (the third hostile sweep), items 20, 21 and 23: what the reports say. The pytest
plugin's count under ``--collect-only``, the HTML report's pass chart in a 1400 px window (drawn
by headless Chromium) and its summary line, and a reused result's line numbers."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import cli
from .examples_case import example

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)")


# ---------------------------------------------------------------------- 20. pytest --pypto-lsp --collect-only


def test_collect_only_counts_the_items_it_lists(tmp_path: Path) -> None:
    case = example(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYPTO_LSP_CACHE_DIR": str(tmp_path / "cache")}
    args = [sys.executable, "-m", "pytest", f"--pypto-lsp={case / 'pypto-lsp.toml'}", "-p", "no:cacheprovider", "--collect-only"]
    p = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert p.stdout.count("<PassItem ") == 5, p.stdout[-2000:]
    # the fault: "collected 0 items" above the list, "no tests collected" below it
    assert "collected 5 items" in p.stdout and "5 tests collected" in p.stdout, p.stdout[-2000:]
    q = subprocess.run([*args, "-q", "-k", "frontend"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert "1/5 tests collected (4 deselected)" in q.stdout, q.stdout[-2000:]


# ---------------------------------------------------------------------- 21. the report's pass chart and summary line

# reads the drawn chart back: where the SVG, its last x-axis label and its last point sit on the page
CHECKER = """<script>
(function check() {
  var host = document.getElementById('pictures');
  if (!host || host.getAttribute('data-rendered') !== 'ok') { return setTimeout(check, 20); }
  var chart = document.querySelector('.pass-chart'), svg = chart.querySelector('svg'), s = svg.getBoundingClientRect();
  var box = function (r) { return [r.left, r.right]; };
  var label = Array.prototype.filter.call(chart.querySelectorAll('g.role-axis-label text'), function (t) {
    return t.textContent.indexOf('49 ') === 0; })[0];
  var pts = Array.prototype.map.call(chart.querySelectorAll('g.passes_marks path'), function (p) { return box(p.getBoundingClientRect()); });
  chart.setAttribute('data-box', JSON.stringify({ page: document.documentElement.clientWidth, svg: box(s),
    label: label ? box(label.getBoundingClientRect()) : null, last: pts.sort(function (a, b) { return a[1] - b[1]; }).pop() }));
})();
</script>"""


def _fifty_passes(tmp_path: Path) -> Path:
    case = example(tmp_path)
    dumps = case / "passes_dump"
    src = (dumps / "00_frontend.py").read_text()
    for f in dumps.iterdir():
        f.unlink()
    for i in range(50):
        name = "00_frontend.py" if i == 0 else f"{i:02d}_after_SomeFairlyLongPassName{i}.py"
        (dumps / name).write_text(f"{src}\n# {i}\n")
    return case


@needs_chromium
def test_the_pass_chart_fits_a_1400_px_window(tmp_path: Path) -> None:
    case = _fifty_passes(tmp_path)
    html = tmp_path / "report.html"
    p = cli("validate", str(case), "--report", str(html), "--no-localize", cache=tmp_path / "cache")
    assert p.returncode == 0, p.stderr[-2000:]
    text = html.read_text(encoding="utf-8")
    end = text.rindex("</body>")
    checked = tmp_path / "checked.html"
    checked.write_text(text[:end] + CHECKER + text[end:], encoding="utf-8")
    assert CHROMIUM is not None
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND"]
        + ["--window-size=1400,1000", "--virtual-time-budget=20000", "--dump-dom", checked.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    m = re.search(r'data-box="([^"]*)"', dom.stdout)
    assert m is not None, "the checker did not read the chart back: " + dom.stderr[-2000:]
    got = json.loads(m.group(1).replace("&quot;", '"'))
    page, (svg_left, svg_right) = got["page"], got["svg"]
    assert got["label"] is not None, got  # the last pass's label is drawn
    # the fault: the SVG ran 230 px past the window; the last passes' points and labels were cut
    assert svg_right <= page, got
    assert svg_left <= got["label"][0] and got["label"][1] <= svg_right, got
    assert got["last"][1] <= svg_right, got


def test_the_summary_line_says_ran_only_when_something_ran_without_a_comparison(tmp_path: Path) -> None:
    case = example(tmp_path)
    html = tmp_path / "report.html"
    p = cli("validate", str(case), "--report", str(html), "--no-localize", cache=tmp_path / "cache")
    assert p.returncode == 0, p.stderr[-2000:]
    lead = re.search(r"<p class='muted'>(\d+ pass, [^<]*)</p>", html.read_text(encoding="utf-8"))
    assert lead is not None and lead.group(1).startswith("5 pass, 0 fail, 0 error in "), lead and lead.group(1)
    assert "5 pass, 0 fail, 0 error in" in p.stdout and "0 ran" not in p.stdout, p.stdout[-500:]  # the CLI's line too


# ---------------------------------------------------------------------- 23. a reused result's line numbers


def test_a_reused_result_points_at_the_reusing_files_own_lines(tmp_path: Path) -> None:
    """Pass 42 of a multi-rank program adds a ``# pld.comm_domain:`` comment line: the same IR, one
    line lower. Its error must be reported on its own line, not on the earlier file's."""
    case = example(tmp_path)
    dumps = case / "passes_dump"
    src = (dumps / "00_frontend.py").read_text()
    for f in dumps.iterdir():
        f.unlink()
    broken = src.replace("pl.tensor.exp(pl.tensor.adds(x_chunk, 1.0)), y_chunk)", "pl.tensor.exp(pl.tensor.adds(x_chunk, 1.0)), y_chunkk)")
    assert broken != src
    lines = broken.split("\n")
    at = next(i for i, ln in enumerate(lines) if "def exp_add_mul" in ln) + 1
    commented = "\n".join([*lines[:at], "        # pld.comm_domain: ranks [0, 1]", *lines[at:]])
    (dumps / "00_frontend.py").write_text(src)
    (dumps / "41_after_A.py").write_text(broken)
    (dumps / "42_after_B.py").write_text(commented)
    (dumps / "43_after_C.py").write_text(commented + "\n# trailing\n")

    def error_line(text: str) -> int:
        return next(i for i, ln in enumerate(text.split("\n"), 1) if "y_chunkk" in ln)

    want = {"41_after_A.py": error_line(broken), "42_after_B.py": error_line(commented), "43_after_C.py": error_line(commented)}
    assert want["42_after_B.py"] == want["41_after_A.py"] + 1
    for run in ("first", "from the disk cache"):
        p = cli("validate", str(case), "--json", "--no-localize", cache=tmp_path / "cache")
        rep = json.loads(p.stdout)
        got = {Path(f["file"]).name: (f["error"] or {}).get("line") for f in rep["files"] if f["status"] == "error"}
        # the fault: 42 (and 43) reported on 41's line, one above the statement
        assert got == want, (run, got, want)
