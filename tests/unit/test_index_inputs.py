"""Integer inputs read from how a program uses them (analysis/index_inputs.py), and differential
mode synthesizing them (validate/differential.synthesize): indices inside what they index,
scatter indices without collisions, a paged gather's block table a page table."""

from __future__ import annotations

import torch

from pypto_lsp.analysis.index_inputs import DATA_HIGH, IndexRange, input_ranges
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.differential import synthesize
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.report import PASS

INCORE = "@pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)"
ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"

# an orchestrator passing its inputs on to a kernel that loads the index and scatters/gathers with it
PROGRAM = "\n".join(
    [
        "# pypto.program: Idx",
        "import pypto.language as pl",
        "",
        "@pl.program",
        "class Idx:",
        f"    {INCORE}",
        "    def kernel(mem: pl.Tensor[[4, 64], pl.FP32], gi: pl.Tensor[[2, 8], pl.INT32], si: pl.Tensor[[2, 8], pl.INT32], "
        "out: pl.Out[pl.Tensor[[256], pl.FP32]]) -> pl.Tensor[[256], pl.FP32]:",
        "        g: pl.Tile[[2, 8], pl.INT32, pl.Mem.Vec] = pl.tile.load(gi, [0, 0], [2, 8], [2, 8], target_memory=pl.Mem.Vec)",
        "        s0: pl.Tile[[2, 8], pl.INT32, pl.Mem.Vec] = pl.tile.load(si, [0, 0], [2, 8], [2, 8], target_memory=pl.Mem.Vec)",
        "        s: pl.Tile[[2, 8], pl.INT32, pl.Mem.Vec] = pl.tile.reshape(s0, [2, 8])",
        "        v: pl.Tile[[2, 8], pl.FP32, pl.Mem.Vec] = pl.tile.mgather(mem, g, coalesce=1)",
        "        o: pl.Tensor[[256], pl.FP32] = pl.tile.mscatter(v, s, out)",
        "        return o",
        f"    {ORCH}",
        "    def main(self, mem: pl.Tensor[[4, 64], pl.FP32], gather_idx: pl.Tensor[[2, 8], pl.INT32], "
        "scatter_idx: pl.Tensor[[2, 8], pl.INT32], out: pl.Out[pl.Tensor[[256], pl.FP32]]) -> pl.Tensor[[256], pl.FP32]:",
        "        out: pl.Tensor[[256], pl.FP32] = self.kernel(mem, gather_idx, scatter_idx, out)",
        "        return out",
    ]
)


def test_ranges_follow_the_parameters_through_calls_and_loads() -> None:
    prog = parse_text(PROGRAM + "\n").program
    assert prog is not None
    ranges = input_ranges(prog, "main")
    assert ranges["gather_idx"] == IndexRange(0, 256, None, "tile.mgather at line 11")
    assert ranges["scatter_idx"] == IndexRange(0, 256, "all", "tile.mscatter at line 12")
    assert ranges["mem"].high == DATA_HIGH  # data: only its float values matter, and they are not synthesized from it
    assert "out" not in ranges


def test_tensor_level_gather_scatter_and_paged_gather() -> None:
    text = "\n".join(
        [
            "# pypto.program: T",
            "import pypto.language as pl",
            "",
            "@pl.program",
            "class T:",
            "    @pl.function",
            "    def main(self, inp: pl.Tensor[[2, 5, 7], pl.FP32], idx: pl.Tensor[[2, 3, 7], pl.INT32], base: pl.Tensor[[4, 16], pl.INT32], "
            "si: pl.Tensor[[4, 6], pl.INT32], val: pl.Tensor[[4, 6], pl.INT32], pool: pl.Tensor[[64, 8], pl.FP16], "
            "li: pl.Tensor[[5], pl.INT32], bt: pl.Tensor[[4], pl.INT32]) -> pl.Tensor[[2, 3, 7], pl.FP32]:",
            "        g: pl.Tensor[[2, 3, 7], pl.FP32] = pl.tensor.gather(inp, idx, dim=1)",
            "        s: pl.Tensor[[4, 16], pl.INT32] = pl.tensor.scatter(base, si, val, dim=-1)",
            "        p: pl.Tensor[[5, 8], pl.FP16] = pl.tensor.paged_gather(pool, li, bt, block_size=16, size=8, max_indices=5)",
            "        return g",
        ]
    )
    prog = parse_text(text + "\n").program
    assert prog is not None
    r = input_ranges(prog, "main")
    assert (r["idx"].high, r["idx"].distinct) == (5, None)
    assert (r["si"].high, r["si"].distinct) == (16, "rows")
    assert r["base"].high == r["val"].high == DATA_HIGH
    assert (r["bt"].high, r["bt"].distinct) == (4, "all")  # 64 rows / 16 = 4 pages
    assert r["li"].high == 4 * 16
    ins, used = synthesize(prog, "main", seed=3)  # no [cases.generate] needed
    assert used == []
    assert int(ins["idx"].min()) >= 0 and int(ins["idx"].max()) < 5 and ins["idx"].dtype == torch.int32
    for row in ins["si"].tolist():
        assert len(set(row)) == len(row) and all(0 <= v < 16 for v in row)
    assert sorted(ins["bt"].tolist()) == [0, 1, 2, 3]
    assert int(ins["li"].max()) < 64


def test_synthesized_indices_run_and_scatter_without_collisions() -> None:
    prog = parse_text(PROGRAM + "\n").program
    assert prog is not None
    ins, _ = synthesize(prog, "main", seed=0)
    assert len(set(ins["scatter_idx"].reshape(-1).tolist())) == 16
    want = torch.zeros(256)
    want[ins["scatter_idx"].reshape(-1).long()] = ins["mem"].reshape(-1)[ins["gather_idx"].reshape(-1).long()]
    r = run_text(PROGRAM + "\n", ins, {"out": want}, rtol=0, atol=0)
    assert r.status == PASS, r.error


def test_a_kernel_called_with_two_inputs_reaches_its_fixed_point() -> None:
    """The same kernel called on gather_idx and then on scatter_idx: its parameter receives both (before,
    the origin flipped between the two on every sweep and input_ranges never returned, as on ffn_swiglu)."""
    assert PROGRAM.endswith("\n        return out")
    twice = (
        PROGRAM.removesuffix("return out")
        + "out: pl.Tensor[[256], pl.FP32] = self.kernel(mem, scatter_idx, gather_idx, out)\n        return out"
    )
    prog = parse_text(twice + "\n").program
    assert prog is not None
    ranges = input_ranges(prog, "main")
    # each input is both a gather index and a scatter index now: the tighter rule (distinct) holds for both
    assert ranges["gather_idx"].distinct == ranges["scatter_idx"].distinct == "all"
    assert ranges["gather_idx"].high == ranges["scatter_idx"].high == 256


def test_a_scatter_update_index_names_distinct_rows_of_the_input() -> None:
    """``scatter_update``'s index names rows of the input read as ``[rows, d]`` (a 4-D paged cache's
    rows are ``blocks * block_size``), all distinct; differential mode then runs it without a
    ``[cases.generate]`` table."""
    text = "\n".join(
        [
            "# pypto.program: U",
            "import pypto.language as pl",
            "",
            "@pl.program",
            "class U:",
            "    @pl.function",
            "    def main(self, cache: pl.Tensor[[3, 4, 1, 8], pl.FP32], idx: pl.Tensor[[2, 5], pl.INT32], "
            "new: pl.Tensor[[2, 5, 1, 8], pl.FP32]) -> pl.Tensor[[3, 4, 1, 8], pl.FP32]:",
            "        c: pl.Tensor[[3, 4, 1, 8], pl.FP32] = pl.tensor.scatter_update(cache, idx, new, dim=-2)",
            "        return c",
        ]
    )
    prog = parse_text(text + "\n").program
    assert prog is not None
    r = input_ranges(prog, "main")
    assert r["idx"] == IndexRange(0, 12, "all", "tensor.scatter_update at line 8")
    ins, _ = synthesize(prog, "main", seed=5)
    rows = ins["idx"].reshape(-1).tolist()
    assert len(set(rows)) == 10 and all(0 <= x < 12 for x in rows)
    want = ins["cache"].clone().reshape(12, 8)
    want[ins["idx"].reshape(-1).long()] = ins["new"].reshape(10, 8)
    r = run_text(text + "\n", ins, {"return": want.reshape(3, 4, 1, 8)}, rtol=0, atol=0)
    assert r.status == PASS, r.error
