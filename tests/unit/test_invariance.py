"""pypto_lsp.ir.invariance: whether every call of a kernel takes the same path (the memory model
checks such a kernel's placements until one call is clean, tests/unit/test_memory.py)."""

from __future__ import annotations

import pytest

from pypto_lsp.ir.invariance import same_path_every_call
from pypto_lsp.ir.parser import parse_text

AIV = "@pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)"
W = "pl.Tensor[[16, 128], pl.FP32]"
V = "pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec]"


def kernel(body: list[str]) -> bool:
    head = [AIV, f"def k(a: {W}, n: pl.Scalar[pl.INDEX], o: pl.Out[{W}]) -> {W}:"]
    text = "# pypto.program: M\nimport pypto.language as pl\n\n@pl.program\nclass M:\n"
    text += "".join("    " + ln + "\n" for ln in head + ["    " + b for b in body])
    r = parse_text(text)
    assert r.program is not None and not [d for d in r.diagnostics if d.severity == 1], r.diagnostics
    fn = r.program.function("k")
    assert fn is not None
    return same_path_every_call(fn)


LOAD = f"x: {V} = pl.tile.load(a, [0, c0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)"
STORE = f"o2: {W} = pl.tile.store(x, [0, c0], o)"


@pytest.mark.parametrize(
    ("body", "same"),
    [
        # straight-line code and constant loops: one path; offsets from a parameter do not matter
        (["c0: pl.Scalar[pl.INDEX] = n * 16", LOAD, STORE, "return o2"], True),
        (["for j in pl.range(8):", "    c0: pl.Scalar[pl.INDEX] = j * 16", "    " + LOAD, "    " + STORE, "return o"], True),
        # a branch on a loop variable or on the AIV lane: the same on every call on one core
        (
            ["for j in pl.range(8):", "    c0: pl.Scalar[pl.INDEX] = j * 16", "    if j == 0:", "        " + LOAD, "return o"],
            True,
        ),
        (
            [
                "lane: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()",
                "c0: pl.Scalar[pl.INDEX] = 0",
                "if lane == 0:",
                "    " + LOAD,
                "return o",
            ],
            True,
        ),
        # a branch or a bound that reads a parameter (directly or through an assignment)
        (["c0: pl.Scalar[pl.INDEX] = n", "if c0 == 16:", "    " + LOAD, "return o"], False),
        (["for j in pl.range(n):", "    c0: pl.Scalar[pl.INDEX] = j * 16", "    " + LOAD, "return o"], False),
        (
            ["m: pl.Scalar[pl.INDEX] = n + 1", "for j in pl.range(0, m, 1):", "    c0: pl.Scalar[pl.INDEX] = j", "    " + LOAD, "return o"],
            False,
        ),
        # a branch on the SPMD block (differs per call) or on a loop-carried value
        (
            ["b: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()", "c0: pl.Scalar[pl.INDEX] = 0", "if b == 0:", "    " + LOAD, "return o"],
            False,
        ),
        (
            [
                "for j, (s,) in pl.range(4, init_values=(0,)):",
                "    c0: pl.Scalar[pl.INDEX] = 0",
                "    if s == 0:",
                "        " + LOAD,
                "    s2: pl.Scalar[pl.INDEX] = s + 1",
                "    s_rv: pl.Scalar[pl.INDEX] = pl.yield_(s2)",
                "return o",
            ],
            False,
        ),
        # a while loop
        (["i: pl.Scalar[pl.INDEX] = 0", "while i < 4:", "    i: pl.Scalar[pl.INDEX] = i + 1", "return o"], False),
    ],
)
def test_same_path_every_call(body: list[str], same: bool) -> None:
    assert kernel(body) is same
