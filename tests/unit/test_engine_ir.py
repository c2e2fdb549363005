"""Hand-written IR programs (in the exact printed style of PyPTO pass dumps) run through
:func:`pypto_lsp.validate.engine.run_text` against goldens computed with plain torch.

Covers every cross-core split mode and direction, dual dispatch, pipe ids, the Group
metadata rule (reference §2.3), deadlocks, runtime shape errors, NaN outputs, SPMD,
partial tiles, SSA control flow, error locations, entry/parameter resolution,
unsupported ops and injection safety.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from pypto_lsp.exec import crosscore
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.report import ERROR, FAIL, PASS, RAN, FileResult

F32 = "pl.FP32"
AIC_DECO = "@pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)"
AIV_DECO = "@pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)"
GROUP_DECO = "@pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)"
INCORE_DECO = "@pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)"
ORCH_DECO = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"


# ---------------------------------------------------------------------- helpers


def program(name: str, *functions: str, dynamic: tuple[str, ...] = ()) -> str:
    """A program dump: the printer's header, then each function (given at indent 0) at indent 4."""
    head = f"# pypto.program: {name}\nimport pypto.language as pl\n\n"
    for d in sorted(dynamic):
        head += f'{d} = pl.dynamic("{d}")\n'
    if dynamic:
        head += "\n"
    head += f"@pl.program\nclass {name}:\n"
    body = ""
    for fn in functions:
        for line in fn.strip("\n").splitlines():
            body += ("    " + line if line.strip() else "") + "\n"
    return head + body


def fn(deco: str, signature: str, *body: str) -> str:
    """One function: decorator, ``def`` line, body lines (given without indentation)."""
    return "\n".join([deco, f"def {signature}:", *("    " + b for b in body)])


def line_of(text: str, needle: str) -> int:
    """1-based line of the only line containing ``needle``."""
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    assert len(hits) == 1, f"{needle!r} found on lines {hits}"
    return hits[0]


def t(rows: int, cols: int) -> str:
    return f"pl.Tensor[[{rows}, {cols}], {F32}]"


def out_t(rows: int, cols: int) -> str:
    return f"pl.Out[{t(rows, cols)}]"


def group_program(
    name: str,
    sig: str,
    args: str,
    ret: str,
    aic_body: list[str],
    aiv_body: list[str],
    *,
    aiv_attrs: str | None = None,
    aic_attrs: str | None = None,
    group_attrs: str | None = None,
    dynamic: tuple[str, ...] = (),
) -> str:
    """A post-ExpandMixedKernel program: ``g_aic`` + ``g_aiv`` + Group ``g`` + Orchestration ``main``."""
    aic = [f"pl.func_attr({aic_attrs})"] if aic_attrs else []
    aiv = [f"pl.func_attr({aiv_attrs})"] if aiv_attrs else []
    grp = [f"pl.func_attr({group_attrs})"] if group_attrs else []
    return program(
        name,
        fn(AIC_DECO, f"g_aic({sig})", *aic, *aic_body),
        fn(AIV_DECO, f"g_aiv({sig}) -> {ret}", *aiv, *aiv_body, "return out__ssa_v1"),
        fn(GROUP_DECO, f"g({sig}) -> {ret}", *grp, f"self.g_aic({args})", f"out__ssa_v1: {ret} = self.g_aiv({args})", "return out__ssa_v1"),
        fn(ORCH_DECO, f"main(self, {sig}) -> {ret}", f"out__ssa_v1: {ret} = self.g({args})", "return out__ssa_v1"),
        dynamic=dynamic,
    )


def run(text: str, inputs: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], **kw: object) -> FileResult:
    return run_text(text, inputs, expected, filename="test_dump.py", **kw)  # type: ignore[arg-type]


def assert_pass(r: FileResult) -> None:
    assert r.status == PASS, (r.status, r.error, r.tensors)
    for name, tr in r.tensors.items():
        assert tr.passed and tr.max_abs_diff < 1e-5, (name, tr)


def assert_error_at(r: FileResult, line: int, *kind_words: str) -> None:
    assert r.status == ERROR, (r.status, r.tensors)
    assert r.error is not None
    assert r.error.line == line, (r.error.line, line, r.error.kind, r.error.message)
    if kind_words:
        text = f"{r.error.kind} {r.error.message}".lower()
        assert any(w in text for w in kind_words), (r.error.kind, r.error.message)


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


def randn(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=gen)


@pytest.fixture
def short_group_timeout() -> Iterator[None]:
    old = crosscore.DEFAULT_GROUP_TIMEOUT_S
    crosscore.configure(group_timeout_s=5)
    try:
        yield
    finally:
        crosscore.configure(group_timeout_s=old)


# ---------------------------------------------------------------------- cross-core: AIC -> AIV

SIG_32 = f"x: {t(32, 64)}, out: {out_t(32, 64)}"
ARGS = "x, out"
RET_32 = t(32, 64)


def test_c2v_no_split_single_lane(gen: torch.Generator) -> None:
    text = group_program(
        "C2vNoSplit",
        SIG_32,
        ARGS,
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=0)",
        ],
        [
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "u__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(t__tile, 2.0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(u__tile, [0, 0], out)",
        ],
    )
    x = randn(gen, 32, 64)
    # a second AIV lane would pop the same single FIFO and deadlock: a pass proves one lane ran
    assert_pass(run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": x * 2}))


@pytest.mark.parametrize(
    ("split", "mode", "pop_shape", "offset"),
    [
        (1, "UP_DOWN", (16, 64), "[0 + subblock_idx * 16, 0]"),
        (2, "LEFT_RIGHT", (32, 32), "[0, 0 + subblock_idx * 32]"),
    ],
)
def test_c2v_split_two_lanes_store_their_halves(
    gen: torch.Generator, split: int, mode: str, pop_shape: tuple[int, int], offset: str
) -> None:
    r, c = pop_shape
    text = group_program(
        f"C2vSplit{split}",
        SIG_32,
        ARGS,
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            f"pl.tile.tpush_to_aiv(x__tile, split={split})",
        ],
        [
            "subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()",
            f"t__tile: pl.Tile[[{r}, {c}], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split={split})",
            f"u__tile: pl.Tile[[{r}, {c}], pl.FP32, pl.Mem.Vec] = pl.tile.adds(t__tile, 1.0)",
            f"pl.system.tfree_to_aic(t__tile, split={split})",
            f"out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(u__tile, {offset}, out)",
        ],
        aic_attrs=f'{{"split": pl.SplitMode.{mode}}}',
        aiv_attrs=f'{{"split": pl.SplitMode.{mode}, "dual_aiv_dispatch": True}}',
        group_attrs=f'{{"split": pl.SplitMode.{mode}}}',
    )
    x = randn(gen, 32, 64)
    # both halves written -> both lanes ran, each got its own half
    assert_pass(run(text, {"x": x, "out": torch.full((32, 64), -7.0)}, {"out": x + 1}))


def test_c2v_split_lane_offsets_matter(gen: torch.Generator) -> None:
    """Control: storing both lanes at row 0 leaves the lower half unwritten -> fail, not pass."""
    text = group_program(
        "C2vSplitWrongOffset",
        SIG_32,
        ARGS,
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=1)",
        ],
        [
            "t__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=1)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], out)",
        ],
        aiv_attrs='{"split": pl.SplitMode.UP_DOWN, "dual_aiv_dispatch": True}',
    )
    x = randn(gen, 32, 64)
    r = run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": x})
    assert r.status == FAIL and not r.tensors["out"].passed


def test_c2v_odd_split_rows_33_gives_lanes_17_and_16(gen: torch.Generator) -> None:
    valid = "pl.min(pl.max(pl.const(33, pl.INDEX), subblock_idx * pl.const(17, pl.INDEX)) - subblock_idx * pl.const(17, pl.INDEX), pl.const(17, pl.INDEX))"
    tile17 = f"pl.Tile[[17, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[{valid}, 64])]"
    sig = f"x: {t(33, 64)}, out: {out_t(40, 64)}"
    text = group_program(
        "C2vOdd",
        sig,
        ARGS,
        t(40, 64),
        [
            "x__tile: pl.Tile[[33, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [33, 64], [33, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=3)",
        ],
        [
            "subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()",
            f"t__tile: {tile17} = pl.tile.tpop_from_aic(split=3)",
            f"u__tile: {tile17} = pl.tile.muls(t__tile, 3.0)",
            "pl.system.tfree_to_aic(t__tile, split=3)",
            "out__ssa_v1: pl.Tensor[[40, 64], pl.FP32] = pl.tile.store(u__tile, [0 + subblock_idx * 17, 0], out)",
        ],
        aiv_attrs='{"split": pl.SplitMode.UP_DOWN, "dual_aiv_dispatch": True}',
        group_attrs='{"split": pl.SplitMode.UP_DOWN}',
        dynamic=("subblock_idx",),
    )
    x = randn(gen, 33, 64)
    out0 = torch.full((40, 64), -7.0)
    exp = out0.clone()
    exp[:33] = x * 3
    # lane 1 holds 16 valid rows of a 17-row box: row 33 (past the valid rows) keeps its -7
    assert_pass(run(text, {"x": x, "out": out0}, {"out": exp}))


def test_c2v_odd_split_cols_33_gives_lanes_17_and_16(gen: torch.Generator) -> None:
    valid = "pl.min(pl.max(pl.const(33, pl.INDEX), subblock_idx * pl.const(17, pl.INDEX)) - subblock_idx * pl.const(17, pl.INDEX), pl.const(17, pl.INDEX))"
    tile17 = f"pl.Tile[[16, 17], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[16, {valid}])]"
    sig = f"x: {t(16, 33)}, out: {out_t(16, 40)}"
    text = group_program(
        "C2vOddCols",
        sig,
        ARGS,
        t(16, 40),
        [
            "x__tile: pl.Tile[[16, 33], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [16, 33], [16, 33], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=4)",
        ],
        [
            "subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()",
            f"t__tile: {tile17} = pl.tile.tpop_from_aic(split=4)",
            f"u__tile: {tile17} = pl.tile.muls(t__tile, 3.0)",
            "out__ssa_v1: pl.Tensor[[16, 40], pl.FP32] = pl.tile.store(u__tile, [0, 0 + subblock_idx * 17], out)",
        ],
        aiv_attrs='{"split": pl.SplitMode.LEFT_RIGHT, "dual_aiv_dispatch": True}',
        dynamic=("subblock_idx",),
    )
    x = randn(gen, 16, 33)
    out0 = torch.full((16, 40), -7.0)
    exp = out0.clone()
    exp[:, :33] = x * 3
    assert_pass(run(text, {"x": x, "out": out0}, {"out": exp}))


# ---------------------------------------------------------------------- cross-core: AIV -> AIC


def test_v2c_no_split(gen: torch.Generator) -> None:
    text = group_program(
        "V2cNoSplit",
        SIG_32,
        ARGS,
        RET_32,
        [
            "r__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.tpop_from_aiv(split=0)",
            "out__ssa_v2: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(r__tile, [0, 0], out)",
        ],
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Vec)",
            "e__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(x__tile)",
            "pl.tile.tpush_to_aic(e__tile, split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = out",
        ],
    )
    x = randn(gen, 32, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": torch.exp(x)}))


@pytest.mark.parametrize(
    ("split", "mode", "part", "offset"),
    [(1, "UP_DOWN", (16, 64), "[0 + subblock_idx * 16, 0]"), (2, "LEFT_RIGHT", (32, 32), "[0, 0 + subblock_idx * 32]")],
)
def test_v2c_split_merges_the_lanes(gen: torch.Generator, split: int, mode: str, part: tuple[int, int], offset: str) -> None:
    r, c = part
    text = group_program(
        f"V2cSplit{split}",
        SIG_32,
        ARGS,
        RET_32,
        [
            f"r__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.tpop_from_aiv(split={split})",
            "out__ssa_v2: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(r__tile, [0, 0], out)",
        ],
        [
            "subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()",
            f"x__tile: pl.Tile[[{r}, {c}], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, {offset}, [{r}, {c}], [{r}, {c}], target_memory=pl.Mem.Vec)",
            f"s__tile: pl.Tile[[{r}, {c}], pl.FP32, pl.Mem.Vec] = pl.tile.adds(x__tile, 1.0)",
            f"pl.tile.tpush_to_aic(s__tile, split={split})",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = out",
        ],
        aiv_attrs=f'{{"split": pl.SplitMode.{mode}, "dual_aiv_dispatch": True}}',
        group_attrs=f'{{"split": pl.SplitMode.{mode}}}',
    )
    x = randn(gen, 32, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": x + 1}))


def test_v2c_dual_no_split_keeps_lane0_payload(gen: torch.Generator) -> None:
    """Dual dispatch without split: both lanes push, the cube pop waits for both and keeps lane 0's (§5.3)."""
    text = group_program(
        "V2cDual",
        SIG_32,
        ARGS,
        RET_32,
        [
            "r__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.tpop_from_aiv(split=0)",
            "out__ssa_v2: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(r__tile, [0, 0], out)",
        ],
        [
            "subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()",
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Vec)",
            "s__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.adds(x__tile, pl.cast(subblock_idx * 10, pl.FP32))",
            "pl.tile.tpush_to_aic(s__tile, split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = out",
        ],
        aiv_attrs='{"dual_aiv_dispatch": True}',
    )
    x = randn(gen, 32, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": x}))


def test_dual_dispatch_no_split_each_lane_pops_a_copy(gen: torch.Generator) -> None:
    sig = f"x: {t(32, 64)}, out: {out_t(64, 64)}"
    text = group_program(
        "DualNoSplit",
        sig,
        ARGS,
        t(64, 64),
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=0)",
        ],
        [
            "subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()",
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "u__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(t__tile, 2.0)",
            "out__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(u__tile, [subblock_idx * 32, 0], out)",
        ],
        aiv_attrs='{"dual_aiv_dispatch": True}',
    )
    x = randn(gen, 32, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(64, 64)}, {"out": torch.cat([x * 2, x * 2])}))


def test_two_pipe_ids_are_kept_apart(gen: torch.Generator) -> None:
    sig = f"x: {t(32, 64)}, y: {t(32, 64)}, out: {out_t(32, 64)}"
    text = group_program(
        "TwoPipes",
        sig,
        "x, y, out",
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "y__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(y, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=0, id=0)",
            "pl.tile.tpush_to_aiv(y__tile, split=0, id=1)",
        ],
        [
            # pops in the opposite order: only pipe ids pair them correctly
            "b__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0, id=1)",
            "a__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0, id=0)",
            "d__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.sub(a__tile, b__tile)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(d__tile, [0, 0], out)",
        ],
    )
    x, y = randn(gen, 32, 64), randn(gen, 32, 64)
    assert_pass(run(text, {"x": x, "y": y, "out": torch.zeros(32, 64)}, {"out": x - y}))


# ---------------------------------------------------------------------- Group metadata rule (§2.3)


def test_group_body_is_not_executed_when_members_exist(gen: torch.Generator) -> None:
    """A call to a Group with ``g_aic``/``g_aiv`` runs the members; the Group body never runs."""
    text = program(
        "GroupMeta",
        fn(
            AIC_DECO,
            f"g_aic({SIG_32})",
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=0)",
        ),
        fn(
            AIV_DECO,
            f"g_aiv({SIG_32}) -> {RET_32}",
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], out)",
            "return out__ssa_v1",
        ),
        fn(
            GROUP_DECO,
            f"g({SIG_32}) -> {RET_32}",
            "self.g_aic(x, out)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.g_aiv(x, out)",
            # never reached when the group runs through its members
            "z__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.full([32, 64], dtype=pl.FP32, value=5.0)",
            "out__ssa_v2: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(z__tile, [0, 0], out__ssa_v1)",
            "return out__ssa_v2",
        ),
        fn(ORCH_DECO, f"main(self, {SIG_32}) -> {RET_32}", f"out__ssa_v1: {RET_32} = self.g(x, out)", "return out__ssa_v1"),
    )
    x = randn(gen, 32, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": x}))


def test_group_without_members_runs_its_body_sequentially(gen: torch.Generator) -> None:
    """No ``g_aiv`` (the vector kernel has another name): the Group body runs as a plain function,
    so a push that precedes its pop still works (standalone runtime)."""
    text = program(
        "GroupNoMeta",
        fn(
            AIC_DECO,
            f"g_aic({SIG_32})",
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=0)",
        ),
        fn(
            AIV_DECO,
            f"g_vec({SIG_32}) -> {RET_32}",
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "u__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.neg(t__tile)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(u__tile, [0, 0], out)",
            "return out__ssa_v1",
        ),
        fn(
            GROUP_DECO,
            f"g({SIG_32}) -> {RET_32}",
            "self.g_aic(x, out)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.g_vec(x, out)",
            "return out__ssa_v1",
        ),
        fn(ORCH_DECO, f"main(self, {SIG_32}) -> {RET_32}", f"out__ssa_v1: {RET_32} = self.g(x, out)", "return out__ssa_v1"),
    )
    x = randn(gen, 32, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": -x}))


def test_split_comes_from_transport_ops_not_function_attrs(gen: torch.Generator) -> None:
    """§2.3: the ``split=`` kwargs of the transport ops decide the lane count (no func_attr at all)."""
    text = group_program(
        "SplitFromOps",
        SIG_32,
        ARGS,
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=1)",
        ],
        [
            "subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()",
            "t__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=1)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [subblock_idx * 16, 0], out)",
        ],
    )
    x = randn(gen, 32, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": x}))


def test_dual_dispatch_is_read_from_the_aiv_function_only(gen: torch.Generator) -> None:
    """§2.3 rule 3: ``dual_aiv_dispatch`` on the Group (not on the AIV) leaves one lane; two lanes
    popping one no-split FIFO would deadlock."""
    text = group_program(
        "DualOnGroup",
        SIG_32,
        ARGS,
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=0)",
        ],
        [
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], out)",
        ],
        group_attrs='{"dual_aiv_dispatch": True}',
        aic_attrs='{"dual_aiv_dispatch": True}',
    )
    x = randn(gen, 32, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": x}))


def test_group_called_twice_gets_a_fresh_runtime_each_time(gen: torch.Generator) -> None:
    """A leftover push of the first call (pushed twice, popped once) must not reach the second call."""
    sig = f"x: {t(64, 64)}, r: pl.Scalar[pl.INDEX], out: {out_t(64, 64)}"
    text = program(
        "TwiceGroup",
        fn(
            AIC_DECO,
            f"g_aic({sig})",
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [r, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=0)",
            "pl.tile.tpush_to_aiv(pl.tile.muls(x__tile, 100.0), split=0)",
        ),
        fn(
            AIV_DECO,
            f"g_aiv({sig}) -> {t(64, 64)}",
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "out__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(t__tile, [r, 0], out)",
            "return out__ssa_v1",
        ),
        fn(
            GROUP_DECO,
            f"g({sig}) -> {t(64, 64)}",
            "self.g_aic(x, r, out)",
            "out__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = self.g_aiv(x, r, out)",
            "return out__ssa_v1",
        ),
        fn(
            ORCH_DECO,
            f"main(self, x: {t(64, 64)}, out: {out_t(64, 64)}) -> {t(64, 64)}",
            "for i in pl.range(2):",
            "    out__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = self.g(x, i * 32, out)",
            "return out",
        ),
    )
    x = randn(gen, 64, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(64, 64)}, {"out": x}))


def test_conflicting_split_kwargs_in_a_group_are_reported_as_such() -> None:
    text = group_program(
        "Conflict",
        SIG_32,
        ARGS,
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=1)",
        ],
        [
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], out)",
        ],
    )
    x = torch.randn(32, 64)
    r = run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": x})
    assert r.status == ERROR and r.error is not None
    assert "conflict" in r.error.message.lower() and "split" in r.error.message.lower(), (r.error.kind, r.error.message)


# ---------------------------------------------------------------------- deadlock / unpaired pop


def test_unpaired_pop_is_an_error_on_the_pop_line_within_timeout(gen: torch.Generator, short_group_timeout: None) -> None:
    text = group_program(
        "UnpairedPop",
        SIG_32,
        ARGS,
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
        ],
        [
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], out)",
        ],
    )
    x = randn(gen, 32, 64)
    t0 = time.monotonic()
    r = run(text, {"x": x, "out": torch.zeros(32, 64)}, {"out": x})
    elapsed = time.monotonic() - t0
    assert elapsed < crosscore.DEFAULT_GROUP_TIMEOUT_S, elapsed
    assert_error_at(r, line_of(text, "pl.tile.tpop_from_aic(split=0)"))
    assert r.error is not None
    kind = r.error.kind.lower()
    assert any(w in kind for w in ("cross-core", "deadlock", "timeout")), r.error.kind
    assert r.error.detail.get("lane") == 0
    depths = r.error.detail.get("queue_depths")
    assert isinstance(depths, dict) and depths, r.error.detail
    assert any("to_aiv" in k for k in depths), depths
    assert all(isinstance(v, int) for v in depths.values())
    json.dumps(r.to_json())  # the detail is JSON-serialisable


def test_crossed_pops_deadlock_is_reported_on_a_pop_line(gen: torch.Generator, short_group_timeout: None) -> None:
    text = group_program(
        "CrossedPops",
        SIG_32,
        ARGS,
        RET_32,
        [
            "r__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.tpop_from_aiv(split=0)",
            "pl.tile.tpush_to_aiv(r__tile, split=0)",
        ],
        [
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "pl.tile.tpush_to_aic(t__tile, split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], out)",
        ],
    )
    t0 = time.monotonic()
    r = run(text, {"x": torch.zeros(32, 64), "out": torch.zeros(32, 64)}, {"out": torch.zeros(32, 64)})
    assert time.monotonic() - t0 < crosscore.DEFAULT_GROUP_TIMEOUT_S
    assert r.status == ERROR and r.error is not None
    assert r.error.line in (line_of(text, "pl.tile.tpop_from_aiv(split=0)"), line_of(text, "pl.tile.tpop_from_aic(split=0)"))
    assert "deadlock" in r.error.kind or "timeout" in r.error.kind


def test_pop_outside_any_group_is_a_deadlock_on_its_line(short_group_timeout: None) -> None:
    """An AIV kernel called directly from the orchestration: no AIC exists to push."""
    text = program(
        "LonePop",
        fn(
            AIV_DECO,
            f"k({SIG_32}) -> {RET_32}",
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], out)",
            "return out__ssa_v1",
        ),
        fn(ORCH_DECO, f"main(self, {SIG_32}) -> {RET_32}", f"out__ssa_v1: {RET_32} = self.k(x, out)", "return out__ssa_v1"),
    )
    t0 = time.monotonic()
    r = run(text, {"x": torch.zeros(32, 64), "out": torch.zeros(32, 64)}, {"out": torch.zeros(32, 64)})
    assert time.monotonic() - t0 < crosscore.DEFAULT_GROUP_TIMEOUT_S
    assert_error_at(r, line_of(text, "tpop_from_aic"), "deadlock", "cross-core")


def test_aic_thread_failure_is_on_the_aic_line_and_cancels_the_waiting_lane(gen: torch.Generator, short_group_timeout: None) -> None:
    text = group_program(
        "AicFails",
        SIG_32,
        ARGS,
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            # 2048 elements as [31, 64]: a failure only the run meets (the rows come from a scalar)
            "n: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)",
            "b__tile: pl.Tile[[31, 64], pl.FP32, pl.Mem.Mat] = pl.tile.reshape(x__tile, [n - 1, 64])",
            "c__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.add(x__tile, x__tile)",
            "pl.tile.tpush_to_aiv(c__tile, split=0)",
        ],
        [
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], out)",
        ],
    )
    t0 = time.monotonic()
    r = run(text, {"x": randn(gen, 32, 64), "out": torch.zeros(32, 64)}, {"out": torch.zeros(32, 64)})
    assert time.monotonic() - t0 < crosscore.DEFAULT_GROUP_TIMEOUT_S
    assert_error_at(r, line_of(text, "pl.tile.reshape(x__tile, [n - 1, 64])"))
    assert r.error is not None and r.error.detail.get("role") == "aic"


def test_run_timeout_is_an_error_not_a_hang() -> None:
    sig = f"x: {t(4, 4)}, y: {out_t(4, 4)}"
    text = program(
        "Slow",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(4, 4)}",
            "k: pl.Scalar[pl.INDEX] = 0",
            "for i in pl.range(300000000):",  # seconds of Python on any machine: the timeout stops it
            "    k: pl.Scalar[pl.INDEX] = k + 1",
            "y: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(y, x, [0, 0])",
            "return y",
        ),
    )
    x = torch.randn(4, 4)
    t0 = time.monotonic()
    r = run(text, {"x": x, "y": torch.zeros(4, 4)}, {"y": x}, timeout=0.05)
    assert time.monotonic() - t0 < 2.0
    assert r.status == ERROR and r.error is not None
    assert "timeout" in r.error.kind.lower() or "within" in r.error.message
    # where the run was when its time ran out: in the loop (its header or its body), on the IR's line
    loop = line_of(text, "for i in pl.range(300000000):")
    assert r.error.line in (loop, loop + 1), (r.error.line, loop)
    assert "stuck_in" not in r.error.detail  # the program's own loop, not our code
    # which loop did not end, and how far it had got (a pass that turned 4 trips into 3e8 says so)
    got = re.search(rf"the loop on line {loop} was at i = (\d+) of range\(300000000\)", r.error.message)
    assert got is not None and 0 <= int(got.group(1)) < 300000000, r.error.message
    assert r.error.detail["stuck_loops"] in r.error.message


def test_a_run_stopped_inside_our_code_says_where() -> None:
    """A run whose time runs out inside a kernel (not the script's own loop) names that frame: a
    hang in the runtime is ours to fix, and the message says where it was."""
    from pypto_lsp.exec.codegen import GeneratedCode
    from pypto_lsp.validate.engine import _run_with_timeout
    from pypto_lsp.validate.run_errors import error_info

    def stuck() -> None:
        while True:
            time.sleep(0.001)  # a kernel waiting on something that never comes

    with pytest.raises(TimeoutError) as ei:
        _run_with_timeout(stuck, 0.05)
    err = error_info(ei.value, GeneratedCode(source="", filename="<none>", line_map=[], entry=None, functions={}))
    assert "test_engine_ir.py" in err.detail["stuck_in"] and "in stuck" in err.detail["stuck_in"]
    assert err.message.endswith(f"stopped in {err.detail['stuck_in']}")


# ---------------------------------------------------------------------- runtime shape mismatch


def test_runtime_shape_mismatch_is_reported_on_the_load_line(gen: torch.Generator) -> None:
    """The load's shapes come from a runtime value (16 rows) while the annotation says 32:
    the static checker cannot see it; the run stops on that line."""
    sig = f"x: {t(16, 64)}, out: {out_t(16, 64)}"
    text = program(
        "ShapeMismatch",
        fn(
            INCORE_DECO,
            f"k({sig}) -> {t(16, 64)}",
            "rows: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)",
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [rows, 64], [rows, 64], target_memory=pl.Mem.Vec)",
            "y__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(x__tile)",
            "out__ssa_v1: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(y__tile, [0, 0], out)",
            "return out__ssa_v1",
        ),
        fn(ORCH_DECO, f"main(self, {sig}) -> {t(16, 64)}", f"out__ssa_v1: {t(16, 64)} = self.k(x, out)", "return out__ssa_v1"),
    )
    x = randn(gen, 16, 64)
    r = run(text, {"x": x, "out": torch.zeros(16, 64)}, {"out": torch.exp(x)})
    assert_error_at(r, line_of(text, "x__tile: pl.Tile"), "shape")
    assert r.error is not None and not r.error.kind.startswith("static"), r.error
    assert "32" in r.error.message and "16" in r.error.message


def test_static_shape_contradiction_is_reported_on_the_load_line(gen: torch.Generator) -> None:
    sig = f"x: {t(16, 64)}, out: {out_t(16, 64)}"
    text = program(
        "StaticShapeMismatch",
        fn(
            INCORE_DECO,
            f"k({sig}) -> {t(16, 64)}",
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)",
            "out__ssa_v1: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(x__tile, [0, 0], out)",
            "return out__ssa_v1",
        ),
        fn(ORCH_DECO, f"main(self, {sig}) -> {t(16, 64)}", f"out__ssa_v1: {t(16, 64)} = self.k(x, out)", "return out__ssa_v1"),
    )
    x = randn(gen, 16, 64)
    r = run(text, {"x": x, "out": torch.zeros(16, 64)}, {"out": x})
    assert_error_at(r, line_of(text, "x__tile: pl.Tile"), "shape")


# ---------------------------------------------------------------------- NaN outputs


def _nan_program(op_line: str) -> str:
    sig = f"x: {t(8, 16)}, out: {out_t(8, 16)}"
    return program(
        "NanOut",
        fn(
            INCORE_DECO,
            f"k({sig}) -> {t(8, 16)}",
            "x__tile: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 16], [8, 16], target_memory=pl.Mem.Vec)",
            op_line,
            "out__ssa_v1: pl.Tensor[[8, 16], pl.FP32] = pl.tile.store(y__tile, [0, 0], out)",
            "return out__ssa_v1",
        ),
        fn(ORCH_DECO, f"main(self, {sig}) -> {t(8, 16)}", f"out__ssa_v1: {t(8, 16)} = self.k(x, out)", "return out__ssa_v1"),
    )


@pytest.mark.parametrize(
    "op_line",
    [
        "y__tile: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.tile.log(x__tile)",
        "y__tile: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.tile.divs(pl.tile.muls(x__tile, 0.0), 0.0)",
    ],
    ids=["log-of-negative", "zero-over-zero"],
)
def test_nan_outputs_are_a_clean_fail(op_line: str) -> None:
    x = -torch.rand(8, 16) - 0.5  # all negative
    golden = torch.log(x.abs())  # what a correct kernel would give
    r = run(_nan_program(op_line), {"x": x, "out": torch.zeros(8, 16)}, {"out": golden})
    assert r.status == FAIL, (r.status, r.error)
    assert r.error is None
    tr = r.tensors["out"]
    assert not tr.passed
    assert tr.nan_count == 8 * 16
    assert math.isnan(tr.max_abs_diff)
    js = r.to_json()
    assert js["tensors"]["out"]["max_abs_diff"] is None and js["tensors"]["out"]["nan_count"] == 128
    json.dumps(js, allow_nan=False)  # strict JSON: no NaN leaks out


def test_nan_in_output_and_golden_is_still_a_fail() -> None:
    """allclose(equal_nan=False) as in the reference: NaN never matches, even NaN."""
    x = -torch.rand(8, 16) - 0.5
    r = run(
        _nan_program("y__tile: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.tile.log(x__tile)"),
        {"x": x, "out": torch.zeros(8, 16)},
        {"out": torch.log(x)},
    )
    assert r.status == FAIL and r.tensors["out"].nan_count == 128


def test_partial_nan_keeps_the_finite_diff_information() -> None:
    x = torch.rand(8, 16) + 0.5
    x[0, 0] = -1.0
    r = run(
        _nan_program("y__tile: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.tile.log(x__tile)"),
        {"x": x, "out": torch.zeros(8, 16)},
        {"out": torch.log(x.abs())},
    )
    assert r.status == FAIL and r.tensors["out"].nan_count == 1
    assert r.to_json()["tensors"]["out"]["pass"] is False


def test_matching_infinities_pass() -> None:
    """x / 0.0 gives +-inf; a golden with the same infinities is a pass (allclose treats equal infs as equal)."""
    x = torch.rand(8, 16) + 0.5
    x[::2] *= -1
    r = run(
        _nan_program("y__tile: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.tile.divs(x__tile, 0.0)"),
        {"x": x, "out": torch.zeros(8, 16)},
        {"out": x / 0.0},
    )
    assert r.status == PASS and r.tensors["out"].nan_count == 0
    json.dumps(r.to_json(), allow_nan=False)


# ---------------------------------------------------------------------- SPMD


def test_spmd_loop_runs_every_block(gen: torch.Generator) -> None:
    sig = f"a: {t(64, 64)}, c: {out_t(64, 64)}"
    text = program(
        "Spmd4",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(64, 64)}",
            'for b in pl.spmd(4, name_hint="blk_spmd"):',
            "    bid: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()",
            "    t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [bid * 16, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)",
            "    pl.tile.store(pl.tile.exp(t), [bid * 16, 0], c)",
            "return c",
        ),
    )
    a = randn(gen, 64, 64)
    assert_pass(run(text, {"a": a, "c": torch.zeros(64, 64)}, {"c": torch.exp(a)}))


def test_spmd_call_with_core_num_runs_every_block(gen: torch.Generator) -> None:
    sig = "a__ssa_v0: pl.Tensor[[64, 64], pl.FP32], c__ssa_v0: pl.Out[pl.Tensor[[64, 64], pl.FP32]]"
    text = program(
        "SpmdCall",
        fn(
            INCORE_DECO,
            f"blk({sig}) -> {t(64, 64)}",
            "bid__ssa_v0: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()",
            "t__ssa_v0: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a__ssa_v0, [bid__ssa_v0 * 16, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)",
            "t__tmp_v0: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.adds(t__ssa_v0, 1.0)",
            "c__store: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(t__tmp_v0, [bid__ssa_v0 * 16, 0], c__ssa_v0)",
            "return c__ssa_v0",
        ),
        fn(
            "@pl.function(type=pl.FunctionType.Spmd)",
            f"blk_spmd(self, {sig}) -> {t(64, 64)}",
            "c__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = self.blk(a__ssa_v0, c__ssa_v0)",
            "return c__ssa_v0",
        ),
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(64, 64)}",
            'c__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = self.blk_spmd(a__ssa_v0, c__ssa_v0, attrs={"core_num": 4})',
            "return c__ssa_v1",
        ),
    )
    a = randn(gen, 64, 64)
    assert_pass(run(text, {"a": a, "c": torch.zeros(64, 64)}, {"c": a + 1}))


def test_spmd_with_scope_without_index_runs_every_block(gen: torch.Generator) -> None:
    sig = f"a: {t(64, 64)}, c: {out_t(64, 64)}"
    text = program(
        "SpmdWith",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(64, 64)}",
            'with pl.spmd(4, name_hint="blk_spmd"):',
            "    bid: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()",
            "    t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [bid * 16, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)",
            "    pl.tile.store(pl.tile.neg(t), [bid * 16, 0], c)",
            "return c",
        ),
    )
    a = randn(gen, 64, 64)
    assert_pass(run(text, {"a": a, "c": torch.zeros(64, 64)}, {"c": -a}))


def test_group_call_with_core_num_runs_every_block_in_every_lane(gen: torch.Generator) -> None:
    sig = f"x: {t(64, 64)}, out: {out_t(64, 64)}"
    text = program(
        "SpmdGroup",
        fn(
            AIC_DECO,
            f"g_aic({sig})",
            "bid: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()",
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [bid * 32, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=1)",
        ),
        fn(
            AIV_DECO,
            f"g_aiv({sig}) -> {t(64, 64)}",
            'pl.func_attr({"split": pl.SplitMode.UP_DOWN, "dual_aiv_dispatch": True})',
            "bid: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()",
            "subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()",
            "t__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=1)",
            "u__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(t__tile, 2.0)",
            "out__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(u__tile, [bid * 32 + subblock_idx * 16, 0], out)",
            "return out__ssa_v1",
        ),
        fn(
            GROUP_DECO,
            f"g({sig}) -> {t(64, 64)}",
            "self.g_aic(x, out)",
            "out__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = self.g_aiv(x, out)",
            "return out__ssa_v1",
        ),
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(64, 64)}",
            'out__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = self.g(x, out, attrs={"core_num": 2})',
            "return out__ssa_v1",
        ),
    )
    x = randn(gen, 64, 64)
    assert_pass(run(text, {"x": x, "out": torch.zeros(64, 64)}, {"out": x * 2}))


# ---------------------------------------------------------------------- partial (boundary) tiles


def test_partial_tiles_write_only_their_valid_rows(gen: torch.Generator) -> None:
    """100 rows in 64-row chunks: the second chunk has 36 valid rows; a 128-row output keeps its
    rows 100.. untouched (the reference would store the 64-row padded tile, exp(0) = 1 there)."""
    sig = f"x: {t(100, 64)}, y: {out_t(128, 64)}"
    tile = "pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[vr, 64])]"
    text = program(
        "PartialTiles",
        fn(
            INCORE_DECO,
            f"k({sig}) -> {t(128, 64)}",
            "for i, (y__iter_v1,) in pl.range(0, 2, init_values=(y,)):",
            "    r0: pl.Scalar[pl.INDEX] = i * 64",
            "    vr: pl.Scalar[pl.INDEX] = pl.min(100 - r0, 64)",
            f"    x__tile: {tile} = pl.tile.load(x, [r0, 0], [64, 64], [vr, 64], target_memory=pl.Mem.Vec)",
            f"    e__tile: {tile} = pl.tile.exp(x__tile)",
            "    y__ssa_v2: pl.Tensor[[128, 64], pl.FP32] = pl.tile.store(e__tile, [r0, 0], y__iter_v1)",
            "    y__rv_v3: pl.Tensor[[128, 64], pl.FP32] = pl.yield_(y__ssa_v2)",
            "return y__rv_v3",
        ),
        fn(ORCH_DECO, f"main(self, {sig}) -> {t(128, 64)}", f"y__ssa_v1: {t(128, 64)} = self.k(x, y)", "return y__ssa_v1"),
    )
    x = randn(gen, 100, 64)
    y0 = torch.full((128, 64), -7.0)
    exp = y0.clone()
    exp[:100] = torch.exp(x)
    assert_pass(run(text, {"x": x, "y": y0}, {"y": exp}))


def test_partial_tile_padding_is_zero_inside_the_box(gen: torch.Generator) -> None:
    """A row reduction over a partial tile sees zeros past the valid rows (reference §4.1 step 4)."""
    sig = f"x: {t(100, 64)}, s: {out_t(64, 1)}"
    text = program(
        "PartialPad",
        fn(
            INCORE_DECO,
            f"k({sig}) -> {t(64, 1)}",
            "x__tile: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[36, 64])] = pl.tile.load(x, [64, 0], [64, 64], [36, 64], target_memory=pl.Mem.Vec)",
            "f__tile: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.fillpad(x__tile, pad_value=pl.PadValue.zero)",
            "tmp__tile: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.create([64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)",
            "r__tile: pl.Tile[[64, 1], pl.FP32, pl.Mem.Vec] = pl.tile.row_sum(f__tile, tmp__tile)",
            "s__ssa_v1: pl.Tensor[[64, 1], pl.FP32] = pl.tile.store(r__tile, [0, 0], s)",
            "return s__ssa_v1",
        ),
        fn(ORCH_DECO, f"main(self, {sig}) -> {t(64, 1)}", f"s__ssa_v1: {t(64, 1)} = self.k(x, s)", "return s__ssa_v1"),
    )
    x = randn(gen, 100, 64)
    exp = torch.zeros(64, 1)
    exp[:36, 0] = x[64:].sum(dim=1)
    r = run(text, {"x": x, "s": torch.full((64, 1), -7.0)}, {"s": exp})
    assert r.status == PASS, (r.error, r.tensors)


# ---------------------------------------------------------------------- control flow


def _kernel_program(name: str, sig: str, ret: str, out_name: str, body: list[str], args: str) -> str:
    return program(
        name,
        fn(INCORE_DECO, f"k({sig}) -> {ret}", *body),
        fn(ORCH_DECO, f"main(self, {sig}) -> {ret}", f"{out_name}__ssa_v9: {ret} = self.k({args})", f"return {out_name}__ssa_v9"),
    )


def test_pre_ssa_reassignment(gen: torch.Generator) -> None:
    sig = f"x: {t(16, 16)}, y: {out_t(16, 16)}"
    text = program(
        "PreSsa",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(16, 16)}",
            "with pl.at(level=pl.Level.CORE_GROUP):",
            "    a: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.adds(x, 1.0)",
            "    a: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.muls(a, 2.0)",
            "    for i in pl.range(3):",
            "        a: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.adds(a, 1.0)",
            "    y: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.assemble(y, a, [0, 0])",
            "return y",
        ),
    )
    x = randn(gen, 16, 16)
    assert_pass(run(text, {"x": x, "y": torch.zeros(16, 16)}, {"y": (x + 1) * 2 + 3}))


def test_ssa_for_with_iter_args_accumulates(gen: torch.Generator) -> None:
    sig = f"x: {t(64, 16)}, y: {out_t(16, 16)}"
    body = [
        "acc__tile: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.full([16, 16], dtype=pl.FP32, value=0.0)",
        "for i, (acc__iter_v1,) in pl.range(0, 64, 16, init_values=(acc__tile,)):",
        "    x__tile: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [i, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        "    acc__ssa_v2: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc__iter_v1, x__tile)",
        "    acc__rv_v3: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.yield_(acc__ssa_v2)",
        "y__ssa_v1: pl.Tensor[[16, 16], pl.FP32] = pl.tile.store(acc__rv_v3, [0, 0], y)",
        "return y__ssa_v1",
    ]
    text = _kernel_program("SsaFor", sig, t(16, 16), "y", body, "x, y")
    x = randn(gen, 64, 16)
    assert_pass(run(text, {"x": x, "y": torch.zeros(16, 16)}, {"y": x.view(4, 16, 16).sum(0)}))


def test_ssa_for_yield_permuting_two_carried_values_is_simultaneous(gen: torch.Generator) -> None:
    """``a, b = pl.yield_(b, a)`` swaps (the reference assigns sequentially and gets it wrong)."""
    sig = f"x: {t(8, 8)}, z: {t(8, 8)}, y: {out_t(8, 8)}"
    body = [
        "p__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 8], [8, 8], target_memory=pl.Mem.Vec)",
        "q__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(z, [0, 0], [8, 8], [8, 8], target_memory=pl.Mem.Vec)",
        "for i, (a__iter_v1, b__iter_v1) in pl.range(0, 3, init_values=(p__tile, q__tile)):",
        "    a__rv_v2, b__rv_v2 = pl.yield_(b__iter_v1, a__iter_v1)",
        # three swaps: a ends as z; then a - 2 * b = z - 2 x
        "d__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.sub(a__rv_v2, pl.tile.muls(b__rv_v2, 2.0))",
        "y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = pl.tile.store(d__tile, [0, 0], y)",
        "return y__ssa_v1",
    ]
    text = _kernel_program("SsaSwap", sig, t(8, 8), "y", body, "x, z, y")
    x, z = randn(gen, 8, 8), randn(gen, 8, 8)
    assert_pass(run(text, {"x": x, "z": z, "y": torch.zeros(8, 8)}, {"y": z - 2 * x}))


def test_ssa_for_zero_trips_gives_the_init_values(gen: torch.Generator) -> None:
    sig = f"x: {t(8, 8)}, y: {out_t(8, 8)}"
    body = [
        "p__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 8], [8, 8], target_memory=pl.Mem.Vec)",
        "for i, (a__iter_v1,) in pl.range(4, 4, init_values=(p__tile,)):",
        "    a__ssa_v2: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.muls(a__iter_v1, 100.0)",
        "    a__rv_v3: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.yield_(a__ssa_v2)",
        "y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = pl.tile.store(a__rv_v3, [0, 0], y)",
        "return y__ssa_v1",
    ]
    x = randn(gen, 8, 8)
    assert_pass(run(_kernel_program("ZeroTrips", sig, t(8, 8), "y", body, "x, y"), {"x": x, "y": torch.zeros(8, 8)}, {"y": x}))


def test_ssa_while_with_cond(gen: torch.Generator) -> None:
    sig = f"x: {t(8, 8)}, y: {out_t(8, 8)}"
    body = [
        "p__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 8], [8, 8], target_memory=pl.Mem.Vec)",
        "for (k__iter_v1, a__iter_v1) in pl.while_(init_values=(0, p__tile)):",
        "    pl.cond(k__iter_v1 < 5)",
        "    a__ssa_v2: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.adds(a__iter_v1, 2.0)",
        "    k__rv_v2, a__rv_v2 = pl.yield_(k__iter_v1 + 1, a__ssa_v2)",
        "y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = pl.tile.store(a__rv_v2, [0, 0], y)",
        "return y__ssa_v1",
    ]
    x = randn(gen, 8, 8)
    assert_pass(run(_kernel_program("SsaWhile", sig, t(8, 8), "y", body, "x, y"), {"x": x, "y": torch.zeros(8, 8)}, {"y": x + 10}))


def test_ssa_while_false_at_entry_runs_zero_times(gen: torch.Generator) -> None:
    sig = f"x: {t(8, 8)}, y: {out_t(8, 8)}"
    body = [
        "p__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 8], [8, 8], target_memory=pl.Mem.Vec)",
        "for (k__iter_v1, a__iter_v1) in pl.while_(init_values=(7, p__tile)):",
        "    pl.cond(k__iter_v1 < 5)",
        "    a__ssa_v2: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.adds(a__iter_v1, 2.0)",
        "    k__rv_v2, a__rv_v2 = pl.yield_(k__iter_v1 + 1, a__ssa_v2)",
        "y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = pl.tile.store(a__rv_v2, [0, 0], y)",
        "return y__ssa_v1",
    ]
    x = randn(gen, 8, 8)
    assert_pass(run(_kernel_program("SsaWhile0", sig, t(8, 8), "y", body, "x, y"), {"x": x, "y": torch.zeros(8, 8)}, {"y": x}))


def test_if_else_with_yields(gen: torch.Generator) -> None:
    sig = f"x: {t(8, 8)}, y: {out_t(16, 8)}"
    body = [
        "for i, (y__iter_v1,) in pl.range(0, 2, init_values=(y,)):",
        "    p__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 8], [8, 8], target_memory=pl.Mem.Vec)",
        "    if i == 0:",
        "        s__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.muls(p__tile, 2.0)",
        "        r__phi_v1: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.yield_(s__tile)",
        "    else:",
        "        n__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.neg(p__tile)",
        "        r__phi_v1: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.yield_(n__tile)",
        "    y__ssa_v2: pl.Tensor[[16, 8], pl.FP32] = pl.tile.store(r__phi_v1, [i * 8, 0], y__iter_v1)",
        "    y__rv_v3: pl.Tensor[[16, 8], pl.FP32] = pl.yield_(y__ssa_v2)",
        "return y__rv_v3",
    ]
    x = randn(gen, 8, 8)
    text = _kernel_program("IfElse", sig, t(16, 8), "y", body, "x, y")
    assert_pass(run(text, {"x": x, "y": torch.zeros(16, 8)}, {"y": torch.cat([x * 2, -x])}))


def test_break_leaves_the_loop(gen: torch.Generator) -> None:
    sig = f"x: {t(8, 8)}, y: {out_t(8, 8)}"
    text = program(
        "BreakLoop",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(8, 8)}",
            "a: pl.Tensor[[8, 8], pl.FP32] = pl.tensor.adds(x, 0.0)",
            "for i in pl.range(10):",
            "    if i == 3:",
            "        break",
            "    a: pl.Tensor[[8, 8], pl.FP32] = pl.tensor.adds(a, 1.0)",
            "y: pl.Tensor[[8, 8], pl.FP32] = pl.tensor.assemble(y, a, [0, 0])",
            "return y",
        ),
    )
    x = randn(gen, 8, 8)
    assert_pass(run(text, {"x": x, "y": torch.zeros(8, 8)}, {"y": x + 3}))


# ---------------------------------------------------------------------- runtime error location


def test_error_inside_nested_loops_is_on_that_line(gen: torch.Generator) -> None:
    """An add whose operand shapes disagree, reached only when ``j == 2`` in a nested loop:
    the static checker cannot know, torch raises at run time; the error is on that line."""
    sig = f"x: {t(16, 16)}, y: {out_t(16, 16)}"
    text = program(
        "NestedError",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(16, 16)}",
            "a: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.adds(x, 0.0)",
            "for i in pl.range(2):",
            "    for j in pl.range(3):",
            "        if j == 2:",
            "            b: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.add(a, pl.tensor.slice(x, [8, 8], [0, 0]))",
            "        a: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.adds(a, 1.0)",
            "y: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.assemble(y, a, [0, 0])",
            "return y",
        ),
    )
    r = run(text, {"x": randn(gen, 16, 16), "y": torch.zeros(16, 16)}, {"y": torch.zeros(16, 16)})
    assert_error_at(r, line_of(text, "pl.tensor.slice(x, [8, 8]"))


def _one_kernel(name: str, *middle: str) -> str:
    """A 16x16 FP32 kernel: ``x`` loaded as ``a__tile``, the ``middle`` lines making ``c__tile``,
    stored to ``y``; the orchestrator calls it once."""
    sig = f"x: {t(16, 16)}, y: {out_t(16, 16)}"
    return program(
        name,
        fn(
            INCORE_DECO,
            f"k({sig}) -> {t(16, 16)}",
            "a__tile: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
            *middle,
            "y__ssa_v1: pl.Tensor[[16, 16], pl.FP32] = pl.tile.store(c__tile, [0, 0], y)",
            "return y__ssa_v1",
        ),
        fn(ORCH_DECO, f"main(self, {sig}) -> {t(16, 16)}", f"y__ssa_v1: {t(16, 16)} = self.k(x, y)", "return y__ssa_v1"),
    )


def test_an_op_torch_has_no_kernel_for_is_found_before_the_run(gen: torch.Generator) -> None:
    """A bitwise op on floats, which torch has no kernel for (its NotImplementedError names
    "bitwise_and_cpu", found by an op-swap fuzz): PyPTO's type deduction takes integers only, and so
    does the static check now, on the op's line. (torch's words in a run are prefixed with the IR
    op whatever the exception: ``test_error_inside_a_called_kernel_is_on_the_kernel_line``.)"""
    text = _one_kernel("NoKernel", "c__tile: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.ands(a__tile, 1)")
    r = run(text, {"x": randn(gen, 16, 16), "y": torch.zeros(16, 16)}, {"y": torch.zeros(16, 16)})
    assert_error_at(r, line_of(text, "pl.tile.ands(a__tile, 1)"))
    assert r.error is not None and r.error.kind == "static:integer-only", r.error
    assert r.error.message == "'tile.ands' takes integer values, got 'a__tile' of dtype FP32", r.error.message


def test_error_inside_a_called_kernel_is_on_the_kernel_line(gen: torch.Generator) -> None:
    text = _one_kernel(
        "KernelError",
        # 256 elements as [15, 16]: a failure only the run meets (the rows come from a scalar;
        # with literal rows it is the static reshape-size)
        "n: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)",
        "b__tile: pl.Tile[[15, 16], pl.FP32, pl.Mem.Vec] = pl.tile.reshape(a__tile, [n - 1, 16])",
        "c__tile: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.add(a__tile, a__tile)",
    )
    r = run(text, {"x": randn(gen, 16, 16), "y": torch.zeros(16, 16)}, {"y": torch.zeros(16, 16)})
    assert_error_at(r, line_of(text, "pl.tile.reshape(a__tile, [n - 1, 16])"))
    assert r.error is not None and not r.error.kind.startswith("static"), r.error
    # torch's words name its own function: the message says which IR op it was
    assert r.error.message.startswith("tile.reshape: "), r.error.message
    assert r.error.detail["op"] == "tile.reshape"
    assert r.error.column is not None and r.error.column >= 1
    # the orchestration's call line is not where it failed
    assert r.error.line != line_of(text, "self.k(x, y)")


def test_error_inside_a_group_kernel_thread_is_on_the_kernel_line(gen: torch.Generator) -> None:
    text = group_program(
        "ThreadError",
        SIG_32,
        ARGS,
        RET_32,
        [
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=0)",
        ],
        [
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "n: pl.Scalar[pl.INDEX] = pl.tensor.dim(out, 0)",
            "b__tile: pl.Tile[[31, 64], pl.FP32, pl.Mem.Vec] = pl.tile.reshape(t__tile, [n - 1, 64])",
            "c__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(t__tile, t__tile)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(c__tile, [0, 0], out)",
        ],
    )
    r = run(text, {"x": randn(gen, 32, 64), "out": torch.zeros(32, 64)}, {"out": torch.zeros(32, 64)})
    assert_error_at(r, line_of(text, "pl.tile.reshape(t__tile, [n - 1, 64])"))
    assert r.error is not None and not r.error.kind.startswith("static"), r.error


# ---------------------------------------------------------------------- entry resolution


def _two_orchestrations(first: str, second: str) -> str:
    sig = f"x: {t(4, 4)}, y: {out_t(4, 4)}"
    return program(
        "TwoEntries",
        fn(
            ORCH_DECO,
            f"{first}(self, {sig}) -> {t(4, 4)}",
            "y: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(y, pl.tensor.muls(x, 2.0), [0, 0])",
            "return y",
        ),
        fn(
            ORCH_DECO,
            f"{second}(self, {sig}) -> {t(4, 4)}",
            "y: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(y, pl.tensor.muls(x, 3.0), [0, 0])",
            "return y",
        ),
    )


def test_entry_is_the_first_orchestration_by_name_not_print_order() -> None:
    x = torch.randn(4, 4)
    # printed order: zeta (x*2) then alpha (x*3): alpha wins by name
    text = _two_orchestrations("zeta", "alpha")
    assert_pass(run(text, {"x": x, "y": torch.zeros(4, 4)}, {"y": x * 3}))


def test_entry_override() -> None:
    x = torch.randn(4, 4)
    text = _two_orchestrations("zeta", "alpha")
    assert_pass(run(text, {"x": x, "y": torch.zeros(4, 4)}, {"y": x * 2}, entry="zeta"))


def test_entry_override_to_a_missing_function_is_an_error() -> None:
    r = run(_two_orchestrations("zeta", "alpha"), {"x": torch.zeros(4, 4), "y": torch.zeros(4, 4)}, {}, entry="nope")
    assert r.status == ERROR and r.error is not None and "nope" in r.error.message


def test_no_orchestration_among_several_functions_is_an_error() -> None:
    sig = f"x: {t(4, 4)}, y: {out_t(4, 4)}"
    text = program(
        "NoEntry",
        fn(INCORE_DECO, f"a({sig}) -> {t(4, 4)}", "return y"),
        fn(INCORE_DECO, f"b({sig}) -> {t(4, 4)}", "return y"),
    )
    r = run(text, {"x": torch.zeros(4, 4), "y": torch.zeros(4, 4)}, {"y": torch.zeros(4, 4)})
    assert r.status == ERROR and r.error is not None
    assert "entry" in r.error.kind or "orchestration" in r.error.message.lower(), r.error


def test_single_function_program_is_its_own_entry() -> None:
    sig = f"x: {t(4, 4)}, y: {out_t(4, 4)}"
    text = program(
        "OneFn",
        fn(
            "@pl.function",
            f"only(self, {sig}) -> {t(4, 4)}",
            "y: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(y, pl.tensor.exp(x), [0, 0])",
            "return y",
        ),
    )
    x = torch.randn(4, 4)
    assert_pass(run(text, {"x": x, "y": torch.zeros(4, 4)}, {"y": torch.exp(x)}))


# ---------------------------------------------------------------------- parameter name resolution


def test_ssa_suffixed_parameter_resolves_to_the_golden_key() -> None:
    sig = f"x__ssa_v0: {t(4, 4)}, out__ssa_v0: {out_t(4, 4)}"
    text = program(
        "SsaNames",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(4, 4)}",
            "out__ssa_v1: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(out__ssa_v0, pl.tensor.adds(x__ssa_v0, 1.0), [0, 0])",
            "return out__ssa_v1",
        ),
    )
    x = torch.randn(4, 4)
    assert_pass(run(text, {"x": x, "out": torch.zeros(4, 4)}, {"out": x + 1}))


def test_scalar_entry_parameter_from_a_0d_tensor() -> None:
    sig = f"n__ssa_v0: pl.Scalar[pl.INDEX], x: {t(4, 4)}, out: {out_t(4, 4)}"
    text = program(
        "ScalarArg",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(4, 4)}",
            "a: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.adds(x, 0.0)",
            "for i in pl.range(n__ssa_v0):",
            "    a: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.adds(a, 1.0)",
            "out: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(out, a, [0, 0])",
            "return out",
        ),
    )
    x = torch.randn(4, 4)
    assert_pass(run(text, {"n": torch.tensor(3), "x": x, "out": torch.zeros(4, 4)}, {"out": x + 3}))


@pytest.mark.parametrize("rows", [32, 48])
def test_dynamic_dims_are_bound_from_the_entry_tensors(rows: int) -> None:
    sig = "x: pl.Tensor[[M, 16], pl.FP32], out: pl.Out[pl.Tensor[[M, 16], pl.FP32]]"
    text = program(
        "DynDims",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> pl.Tensor[[M, 16], pl.FP32]",
            "for i in pl.range(0, M, 16):",
            "    a: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.slice(x, [16, 16], [i, 0])",
            "    out: pl.Tensor[[M, 16], pl.FP32] = pl.tensor.assemble(out, pl.tensor.muls(a, 2.0), [i, 0])",
            "return out",
        ),
        dynamic=("M",),
    )
    x = torch.randn(rows, 16)
    assert_pass(run(text, {"x": x, "out": torch.zeros(rows, 16)}, {"out": x * 2}))


def test_parameter_name_resolution_order() -> None:
    """The exact name first, then a trailing ``__ssa_vN`` stripped, then the part before ``__``."""
    sig = f"x__cg_ssa_v1: {t(4, 4)}, y__ssa_v3: {t(4, 4)}, out__ssa_v0: {out_t(4, 4)}"
    text = program(
        "Names",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(4, 4)}",
            "out__ssa_v1: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(out__ssa_v0, pl.tensor.sub(x__cg_ssa_v1, y__ssa_v3), [0, 0])",
            "return out__ssa_v1",
        ),
    )
    x, y, decoy = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4)
    assert_pass(run(text, {"x": x, "y": decoy, "y__ssa_v3": y, "out": torch.zeros(4, 4)}, {"out": x - y}))


def test_entry_override_can_run_a_kernel_directly(gen: torch.Generator) -> None:
    sig = f"x: {t(8, 8)}, y: {out_t(8, 8)}"
    text = program(
        "KernelEntry",
        fn(
            INCORE_DECO,
            f"k({sig}) -> {t(8, 8)}",
            "a__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 8], [8, 8], target_memory=pl.Mem.Vec)",
            "y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = pl.tile.store(pl.tile.exp(a__tile), [0, 0], y)",
            "return y__ssa_v1",
        ),
        fn(ORCH_DECO, f"main(self, {sig}) -> {t(8, 8)}", "return y"),
    )
    x = randn(gen, 8, 8)
    assert run(text, {"x": x, "y": torch.zeros(8, 8)}, {"y": torch.exp(x)}).status == FAIL  # main does nothing
    assert_pass(run(text, {"x": x, "y": torch.zeros(8, 8)}, {"y": torch.exp(x)}, entry="k"))


def test_unresolvable_parameter_is_a_golden_error_on_the_entry() -> None:
    sig = f"x: {t(4, 4)}, out: {out_t(4, 4)}"
    text = program("Missing", fn(ORCH_DECO, f"main(self, {sig}) -> {t(4, 4)}", "return out"))
    r = run(text, {"x": torch.zeros(4, 4)}, {"out": torch.zeros(4, 4)})
    assert r.status == ERROR and r.error is not None
    assert r.error.kind == "golden" and "out" in r.error.message
    assert r.error.line == line_of(text, "def main")


def test_no_expected_tensors_is_ran() -> None:
    sig = f"x: {t(4, 4)}, out: {out_t(4, 4)}"
    text = program("Ran", fn(ORCH_DECO, f"main(self, {sig}) -> {t(4, 4)}", "return out"))
    r = run(text, {"x": torch.zeros(4, 4), "out": torch.zeros(4, 4)}, {})
    assert r.status == RAN and r.error is None


def test_inputs_are_not_mutated_by_a_run() -> None:
    sig = f"x: {t(4, 4)}, out: {out_t(4, 4)}"
    text = program(
        "NoMutation",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(4, 4)}",
            "out: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(out, pl.tensor.adds(x, 1.0), [0, 0])",
            "return out",
        ),
    )
    x, out = torch.randn(4, 4), torch.zeros(4, 4)
    assert_pass(run(text, {"x": x, "out": out}, {"out": x + 1}))
    assert torch.equal(out, torch.zeros(4, 4))


# ---------------------------------------------------------------------- unsupported ops


def _sort_program(call_it: bool) -> str:
    sig = f"x: {t(1, 32)}, y: {out_t(1, 32)}"
    kernel = fn(
        INCORE_DECO,
        f"sorter({sig}) -> {t(1, 32)}",
        "s__tile: pl.Tile[[1, 32], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [1, 32], [1, 32], target_memory=pl.Mem.Vec)",
        "i__tile: pl.Tile[[1, 32], pl.UINT32, pl.Mem.Vec] = pl.tile.full([1, 32], dtype=pl.UINT32, value=0)",
        "r__tile: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.sort32(s__tile, i__tile)",
        "return y",
    )
    body = (
        "y__ssa_v1: pl.Tensor[[1, 32], pl.FP32] = self.sorter(x, y)"
        if call_it
        else "y__ssa_v1: pl.Tensor[[1, 32], pl.FP32] = pl.tensor.assemble(y, x, [0, 0])"
    )
    return program("Sorter", kernel, fn(ORCH_DECO, f"main(self, {sig}) -> {t(1, 32)}", body, "return y__ssa_v1"))


@pytest.fixture
def _sort32_without_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalogued op with no kernel: sort32 has one now, so the registry entry is taken away."""
    from pypto_lsp.exec.kernels import KERNELS

    monkeypatch.delitem(KERNELS, "tile.sort32")


@pytest.mark.usefixtures("_sort32_without_kernel")
def test_unsupported_op_in_an_uncalled_function_does_not_matter() -> None:
    x = torch.randn(1, 32)
    assert_pass(run(_sort_program(False), {"x": x, "y": torch.zeros(1, 32)}, {"y": x}))


@pytest.mark.usefixtures("_sort32_without_kernel")
def test_unsupported_op_when_reached_is_an_error_on_its_line() -> None:
    text = _sort_program(True)
    r = run(text, {"x": torch.randn(1, 32), "y": torch.zeros(1, 32)}, {"y": torch.zeros(1, 32)})
    assert_error_at(r, line_of(text, "pl.tile.sort32("), "unsupported", "sort32")


# ---------------------------------------------------------------------- injection safety

_INJECTIONS = [
    'x__tile: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = __import__("pathlib").Path(MARKER).write_text("pwned")',
    'x__tile: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [4, 4], [4, 4], target_memory=open(MARKER, "w"))',
    'x__tile: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = pl.tile.exp(pl.__class__.__init__.__globals__["__builtins__"]["open"](MARKER, "w"))',
    'x__tile: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = pl.tile.full([4, 4], dtype=pl.FP32, value=(lambda: __import__("os").system("touch MARKER"))())',
    'import os; os.system("touch MARKER")',
    "exec(\"open(MARKER, 'w')\")",
    "x__tile: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = pl.tile.full([4, 4], dtype=pl.FP32, value=eval(\"__import__('os').system('touch MARKER')\"))",
]


@pytest.mark.parametrize("line", _INJECTIONS, ids=[f"inj{i}" for i in range(len(_INJECTIONS))])
def test_injected_code_never_runs(tmp_path: Path, line: str) -> None:
    marker = tmp_path / "marker"
    stmt = line.replace("MARKER", repr(str(marker)) if "touch" not in line else str(marker))
    sig = f"x: {t(4, 4)}, y: {out_t(4, 4)}"
    text = program(
        "Inject",
        fn(ORCH_DECO, f"main(self, {sig}) -> {t(4, 4)}", stmt, "return y"),
    )
    r = run(text, {"x": torch.zeros(4, 4), "y": torch.zeros(4, 4)}, {"y": torch.zeros(4, 4)})
    assert not marker.exists()
    assert r.status == ERROR and r.error is not None, (r.status, r.error)


def test_injection_in_a_header_import_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    sig = f"x: {t(4, 4)}, y: {out_t(4, 4)}"
    text = program("Inject2", fn(ORCH_DECO, f"main(self, {sig}) -> {t(4, 4)}", "return y"))
    text = text.replace(
        "import pypto.language as pl\n", f"import pypto.language as pl\n__import__('pathlib').Path({str(marker)!r}).touch()\n"
    )
    r = run(text, {"x": torch.zeros(4, 4), "y": torch.zeros(4, 4)}, {"y": torch.zeros(4, 4)})
    assert not marker.exists()
    assert r.status == ERROR


def test_string_kwargs_are_escaped_not_spliced(tmp_path: Path) -> None:
    """A string literal built to break out of a naive ``'...'`` splice stays a string."""
    marker = tmp_path / "marker"
    payload = f"\"); __import__('pathlib').Path({str(marker)!r}).touch(); (\"'); __import__('os').system('touch {marker}'); ('\\n"
    sig = f"x: {t(4, 4)}, y: {out_t(4, 4)}"
    text = program(
        "StrKw",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> {t(4, 4)}",
            f"with pl.at(level=pl.Level.CORE_GROUP, name_hint={payload!r}):",
            "    y: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(y, pl.tensor.adds(x, 1.0), [0, 0])",
            "return y",
        ),
    )
    x = torch.randn(4, 4)
    r = run(text, {"x": x, "y": torch.zeros(4, 4)}, {"y": x + 1})
    assert not marker.exists()
    assert_pass(r)


def test_filename_with_carriage_return_is_not_executed(tmp_path: Path) -> None:
    """Regression: the file name went into the generated header comment with only '\\n' replaced; a bare
    '\\r' (legal in a Linux file name) ended the comment for compile() and the rest ran as code."""
    marker = tmp_path / "marker"
    sig = f"x: {t(4, 4)}, y: {out_t(4, 4)}"
    text = program(
        "FileNameInject",
        fn(ORCH_DECO, f"main(self, {sig}) -> {t(4, 4)}", "y: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(y, x, [0, 0])", "return y"),
    )
    x = torch.randn(4, 4)
    filename = f"dump\r__import__('pathlib').Path({str(marker)!r}).touch()"
    run_text(text, {"x": x, "y": torch.zeros(4, 4)}, {"y": x}, filename=filename)
    assert not marker.exists(), "code from the file name ran"


# ---------------------------------------------------------------------- state between runs / file encodings


def test_leftover_pushes_do_not_leak_into_the_next_run(gen: torch.Generator) -> None:
    pusher = program(
        "Pusher",
        fn(
            AIC_DECO,
            f"p({SIG_32})",
            "x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)",
            "pl.tile.tpush_to_aiv(x__tile, split=0)",
        ),
        fn(ORCH_DECO, f"main(self, {SIG_32}) -> {RET_32}", "self.p(x, out)", "return out"),
    )
    popper = program(
        "Popper",
        fn(
            AIV_DECO,
            f"q({SIG_32}) -> {RET_32}",
            "t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], out)",
            "return out__ssa_v1",
        ),
        fn(
            ORCH_DECO,
            f"main(self, {SIG_32}) -> {RET_32}",
            "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.q(x, out)",
            "return out__ssa_v1",
        ),
    )
    x = randn(gen, 32, 64)
    assert run(pusher, {"x": x, "out": torch.zeros(32, 64)}, {}).status == RAN
    r = run(popper, {"x": torch.zeros(32, 64), "out": torch.zeros(32, 64)}, {"out": x})
    assert_error_at(r, line_of(popper, "tpop_from_aic"), "deadlock")


def test_dump_with_a_utf8_bom_validates(tmp_path: Path) -> None:
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.library import validate_passes

    ex = Path(__file__).resolve().parents[2] / "examples" / "elementwise"
    dumps = tmp_path / "passes_dump"
    dumps.mkdir()
    src = ex / "passes_dump" / "11_after_ConvertTensorToTileOps.py"
    (dumps / src.name).write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    report = validate_passes(dumps, load_bundle(ex / "golden" / "inputs.pt"), load_bundle(ex / "golden" / "expected.pt"))
    assert report.files[0].status == PASS, report.files[0].error


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="Linux: /proc/self/task lists the process's threads")
def test_a_run_thread_has_ended_when_the_run_returns() -> None:
    """A process forked right after a run (the worker pool after the no-goldens reference) must not
    inherit a run thread still in its native exit handlers (MKL frees its buffers there, under a
    lock the child would spin on): the OS thread is gone once the run returns."""
    from pypto_lsp.validate.engine import _run_with_timeout

    a = torch.randn(1, 64, 64)
    tids: list[int] = []

    def run() -> None:
        tids.append(threading.get_native_id())
        torch.bmm(a, a)

    for _ in range(20):
        _run_with_timeout(run, 5.0)
        assert not os.path.exists(f"/proc/self/task/{tids[-1]}")


def test_a_groups_split_codes_are_read_once_and_never_mixed_up() -> None:
    """The checker, the lowering and the code generator each ask for a Group kernel's split codes
    (kept per function: ``ir.check.transport_split_codes``); the checker merges the AIC's and the
    AIV's into one dict, which must not become the AIC's kept codes."""
    from pypto_lsp.analysis.groups import group_metadata
    from pypto_lsp.ir.check import check_program, transport_split_codes
    from pypto_lsp.ir.parser import parse_text

    dump = Path(__file__).resolve().parents[2] / "examples" / "mixed_matmul" / "passes_dump" / "25_after_StampTfreeSplit.py"
    text = dump.read_text()
    lines = text.splitlines()
    pop = next(i for i, ln in enumerate(lines) if "tpop_from_aic(split=1)" in ln)
    lines[pop] = lines[pop].replace("split=1", "split=2")  # the AIV pops with another split code than the AIC pushes
    prog = parse_text("\n".join(lines) + "\n").program
    assert prog is not None
    for _ in range(2):
        conflicts = [d for d in check_program(prog) if d.code == "split-conflict"]
        assert len(conflicts) == 1 and "[1, 2]" in conflicts[0].message
    (group,) = group_metadata(prog).values()
    aic = prog.function(group[0])
    assert aic is not None and sorted(transport_split_codes(aic)) == [1]
