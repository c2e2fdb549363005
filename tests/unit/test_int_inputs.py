"""Integer inputs' ranges read from the program (pypto_lsp.analysis.int_inputs), as differential
mode draws them (validate.differential.synthesize)."""

from __future__ import annotations

import pytest

from pypto_lsp.analysis.int_inputs import DATA_RANGE, IntRange, integer_ranges, invert
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.differential import GenerateError, synthesize

HEAD = "# pypto.program: P\nimport pypto.language as pl\n\n@pl.program\nclass P:\n"
ORCH = "    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)\n"
KV = "pl.Tensor[[512, 128], pl.FP32]"
OUT = "pl.Tensor[[64, 128], pl.FP32]"


def paged(offset: str = "blk * 64", extra: str = "") -> str:
    """A block table read per step; the block's rows sliced out of a [512, 128] cache at ``offset``."""
    return (
        HEAD + ORCH + f"    def main(self, kv: {KV}, bt: pl.Tensor[[4], pl.INT32], n: pl.Scalar[pl.INDEX], w: pl.Tensor[[4], pl.INT32], "
        f"out: pl.Out[{OUT}]) -> {OUT}:\n"
        + "        for i in pl.range(n):\n"
        + "            blk: pl.Scalar[pl.INT32] = pl.tensor.read(bt, [i])\n"
        + f"            off: pl.Scalar[pl.INDEX] = {offset}\n"
        + f"            rows: {OUT} = pl.tensor.slice(kv, [64, 128], [off, 0])\n"
        + "            k: pl.Scalar[pl.INT32] = pl.tensor.read(w, [0])\n"
        + "            kk: pl.Scalar[pl.INT32] = k + 3\n"
        + extra
        + f"            out: {OUT} = pl.tensor.assemble(out, rows, [0, 0])\n"
        + "        return out\n"
    )


def ranges(text: str) -> dict[str, IntRange | str]:
    r = parse_text(text, "p.py")
    assert r.program is not None, r.diagnostics
    return integer_ranges(r.program, "main")


def test_a_block_table_through_arithmetic_a_loop_bound_and_data() -> None:
    got = ranges(paged())
    bt, n, w = got["bt"], got["n"], got["w"]
    assert isinstance(bt, IntRange) and (bt.low, bt.high) == (0, 7)  # blk * 64 in 0..448: blk in 0..7
    assert "as v * 64" in bt.why[0]
    assert isinstance(n, IntRange) and (n.low, n.high) == (1, 8)  # a loop that runs a few times
    assert isinstance(w, IntRange) and (w.low, w.high) == DATA_RANGE and w.why == ("only computed with",)
    assert "kv" not in got and "out" not in got  # float data and the output are not integer inputs


def test_offsets_through_add_and_floor_division() -> None:
    got = ranges(paged("blk // 2 + 64"))
    bt = got["bt"]
    assert isinstance(bt, IntRange) and (bt.low, bt.high) == (-128, 769)  # blk // 2 + 64 in 0..448: blk // 2 in -64..384
    assert invert((("add", 64), ("mul", 2)), 0, 448) == (-64, 160)  # (v + 64) * 2 in 0..448
    assert invert((("opaque", 0),), 0, 1) is None


def test_arithmetic_with_another_variable_or_exclusive_bounds_have_no_range() -> None:
    got = ranges(paged("blk * i"))
    assert isinstance(got["bt"], str) and "through arithmetic not followed" in got["bt"]
    clash = paged(extra="            z: pl.Scalar[pl.FP32] = pl.tensor.read(kv, [blk + 600, 0])\n")
    got = ranges(clash)
    assert isinstance(got["bt"], str) and "nothing in common" in got["bt"]


def test_differential_synthesis_draws_from_the_ranges_and_names_the_key_otherwise() -> None:
    r = parse_text(paged(), "p.py")
    assert r.program is not None
    ins, used = synthesize(r.program, "main", seed=3)
    assert 0 <= int(ins["bt"].min()) and int(ins["bt"].max()) <= 7 and 1 <= int(ins["n"]) <= 8
    assert [u.split(" ")[0] for u in used] == ["bt", "n", "w"]
    r = parse_text(paged("blk * i"), "p.py")
    assert r.program is not None
    with pytest.raises(GenerateError) as e:
        synthesize(r.program, "main")
    assert "'bt'" in str(e.value) and "add to [cases.generate]: bt = {low = 0, high = 4}" in str(e.value)
    ins, used = synthesize(r.program, "main", {"bt": {"low": 0, "high": 2}})  # the table wins
    assert used[0] == "bt" and int(ins["bt"].max()) <= 1
