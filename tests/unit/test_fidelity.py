"""Fidelity on programs of kinds not seen before (issue 28).

* Valid regions at the tensor level: a ``tensor.slice`` whose ``valid_shape`` is smaller than
  the window carries it through matmul, element-wise ops, reductions and the split between
  the AIV lanes into what ``tensor.assemble`` writes (``examples/odd_rows``,
  ``examples/split_rows``), as TSTORE does from the tile level on.
* Programs that return their result: the expected bundle's ``return`` / ``return.N`` keys, the
  reference's returned values in differential mode, an empty bundle meaning differential mode
  (``examples/returns``, docs/goldens.md).
* A changed trip count of a loop in a ``pl.at`` region before outlining is named on the loop's
  line (``examples/broken_trip_count``: a hand-made pair, ``pl.range(8)`` became ``pl.range(7)``).

The goldens are checked here against plain torch from the committed inputs, not against our
engine; every broken variant is the example with one edit, failing on the edited line.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pypto_lsp.exec.kernels import KERNELS
from pypto_lsp.exec.values import get_valid, with_valid
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.golden import load_bundle
from pypto_lsp.validate.library import validate_passes
from pypto_lsp.validate.localize import first_differing_value, localize_report
from pypto_lsp.validate.process_setup import configure_process
from pypto_lsp.validate.report import FAIL, PASS, RAN

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
TRIP = EX / "broken_trip_count" / "passes_dump"

configure_process()


def _golden(case: str) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    return dict(load_bundle(EX / case / "golden" / "inputs.pt")), dict(load_bundle(EX / case / "golden" / "expected.pt"))


def _copy(case: str, tmp_path: Path, file: str, old: str, new: str) -> Path:
    """The example's dumps with one edit in ``file``; goldens from the example."""
    dst = tmp_path / case
    shutil.copytree(EX / case / "passes_dump", dst / "passes_dump")
    f = dst / "passes_dump" / file
    text = f.read_text()
    assert text.count(old) == 1, old
    f.write_text(text.replace(old, new))
    return dst / "passes_dump"


def _statuses(dumps: Path, case: str) -> dict[str, str]:
    ins, exp = _golden(case)
    return {Path(f.file).name: f.status for f in validate_passes(dumps, ins, exp).files}


# ---------------------------------------------------------------------- goldens in plain torch


def test_valid_row_goldens_are_plain_torch() -> None:
    ins, exp = _golden("odd_rows")
    e = torch.exp(ins["a"][:15].double() @ ins["w"].double())
    assert torch.allclose(exp["out"][:15].double(), e, rtol=1e-6, atol=1e-6)
    assert torch.equal(exp["out"][15:], ins["out"][15:])  # the row outside the valid region: untouched
    assert torch.allclose(exp["rs"][:15].double(), e.sum(-1, keepdim=True), rtol=1e-6, atol=1e-5)
    assert torch.equal(exp["rs"][15:], ins["rs"][15:])
    ins, exp = _golden("split_rows")
    e = torch.exp(ins["a"][:11].double() @ ins["w"].double())
    assert torch.allclose(exp["out"][:11].double(), e, rtol=1e-6, atol=1e-6)
    assert torch.equal(exp["out"][11:], ins["out"][11:])  # lane 1's 5 rows past its 3 real ones, untouched
    assert bool((ins["out"] == -1).all())  # an untouched row is visible (a written one is exp(.) > 0)
    ins, exp = _golden("returns")
    assert torch.allclose(exp["return"].double(), torch.exp(ins["x"].double() * 0.5), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------- valid regions at the tensor level


@pytest.mark.parametrize("case", ["odd_rows", "split_rows"])
def test_valid_row_examples_pass_on_every_pass(case: str) -> None:
    st = _statuses(EX / case / "passes_dump", case)
    assert len(st) >= 3 and set(st.values()) == {PASS}, st


def test_tensor_ops_carry_the_valid_region() -> None:
    a = with_valid(torch.randn(16, 64), (15, 64))
    w = torch.randn(64, 32)
    acc = KERNELS["tensor.matmul"](a, w, out_dtype=torch.float32)
    assert get_valid(acc) == (15, 32)
    lhs_t = with_valid(torch.randn(64, 16), (64, 15))  # [K, M] with 15 real rows of the product
    rhs_t = with_valid(torch.randn(32, 64), (30, 64))  # [N, K] with 30 real columns of the product
    assert get_valid(KERNELS["tensor.matmul"](lhs_t, rhs_t, a_trans=True, b_trans=True)) == (15, 30)
    e = KERNELS["tensor.exp"](acc)
    assert get_valid(e) == (15, 32)
    assert get_valid(KERNELS["tensor.muls"](e, 2.0)) == (15, 32)
    assert get_valid(KERNELS["tensor.add"](e, torch.randn(16, 32))) == (15, 32)  # as tile ops: lhs's region
    assert get_valid(KERNELS["tensor.row_sum"](e)) == (15, 1)
    s = KERNELS["tensor.row_sum"](e)
    assert torch.allclose(s[:15], e[:15].sum(-1, keepdim=True))  # over the valid cells only
    c = KERNELS["tensor.col_max"](e)
    assert get_valid(c) is None and torch.equal(c, e[:15].amax(0, keepdim=True))  # [1, 32]: wholly valid
    assert get_valid(KERNELS["tensor.col_max"](with_valid(e, (15, 30)))) == (1, 30)
    out = torch.full((16, 32), -1.0)
    KERNELS["tensor.assemble"](out, e, [0, 0])
    assert torch.equal(out[15], torch.full((32,), -1.0)) and torch.equal(out[:15], e[:15])
    # the tile ops are unchanged: their region is the annotated type's (the generated code attaches it)
    assert get_valid(KERNELS["tile.matmul"](a, w)) is None


def test_odd_rows_broken_valid_shape_fails_on_the_slice(tmp_path: Path) -> None:
    dumps = _copy(
        "odd_rows",
        tmp_path,
        "09_after_OutlineIncoreScopes.py",
        "valid_shape=[15, 64], stride=[], layout=pl.TensorLayout.ND)] = pl.tensor.slice(a__ssa_v0, [16, 64], [0, 0], [15, 64])",
        "valid_shape=[16, 64], stride=[], layout=pl.TensorLayout.ND)] = pl.tensor.slice(a__ssa_v0, [16, 64], [0, 0], [16, 64])",
    )
    ins, exp = _golden("odd_rows")
    report = validate_passes(dumps, ins, exp)
    assert [f.status for f in report.files] == [PASS, FAIL, PASS]
    v = localize_report(report, ins, rtol=1e-3, atol=1e-3, entry=None, timeout=None)
    assert v is not None and v.line == 8 and v.kind == "valid" and v.name == "a_tile__ssa_v0"
    assert "valid region [16, 64] here, [15, 64] before" in v.describe("00_frontend.py")


def test_split_rows_broken_lane_extent_fails_on_the_shard(tmp_path: Path) -> None:
    dumps = _copy(
        "split_rows",
        tmp_path,
        "11_after_ConvertTensorToTileOps.py",
        "pl.min(8, 11 - aiv_id__ssa_v0 * 8)",
        "pl.min(8, 12 - aiv_id__ssa_v0 * 8)",
    )
    ins, exp = _golden("split_rows")
    report = validate_passes(dumps, ins, exp)
    assert [f.status for f in report.files] == [PASS, PASS, FAIL]
    v = localize_report(report, ins, rtol=1e-3, atol=1e-3, entry=None, timeout=None)
    assert v is not None and v.line == 14 and v.lane == 1 and v.kind == "valid"  # lane 1 holds 4 rows, not 3


def test_split_rows_tensor_level_lanes_write_their_valid_rows_only() -> None:
    ins, exp = _golden("split_rows")
    text = (EX / "split_rows" / "passes_dump" / "04_after_ConvertToSSA.py").read_text()
    bad = text.replace("[0, 0], [11, 64])", "[0, 0], [12, 64])").replace("valid_shape=[11, 64]", "valid_shape=[12, 64]")
    assert bad != text
    assert run_text(text, ins, exp).status == PASS
    fr = run_text(bad, ins, exp)
    assert fr.status == FAIL and fr.writes["out__ssa_v0"] == [[14, 14]]  # the assemble in the lanes' loop


# ---------------------------------------------------------------------- returned results


def test_returning_example_compares_its_returned_value() -> None:
    ins, exp = _golden("returns")
    files = validate_passes(EX / "returns" / "passes_dump", ins, exp).files
    assert [f.status for f in files] == [PASS] * 3
    assert all(set(f.tensors) == {"return"} for f in files)
    assert files[0].writes["return"] == [[17, 17]]  # a mismatch is reported on the entry's return


def test_returning_example_broken_fails_on_the_scale(tmp_path: Path) -> None:
    dumps = _copy(
        "returns", tmp_path, "11_after_ConvertTensorToTileOps.py", "pl.tile.muls(chunk__tile, 0.5)", "pl.tile.muls(chunk__tile, 0.25)"
    )
    ins, exp = _golden("returns")
    report = validate_passes(dumps, ins, exp)
    assert [f.status for f in report.files] == [PASS, PASS, FAIL]
    v = localize_report(report, ins, rtol=1e-3, atol=1e-3, entry=None, timeout=None)
    assert v is not None and v.line == 10 and v.name == "t__tile"


TWO = """# pypto.program: Two
import pypto.language as pl

@pl.program
class Two:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def two(self, x: pl.Tensor[[8, 16], pl.FP32], o: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a: pl.Tensor[[8, 16], pl.FP32] = pl.tensor.muls(x, 2.0)
            b: pl.Tensor[[8, 1], pl.FP32] = pl.tensor.row_sum(x)
            o: pl.Tensor[[8, 16], pl.FP32] = pl.tensor.assemble(o, a, [0, 0])
        return o, b
"""


def test_tuple_returns_are_keyed_by_position() -> None:
    x = torch.randn(8, 16)
    ins = {"x": x, "o": torch.zeros(8, 16)}
    fr = run_text(TWO, ins, {"return.0": 2 * x, "return.1": x.sum(-1, keepdim=True)})
    assert fr.status == PASS and set(fr.tensors) == {"return.0", "return.1"}
    assert run_text(TWO, ins, {"return.1": x.sum(-1, keepdim=True) + 1}).status == FAIL
    fr = run_text(TWO, ins, {"return": 2 * x})
    assert fr.error is not None and "'return'" in fr.error.message and "return.0" in fr.error.message
    # what differential mode keeps: the returned value that is no parameter (o is compared as 'o')
    kept: dict[str, torch.Tensor] = {}
    assert run_text(TWO, ins, {}, keep=kept).status == RAN
    assert "return.1" in kept and "return.0" not in kept and "o" in kept


def test_empty_expected_bundle_means_differential(tmp_path: Path) -> None:
    ins, exp = _golden("returns")
    report = validate_passes(EX / "returns" / "passes_dump", ins, {})
    assert [f.status for f in report.files] == [PASS] * 3 and all("return" in f.tensors for f in report.files)
    torch.save({}, tmp_path / "empty.pt")
    dumps = _copy(
        "returns", tmp_path, "11_after_ConvertTensorToTileOps.py", "pl.tile.muls(chunk__tile, 0.5)", "pl.tile.muls(chunk__tile, 0.25)"
    )
    cmd = [sys.executable, "-m", "pypto_lsp", "validate", str(dumps), "--inputs", str(EX / "returns" / "golden" / "inputs.pt")]
    cmd += ["--expected", str(tmp_path / "empty.pt"), "--no-cache", "--jobs", "1", "--no-localize"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 1, r.stderr  # not 2: compared with the earliest dump, and 11 differs
    assert "holds no tensors: differential mode" in r.stderr
    assert "00_frontend.py run on the inputs of" in r.stdout
    assert "2 pass, 1 fail" in r.stdout


# ---------------------------------------------------------------------- trip counts before outlining


def test_broken_trip_count_in_a_pl_at_region_is_named_on_the_loop_line() -> None:
    prev = (TRIP / "04_after_ConvertToSSA.py").read_text()
    cur = (TRIP / "05_after_Simplify.py").read_text()
    x = torch.randn(64, 128, generator=torch.Generator().manual_seed(0))
    ins = {"x": x, "out": torch.zeros(64, 128)}
    v = first_differing_value(prev, cur, ins, rtol=1e-3, atol=1e-3)
    assert v is not None and v.kind == "count" and v.line == 9 and v.cause
    assert "loop ran 7 times here, 8 before" in v.describe("04_after_ConvertToSSA.py")
    # the same trip count spelled otherwise: nothing to report
    same = prev.replace("pl.range(8, init_values", "pl.range(0, 8, 1, init_values")
    assert same != prev and first_differing_value(prev, same, ins, rtol=1e-3, atol=1e-3) is None


INOUT = """# pypto.program: WritesInput
import pypto.language as pl

@pl.program
class WritesInput:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def writes_input(self, c: pl.Tensor[[8, 16], pl.FP32]) -> pl.Tensor[[8, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            d: pl.Tensor[[8, 16], pl.FP32] = pl.tensor.muls(c, 2.0)
            c: pl.Tensor[[8, 16], pl.FP32] = pl.tensor.assemble(c, d, [0, 0])
        return c
"""


def test_a_returned_input_the_run_wrote_is_its_written_state() -> None:
    """``return c`` of an input the dump writes: the input is lent, then restored for the next run
    (validate.lend); the returned value is what the run wrote, and it is compared as 'c' already."""
    c = torch.randn(8, 16)
    fr = run_text(INOUT, {"c": c}, {"return": 2 * c})
    assert fr.status == PASS, fr.tensors
    kept: dict[str, torch.Tensor] = {}
    run_text(INOUT, {"c": c}, {}, keep=kept)
    assert "return" not in kept and torch.equal(kept["c"], 2 * c)


def test_broken_trip_count_example_is_localised_on_the_loop_line() -> None:
    report = validate_passes(TRIP)  # no goldens: 04 on synthesized inputs is the reference
    assert [f.status for f in report.files] == [PASS, FAIL]
    v = localize_report(report, report_inputs(TRIP), rtol=1e-3, atol=1e-3, entry=None, timeout=None)
    assert v is not None and (v.line, v.kind, v.name) == (9, "count", "i__idx_v0")


def report_inputs(dumps: Path) -> dict[str, torch.Tensor]:
    """The synthesized inputs differential mode ran the folder on."""
    from pypto_lsp.validate.config import discover_dumps, find_case
    from pypto_lsp.validate.differential import for_case

    files = discover_dumps(dumps)
    return for_case(files, find_case(files[0]), entry=None, timeout=None).inputs
