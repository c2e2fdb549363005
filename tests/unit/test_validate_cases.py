"""`pypto-lsp validate --config F` without PATH: every [[cases]] entry of F."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pypto_lsp import cli

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PYPTO_LSP_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("elementwise", "broken_elementwise", "gather_rows"):
        shutil.copytree(EX / name / "passes_dump", tmp_path / name / "passes_dump")
    shutil.copytree(EX / "elementwise" / "golden", tmp_path / "golden")
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text(
        """
[[cases]]
name = "ew"
dumps = "elementwise/passes_dump"
inputs = "golden/inputs.pt"
expected = "golden/expected.pt"

[[cases]]
dumps = "broken_elementwise/passes_dump"
inputs = "golden/inputs.pt"
expected = "golden/expected.pt"

[[cases]]
dumps = "gather_rows/passes_dump"
[cases.generate]
rows = {low = 0, high = 64}
"""
    )
    return cfg


def test_every_case_with_a_summary_row_each(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["validate", "--config", str(config), "--junit", str(config.parent / "all.xml"), "--no-localize"])
    out = capsys.readouterr().out
    assert rc == 1  # broken_elementwise fails
    # progress per case, in order, each with its own per-file table
    heads = [line for line in out.splitlines() if line.startswith("#" * 20)]
    assert [h.split(": ", 1)[1].split(" (")[0] for h in heads] == ["ew", "broken_elementwise", "gather_rows"]
    assert [h.split("case ", 1)[1].split(":")[0] for h in heads] == ["1/3", "2/3", "3/3"]
    table = out[out.index("\ncase ") :].splitlines()
    rows = {line.split()[0]: line.split() for line in table[2:5]}
    assert rows["ew"][1:5] == ["5", "0", "0", "0"] and rows["ew"][5] == "none" and rows["ew"][-1] == "0"
    assert (
        rows["broken_elementwise"][1:6] == ["3", "2", "0", "0", "11_after_ConvertTensorToTileOps.py"]
        and rows["broken_elementwise"][-1] == "1"
    )
    assert "00_frontend (no goldens)" in table[4] and rows["gather_rows"][-1] == "0"
    assert "3 case(s), 2 ok; not ok: broken_elementwise" in out
    suites = ET.parse(config.parent / "all.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["elementwise", "broken_elementwise", "gather_rows"]
    assert [s.get("failures") for s in suites] == ["0", "2", "0"]


def test_exit_status_over_all_and_json(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = config.read_text().replace('dumps = "broken_elementwise/passes_dump"', 'dumps = "elementwise/passes_dump"')
    config.write_text(text)
    rc = cli.main(["validate", "--config", str(config), "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    doc = json.loads(captured.out)
    assert [c["case"] for c in doc["cases"]] == ["ew", "elementwise", "gather_rows"] and doc["summary"]["exit"] == 0
    assert [c["compared_with"]["kind"] for c in doc["cases"]] == ["goldens", "goldens", "frontend"]
    assert all(c["summary"]["fail"] == 0 for c in doc["cases"])
    # a case that cannot run (an integer input, no table): named, and the whole run exits 2
    config.write_text(text + '\n[[cases]]\nname = "no_table"\ndumps = "gather_rows/passes_dump"\n'.replace("gather_rows/", "g2/"))
    shutil.copytree(config.parent / "gather_rows", config.parent / "g2")
    for dump in (config.parent / "g2" / "passes_dump").glob("*.py"):  # an offset through another variable: no range
        dump.write_text(dump.read_text().replace("[r, 0])", "[r * i, 0])").replace("[r__ssa_v0, 0])", "[r__ssa_v0 * i__idx_v0, 0])"))
    rc = cli.main(["validate", "--config", str(config)])
    captured = capsys.readouterr()
    assert rc == 2
    assert captured.err.count("'rows'") == 1 and "[cases.generate]" in captured.err
    assert "no_table" in captured.out and "did not run" in captured.out


def test_needs_a_path_or_a_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate"]) == 2
    assert "--config" in capsys.readouterr().err
