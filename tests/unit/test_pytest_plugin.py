"""The pytest plugin (`pytest --pypto-lsp[=CONFIG]`), run in subprocesses on the examples:
under pytest-xdist (`-n 2 --dist loadgroup`), and inactive without the flag."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"


def _config(tmp: Path) -> Path:
    gold = EX / "elementwise" / "golden"
    cfg = tmp / "pypto-lsp.toml"
    cfg.write_text(
        f"""
[[cases]]
name = "elementwise"
dumps = "{EX / "elementwise" / "passes_dump"}"
inputs = "{gold / "inputs.pt"}"
expected = "{gold / "expected.pt"}"

[[cases]]
dumps = "{EX / "broken_elementwise" / "passes_dump"}"
inputs = "{gold / "inputs.pt"}"
expected = "{gold / "expected.pt"}"

[[cases]]
dumps = "{EX / "gather_rows" / "passes_dump"}"
[cases.generate]
rows = {{low = 0, high = 64}}
"""
    )
    return cfg


def _pytest(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYPTO_LSP_CACHE_DIR=str(tmp / "cache"))
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "ignore", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def xdist_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    tmp = tmp_path_factory.mktemp("plugin")
    cfg = _config(tmp)
    return _pytest(tmp, f"--pypto-lsp={cfg}", "-n", "2", "--dist", "loadgroup", "-v", "-rA")


def test_ids_under_xdist_loadgroup(xdist_run: subprocess.CompletedProcess[str]) -> None:
    out = xdist_run.stdout
    assert xdist_run.returncode == 1, out + xdist_run.stderr
    assert "2 workers [12 items]" in out
    results = {i: o for o, i in re.findall(r"^(PASSED|FAILED) (\S+)", out, re.M)}  # the -rA summary
    # readable ids: <case>/<pass>, plus xdist's '@<group>' under --dist loadgroup
    assert results == {
        **{f"elementwise/{p}@elementwise": "PASSED" for p in _passes("elementwise")},
        **{f"gather_rows/{p}@gather_rows": "PASSED" for p in _passes("gather_rows")},
        **{f"broken_elementwise/{p}@broken_elementwise": "PASSED" for p in _passes("broken_elementwise")[:3]},
        "broken_elementwise/11_after_ConvertTensorToTileOps@broken_elementwise": "FAILED",
        "broken_elementwise/32_after_InitMemRef@broken_elementwise": "FAILED",
    }
    # one folder, one worker: every broken_elementwise item ran on the same gw
    workers = set(re.findall(r"^\[(gw\d)\] \[[ \d]+%\] \w+ broken_elementwise/", out, re.M))
    assert len(workers) == 1, out


def _passes(case: str) -> list[str]:
    return sorted(p.stem for p in (EX / case / "passes_dump").glob("*.py"))


def test_failure_report_has_the_ir_line_and_max_diff(xdist_run: subprocess.CompletedProcess[str]) -> None:
    out = xdist_run.stdout
    sections = re.split(r"^_{3,} (\S+) _{3,}$", out, flags=re.M)
    reports = dict(zip(sections[1::2], sections[2::2]))
    r11 = reports["broken_elementwise/11_after_ConvertTensorToTileOps@broken_elementwise"]
    assert "11_after_ConvertTensorToTileOps.py: fail (vs goldens)" in r11
    assert "'out': max |Δ| 146.1" in r11 and "rtol 0.05, atol 0.05 at line 10" in r11
    assert "10 | y_chunk__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(y__ssa_v0, [0, 0]" in r11
    assert "first divergent pass: 11_after_ConvertTensorToTileOps.py (every pass before it passes)" in r11
    assert "first value that differs from 09_after_OutlineIncoreScopes.py: 'y_chunk__tile'" in r11
    r32 = reports["broken_elementwise/32_after_InitMemRef@broken_elementwise"]
    assert "at line 19" in r32 and "first divergent pass: 11_after_ConvertTensorToTileOps.py (this one inherits" in r32
    assert "Traceback" not in r11 and "PassFailed" not in r11  # our report, not a Python traceback


def test_select_and_no_xdist(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    r = _pytest(tmp_path, f"--pypto-lsp={cfg}", "-k", "gather_rows", "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^2 passed, 10 deselected", r.stdout, re.M), r.stdout


def test_inactive_without_the_flag(tmp_path: Path) -> None:
    """A pypto-lsp.toml in the rootdir is not collected without --pypto-lsp, and nothing heavy is imported."""
    _config(tmp_path)
    code = (
        "import sys, pytest\n"
        f"rc = pytest.main(['-p', 'no:cacheprovider', '-q', '--co', {str(tmp_path)!r}])\n"
        "print('RC', int(rc), 'TORCH', 'torch' in sys.modules, 'PLUGIN', 'pypto_lsp.pytest_plugin' in sys.modules,\n"
        "      'PARSER', 'pypto_lsp.ir.parser' in sys.modules)\n"
    )
    env = dict(os.environ, PYPTO_LSP_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    # 5: no tests collected; the plugin is loaded (entry point) but imports nothing of the engine or parser
    assert "RC 5 TORCH False PLUGIN True PARSER False" in r.stdout, r.stdout + r.stderr
