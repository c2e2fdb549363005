"""Localisation that names the cause: one hand-broken copy per kind of bug the first
differing value used to miss (a dropped loop-carried update, a changed dtype, a changed
trip count, a branch that goes the other way), each a passing dump with one line edited,
run through the real parser, codegen and torch.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pypto_lsp.validate.golden import load_bundle
from pypto_lsp.validate.localize import first_differing_value
from pypto_lsp.validate.process_setup import configure_process
from pypto_lsp.validate.report import ValueDivergence

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"

configure_process()

INCORE = "@pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)"
ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"
TILE = "pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec]"

# a running sum over 8 row chunks of x, each chunk cast, scaled (or not) and added to the carry
ACCUMULATE = f"""# pypto.program: Accumulate
import pypto.language as pl

@pl.program
class Accumulate:
    {INCORE}
    def acc_incore_0(x__ssa_v0: pl.Tensor[[128, 64], pl.FP32], s__ssa_v0: pl.Scalar[pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        acc__tile: {TILE} = pl.tile.load(x__ssa_v0, [0, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
        for r__idx_v0, (acc__iter_v1,) in pl.range(0, 8, 1, init_values=(acc__tile,)):
            x_chunk__tile: {TILE} = pl.tile.load(x__ssa_v0, [r__idx_v0 * 16, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
            xc__tile: {TILE} = pl.tile.cast(x_chunk__tile, target_type=pl.FP32, mode='round')
            if s__ssa_v0 > 0.0:
                xs__tile: {TILE} = pl.tile.muls(xc__tile, s__ssa_v0)
                xr__rv: {TILE} = pl.yield_(xs__tile)
            else:
                xr__rv: {TILE} = pl.yield_(xc__tile)
            acc_next__tile: {TILE} = pl.tile.add(acc__iter_v1, xr__rv)
            acc__rv_v2: {TILE} = pl.yield_(acc_next__tile)
        out__tile: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(acc__rv_v2, [0, 0], out__ssa_v0)
        return out__tile
    {ORCH}
    def main(self, x__ssa_v0: pl.Tensor[[128, 64], pl.FP32], s__ssa_v0: pl.Scalar[pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        out__rv: pl.Tensor[[16, 64], pl.FP32] = self.acc_incore_0(x__ssa_v0, s__ssa_v0, out__ssa_v0)
        return out__rv
"""


def _inputs() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return {"x__ssa_v0": torch.randn(128, 64, generator=g) * 10, "s__ssa_v0": torch.tensor(0.5), "out__ssa_v0": torch.zeros(16, 64)}


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _line(text: str, needle: str) -> int:
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def _localise(prev: str, cur: str, inputs: dict[str, torch.Tensor]) -> ValueDivergence:
    v = first_differing_value(prev, cur, inputs, rtol=1e-3, atol=1e-3)
    assert v is not None
    assert ValueDivergence.from_json(v.to_json()) == v
    return v


def test_the_unedited_copy_reports_nothing() -> None:
    assert first_differing_value(ACCUMULATE, ACCUMULATE, _inputs(), rtol=1e-3, atol=1e-3) is None


def test_a_dropped_loop_carried_update_names_the_yield() -> None:
    cur = _edit(ACCUMULATE, "pl.yield_(acc_next__tile)", "pl.yield_(acc__iter_v1)")
    v = _localise(ACCUMULATE, cur, _inputs())
    # the value the yield hands to the next iteration is a value of the yield's line
    assert v.line == _line(cur, "pl.yield_(acc__iter_v1)"), v
    assert (v.name, v.kind, v.cause, v.occurrence) == ("acc__iter_v1", "value", True, 1)
    assert v.previous_line == _line(ACCUMULATE, "pl.yield_(acc_next__tile)")


def test_a_changed_dtype_names_the_cast() -> None:
    cur = _edit(
        ACCUMULATE,
        f"xc__tile: {TILE} = pl.tile.cast(x_chunk__tile, target_type=pl.FP32",
        "xc__tile: pl.Tile[[16, 64], pl.INT32, pl.Mem.Vec] = pl.tile.cast(x_chunk__tile, target_type=pl.INT32",
    )
    v = _localise(ACCUMULATE, cur, _inputs())
    assert v.line == _line(cur, "pl.tile.cast("), v
    assert (v.name, v.kind, v.cause) == ("xc__tile", "dtype", True)
    assert v.detail.startswith("dtype INT32 here, FP32 before"), v.detail
    assert "dtype INT32 here, FP32 before" in v.describe("prev.py")
    # the values computed from it differ too, but they are consequences, not candidates
    assert all(r.line != _line(cur, "pl.tile.muls(xc__tile") for r in v.related)


def test_a_changed_trip_count_names_the_loop_with_both_counts() -> None:
    cur = _edit(ACCUMULATE, "pl.range(0, 8, 1,", "pl.range(0, 7, 1,")
    v = _localise(ACCUMULATE, cur, _inputs())
    assert v.line == _line(cur, "pl.range(0, 7, 1,"), v
    assert (v.name, v.kind, v.cause) == ("r__idx_v0", "count", True)
    assert "ran 7 times here, 8 before" in v.detail and "ran 7 times here, 8 before" in v.describe("prev.py")
    # next candidate: what the loop hands out, at the yield's line
    assert v.related and v.related[0].line == _line(cur, "pl.yield_(acc_next__tile)")


def test_a_branch_that_goes_the_other_way_is_named_with_counts() -> None:
    cur = _edit(ACCUMULATE, "if s__ssa_v0 > 0.0:", "if s__ssa_v0 > 1.0:")
    v = _localise(ACCUMULATE, cur, _inputs())
    assert v.line == _line(cur, "if s__ssa_v0 > 1.0:"), v
    assert (v.kind, v.cause) == ("count", True)
    assert "else branch here, the then branch before" in v.detail and "taken 0 times here, 1 before" in v.detail


def test_two_bugs_the_first_cause_is_reported_and_the_second_is_related() -> None:
    """A wrong scale (its operands agree: a cause) and a dropped update; what they make
    downstream (the carry, the call's result) are consequences and not listed."""
    cur = _edit(ACCUMULATE, "pl.tile.muls(xc__tile, s__ssa_v0)", "pl.tile.muls(xc__tile, 2.0)")
    cur = _edit(cur, "pl.yield_(acc_next__tile)", "pl.yield_(acc__iter_v1)")
    v = _localise(ACCUMULATE, cur, _inputs())
    assert v.line == _line(cur, "pl.tile.muls(xc__tile, 2.0)") and v.cause
    assert [(r.line, r.cause) for r in v.related] == [(_line(cur, "pl.yield_(acc__iter_v1)"), True)]


def test_shipped_example_with_one_trip_fewer() -> None:
    """The elementwise example's tile pass with its loop cut short by one chunk."""
    prev = (EX / "elementwise" / "passes_dump" / "11_after_ConvertTensorToTileOps.py").read_text()
    cur = _edit(prev, "pl.range(0, 64, 32,", "pl.range(0, 32, 32,")
    inputs = dict(load_bundle(EX / "elementwise" / "golden" / "inputs.pt"))
    v = _localise(prev, cur, inputs)
    assert v.line == _line(cur, "pl.range(0, 32, 32,") and v.kind == "count"
    assert "ran 1 time here, 2 before" in v.detail


def test_cli_prints_the_cause_and_the_next_candidates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through ``pypto-lsp validate``: the passing copy, then one with two injected bugs."""
    import json

    from pypto_lsp import save_golden
    from pypto_lsp.cli import main
    from pypto_lsp.validate.engine import run_text

    dumps = tmp_path / "passes_dump"
    dumps.mkdir()
    cur = _edit(ACCUMULATE, "pl.tile.muls(xc__tile, s__ssa_v0)", "pl.tile.muls(xc__tile, 2.0)")
    cur = _edit(cur, "pl.yield_(acc_next__tile)", "pl.yield_(acc__iter_v1)")
    (dumps / "10_after_A.py").write_text(ACCUMULATE)
    (dumps / "11_after_B.py").write_text(cur)
    inputs = _inputs()
    x = inputs["x__ssa_v0"]
    expected = {"out__ssa_v0": x[:16] + (x.reshape(8, 16, 64) * 0.5).sum(0)}
    assert run_text(ACCUMULATE, inputs, expected, rtol=1e-3, atol=1e-3).status == "pass"
    save_golden(tmp_path / "golden", inputs, expected, dumps=dumps, rtol=1e-3, atol=1e-3)
    assert main(["validate", str(dumps), "--no-cache"]) == 1
    out = capsys.readouterr().out
    muls, yld = _line(cur, "pl.tile.muls(xc__tile, 2.0)"), _line(cur, "pl.yield_(acc__iter_v1)")
    assert f"11_after_B.py:{muls}: first value that differs from 10_after_A.py: 'xs__tile'" in out, out
    assert f"    also 11_after_B.py:{yld}: 'acc__iter_v1'" in out, out
    assert main(["validate", str(dumps), "--no-cache", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (entry,) = [f for f in report["files"] if f.get("first_differing_value")]
    v = entry["first_differing_value"]
    assert (v["line"], v["kind"], v["cause"]) == (muls, "value", True)
    assert [r["line"] for r in v["related"]] == [yld] and v["related"][0]["cause"]
