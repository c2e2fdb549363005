"""Differential mode: no goldens, the earliest dump on synthesized inputs is the reference."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import tomllib
import torch

from pypto_lsp import cli
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.config import ConfigError, find_case
from pypto_lsp.validate.differential import GenerateError, reference, synthesize

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
EXAMPLES_WITH_GOLDENS = ["elementwise", "mixed_matmul", "broken_elementwise"]


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("PYPTO_LSP_CACHE_DIR", str(d))
    return d


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = cli.main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def _copy_without_goldens(name: str, dst: Path) -> Path:
    shutil.copytree(EX / name / "passes_dump", dst / name / "passes_dump")
    return dst / name / "passes_dump"


def _program(text: str):
    res = parse_text(text, "<t>")
    assert res.program is not None
    return res.program


SCALAR_PROG = """# pypto.program: P
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: pl.Tensor[[4, 8], pl.BF16], b: pl.InOut[pl.Tensor[[4, 8], pl.FP16]], n: pl.Tensor[[2, 3], pl.INT32], c: pl.Out[pl.Tensor[[4, 8], pl.FP32]]) -> pl.Tensor[[4, 8], pl.FP32]:
        return c
"""


def test_synthesis_follows_the_declared_types_and_is_seeded() -> None:
    prog = _program(SCALAR_PROG)
    # n is never used: any small integers do (analysis.int_inputs: data)
    unused, used = synthesize(prog, "main")
    assert used == ["n in [-16, 16] (only computed with)"] and unused["n"].dtype == torch.int32
    # a dimension of a new tensor: no range is read for it, the key is named
    sized = _program(
        SCALAR_PROG.replace(
            "        return c",
            "        m: pl.Scalar[pl.INT32] = pl.tensor.read(n, [0, 0])\n        t: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.create([m, 8], dtype=pl.FP32)\n        return c",
        )
    )
    with pytest.raises(GenerateError) as e:
        synthesize(sized, "main")
    msg = str(e.value)
    assert msg.count("'n'") == 1 and "INT32" in msg and "[cases.generate]: n = {low = 0, high = 4}" in msg and "'a'" not in msg
    ins, used = synthesize(prog, "main", {"n": {"low": 3, "high": 5}}, seed=7)
    assert used == ["n"]
    assert ins["a"].dtype == torch.bfloat16 and list(ins["a"].shape) == [4, 8] and ins["a"].abs().sum() > 0
    assert ins["b"].dtype == torch.float16 and ins["b"].abs().sum() > 0  # InOut: an input, drawn
    assert ins["c"].dtype == torch.float32 and bool((ins["c"] == 0).all())  # Out only: zeroed
    assert ins["n"].dtype == torch.int32 and int(ins["n"].min()) >= 3 and int(ins["n"].max()) <= 4
    again, _ = synthesize(prog, "main", {"n": {"low": 3, "high": 5}}, seed=7)
    assert all(torch.equal(ins[k], again[k]) for k in ins)
    other, _ = synthesize(prog, "main", {"n": {"low": 3, "high": 5}}, seed=8)
    assert not torch.equal(ins["a"], other["a"])
    # normal, mean 0, std 1/sqrt(last dim) for a matrix (drawn in FP32, rounded to BF16)
    big = _program(SCALAR_PROG.replace("[[4, 8], pl.BF16]", "[[256, 256], pl.BF16]"))
    x = synthesize(big, "main", {"n": 1})[0]["a"].float()
    assert abs(float(x.mean())) < 0.002 and abs(float(x.std()) - 1 / 16) < 0.002
    y = synthesize(big, "main", {"n": 1, "a": {"mean": 3.0, "std": 0.5}})[0]["a"].float()
    assert abs(float(y.mean()) - 3.0) < 0.02 and abs(float(y.std()) - 0.5) < 0.02
    # the other spellings of a value
    vals, _ = synthesize(prog, "main", {"n": [1, 2, 3, 4, 5, 6]})
    assert vals["n"].tolist() == [[1, 2, 3], [4, 5, 6]]
    few, _ = synthesize(prog, "main", {"n": [2, 9]})
    assert set(few["n"].flatten().tolist()) <= {2, 9}


def test_generate_from_a_pt_file(tmp_path: Path) -> None:
    prog = _program(SCALAR_PROG)
    torch.save({"n": torch.arange(6, dtype=torch.int32).reshape(2, 3)}, tmp_path / "n.pt")
    ins, _ = synthesize(prog, "main", {"n": str(tmp_path / "n.pt")})
    assert ins["n"].tolist() == [[0, 1, 2], [3, 4, 5]]
    torch.save(torch.zeros(5, dtype=torch.int32), tmp_path / "bad.pt")
    with pytest.raises(GenerateError, match=r"shape \[5\]"):
        synthesize(prog, "main", {"n": str(tmp_path / "bad.pt")})


@pytest.mark.parametrize("name", EXAMPLES_WITH_GOLDENS)
def test_examples_without_goldens(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every shipped example, goldens removed: the same verdicts and first divergent pass as with them."""
    rc, out, err = _run(capsys, "validate", str(EX / name / "passes_dump"), "--json", "--no-localize")
    with_goldens = json.loads(out)
    assert with_goldens["compared_with"]["kind"] == "goldens"
    dumps = _copy_without_goldens(name, tmp_path)
    rc2, out2, err2 = _run(capsys, "validate", str(dumps), "--json", "--no-localize")
    without = json.loads(out2)
    assert without["compared_with"]["kind"] == "frontend" and without["compared_with"]["label"] == "00_frontend (no goldens)"
    assert rc2 == rc, err2
    assert [f["status"] for f in without["files"]] == [f["status"] for f in with_goldens["files"]]
    fd, fd2 = with_goldens["first_divergent"], without["first_divergent"]
    assert (fd and Path(fd).name) == (fd2 and Path(fd2).name)
    if name == "broken_elementwise":
        assert Path(fd2).name == "11_after_ConvertTensorToTileOps.py"
    else:
        assert all(f["status"] == "pass" for f in without["files"])
    # the text output says what it compares with, at the top and at the end
    rc3, text, _ = _run(capsys, "validate", str(dumps), "--no-localize")
    assert text.startswith("compared with: 00_frontend.py run on synthesized inputs (no goldens; seed 0)")
    assert text.rstrip().endswith("compared with: 00_frontend (no goldens)")


def test_broken_example_localises_the_same_line_without_goldens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dumps = _copy_without_goldens("broken_elementwise", tmp_path)
    rc, out, _ = _run(capsys, "validate", str(dumps), "--json")
    d = json.loads(out)
    fd = next(f for f in d["files"] if f["file"] == d["first_divergent"])
    assert rc == 1 and fd["first_differing_value"]["line"] == 10  # the injected [0, 0] load


def test_reference_is_cached_and_keyed_by_the_frontend(tmp_path: Path, _cache: Path) -> None:
    dumps = _copy_without_goldens("elementwise", tmp_path)
    files = sorted(dumps.glob("*.py"))
    first = reference(files)
    assert not first.cached and first.frontend.name == "00_frontend.py" and sorted(first.expected) == ["out"]
    second = reference(files)
    assert second.cached and torch.equal(first.expected["out"], second.expected["out"])
    assert not reference(files, seed=1).cached  # another seed, another reference
    # the frontend's numbers changed: a new reference, not the cached one
    f0 = dumps / "00_frontend.py"
    f0.write_text(f0.read_text().replace("pl.tensor.adds(x_chunk, 1.0)", "pl.tensor.adds(x_chunk, 2.0)"))
    third = reference(sorted(dumps.glob("*.py")))
    assert not third.cached and not torch.equal(third.expected["out"], first.expected["out"])
    # and against it, the unchanged later passes now fail
    from pypto_lsp.validate.library import validate_passes

    assert [f.status for f in validate_passes(dumps).files] == ["pass", "fail", "fail", "fail", "fail"]


def test_integer_input_drawn_from_its_uses_or_named_for_the_generate_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """gather_rows has an INT32 index input: read from how the program uses it (a row offset into x[64, 128]
    of a 1-row slice: 0..63), drawn from there; where the program hides it behind arithmetic, one clear
    message naming the [cases.generate] key; with the table, runs."""
    dumps = _copy_without_goldens("gather_rows", tmp_path)
    rc, out, err = _run(capsys, "validate", str(dumps), "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert [f["status"] for f in d["files"]] == ["pass", "pass"]
    assert d["compared_with"]["generated"] == ["rows in [0, 63] (offset 0 of tensor.slice at line 13)"]
    # the index through arithmetic: no use bounds it any more
    for f in dumps.glob("*.py"):
        f.write_text(f.read_text().replace("[r, 0])", "[r * i, 0])").replace("[r__ssa_v0, 0])", "[r__ssa_v0 * i__idx_v0, 0])"))
    rc, out, err = _run(capsys, "validate", str(dumps))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "'rows'" in err and "INT32" in err and "[cases.generate]: rows = {low = 0, high = 4}" in err
    assert "through arithmetic not followed" in err and "'x'" not in err and "'out'" not in err
    (dumps.parent / "pypto-lsp.toml").write_text('[[cases]]\ndumps = "passes_dump"\n[cases.generate]\nrows = {low = 0, high = 32}\n')
    rc, out, err = _run(capsys, "validate", str(dumps), "--json", "--no-cache")
    assert rc == 0, err
    assert json.loads(out)["compared_with"]["generated"] == ["rows"]


def test_wrong_row_index_caught_against_the_frontend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dumps = _copy_without_goldens("gather_rows", tmp_path)
    shutil.copy(EX / "gather_rows" / "pypto-lsp.toml", dumps.parent / "pypto-lsp.toml")
    f4 = dumps / "04_after_ConvertToSSA.py"
    f4.write_text(f4.read_text().replace("pl.tensor.read(rows__ssa_v0, [i__idx_v0])", "pl.tensor.read(rows__ssa_v0, [0])"))
    rc, out, _ = _run(capsys, "validate", str(dumps), "--json", "--no-localize")
    assert rc == 1 and [f["status"] for f in json.loads(out)["files"]] == ["pass", "fail"]


def test_generate_table_config_errors(tmp_path: Path) -> None:
    dumps = _copy_without_goldens("gather_rows", tmp_path)
    cfg = dumps.parent / "pypto-lsp.toml"
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\ngenerate = 3\n')
    with pytest.raises(ConfigError, match="'generate' must be a table"):
        find_case(dumps)
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\nseed = "x"\n[cases.generate]\nrows = 1\n')
    with pytest.raises(ConfigError, match="'seed'"):
        find_case(dumps)


def test_golden_freeze_writes_a_bundle_and_config_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dumps = _copy_without_goldens("gather_rows", tmp_path)
    shutil.copy(EX / "gather_rows" / "pypto-lsp.toml", dumps.parent / "pypto-lsp.toml")
    rc, out, err = _run(capsys, "golden", "freeze", str(dumps))
    assert rc == 0, err
    golden = dumps.parent / "golden"
    ins = torch.load(golden / "inputs.pt", weights_only=True)
    exp = torch.load(golden / "expected.pt", weights_only=True)
    assert sorted(ins) == ["out", "rows", "x"] and sorted(exp) == ["out"]
    cases = tomllib.loads((dumps.parent / "pypto-lsp.toml").read_text())["cases"]
    assert len(cases) == 2 and cases[1]["inputs"] == "golden/inputs.pt" and cases[1]["expected"] == "golden/expected.pt"
    case = find_case(dumps)
    assert case.has_goldens  # the frozen case wins over the generate-only one
    rc, out, err = _run(capsys, "validate", str(dumps), "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["compared_with"]["kind"] == "goldens" and [f["status"] for f in d["files"]] == ["pass", "pass"]
    # the frozen expected values are the frontend's on the same synthesized inputs
    rc, out, _ = _run(capsys, "validate", str(dumps), "--json", "--differential")
    d2 = json.loads(out)
    assert d2["compared_with"]["kind"] == "frontend"
    assert [f["tensors"]["out"]["max_abs_diff"] for f in d2["files"]] == [f["tensors"]["out"]["max_abs_diff"] for f in d["files"]]
    rc, _, err = _run(capsys, "golden", "freeze", str(dumps))
    assert rc == 2 and "--force" in err
