"""Item 7: an empty expected bundle, a FIFO golden, an expected dtype unlike the output's,
misspelt config keys (CLI; the editor side is in test_lsp_abuse)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from pypto_lsp.validate.golden import GoldenError, load_bundle

from .conftest import cli, make_case, needs_fixtures, report

pytestmark = needs_fixtures


def test_an_empty_expected_bundle_means_differential_mode(tmp_path: Path) -> None:
    """Issue 28: no expected tensors is no usage error any more: the earliest dump, run on the given
    inputs, is the reference (docs/goldens.md), and the run says so."""
    case = make_case(tmp_path, 1)
    torch.save({}, case / "empty.pt")
    p = cli("validate", str(case), "--inputs", str(case / "tensors.pt"), "--expected", str(case / "empty.pt"), "--json")
    assert p.returncode == 0, p.stdout[-500:] + p.stderr[-500:]
    assert json.loads(p.stdout)["compared_with"]["kind"] == "frontend"


def test_a_fifo_golden_is_refused_without_hanging(tmp_path: Path) -> None:
    case = make_case(tmp_path, 1)
    fifo = case / "expected_fifo.pt"
    os.mkfifo(fifo)
    with pytest.raises(GoldenError, match="not a regular file"):
        load_bundle(fifo)
    p = cli("validate", str(case), "--inputs", str(case / "tensors.pt"), "--expected", str(fifo), "--json", timeout=120)
    assert p.returncode == 2 and "not a regular file (a FIFO)" in p.stderr, p.stderr
    with pytest.raises(GoldenError, match="a folder"):
        load_bundle(case)


def test_the_expected_dtype_must_be_the_outputs(tmp_path: Path) -> None:
    case = make_case(tmp_path, 1)
    exp = torch.load(case / "expected.pt", weights_only=True)
    torch.save({k: v > 0 for k, v in exp.items()}, case / "expected_bool.pt")
    p = cli(
        "validate", str(case), "--inputs", str(case / "tensors.pt"), "--expected", str(case / "expected_bool.pt"), "--json", "--no-cache"
    )
    rep = report(p)
    f = rep["files"][0]
    assert f["status"] == "error" and f["error"]["kind"] == "golden", f
    assert "golden dtype bool differs from the output's float32" in f["error"]["message"]
    assert p.returncode == 1


TOML = """# goldens for the case
[[cases]]
dumps = "passes_dump"
inputs = "tensors.pt"
expected = "expected.pt"
rtoll = 5
"""


def test_a_misspelt_config_key_is_warned_with_file_and_line(tmp_path: Path) -> None:
    case = make_case(tmp_path, 1)
    cfg = case / "pypto-lsp.toml"
    cfg.write_text(TOML)
    p = cli("validate", str(case), "--json", "--no-cache", "--no-localize")
    assert p.returncode == 0, p.stderr
    assert f"{cfg}:6: warning: unknown key 'rtoll' in [[cases]] #1 is ignored (did you mean 'rtol'?)" in p.stderr
    report(p)  # stdout stays the JSON alone


def test_config_warnings_find_keys_in_tables_and_pyproject(tmp_path: Path) -> None:
    from pypto_lsp.validate.config import config_warnings

    t = tmp_path / "pypto-lsp.toml"
    t.write_text('[[case]]\ndumps = "x"\n\n[[cases]]\ndumps = "y"\n"atoll" = 1\n\n[[cases]]\ndumps = "z"\ntimeout = 3\n')
    got = [(w.line, w.key) for w in config_warnings(t)]
    assert got == [(1, "case"), (6, "atoll"), (10, "timeout")]
    pp = tmp_path / "pyproject.toml"
    pp.write_text('[project]\nname = "p"\n\n[tool.pypto-lsp]\nfoo = 1\n\n[[tool.pypto-lsp.cases]]\ndumps = "d"\nrtoll = 2\n')
    assert [(w.line, w.key) for w in config_warnings(pp)] == [(5, "foo"), (9, "rtoll")]
    (tmp_path / "bad.toml").write_text("not = [toml")
    assert config_warnings(tmp_path / "bad.toml") == []
