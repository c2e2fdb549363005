"""Lanes that meet inside one function: a mixed InCore function with ``"split_aiv": True``
(the form LowerAutoVectorSplit prints), hand-written for each split mode (UP_DOWN rows,
LEFT_RIGHT columns) x direction (``tile.aic_gather`` vector->cube, ``tile.aiv_shard``
cube->vector, both), inside a loop with two gathers per iteration, lane-local work before
and after each marker; run through :func:`run_text` against plain torch.
"""

from __future__ import annotations

import pytest
import torch

from pypto_lsp.exec import context, crosscore
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.report import PASS

INCORE = "@pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)"
ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"
M, K, N, CHUNKS = 32, 64, 64, 2
MODES = {1: "UP_DOWN", 2: "LEFT_RIGHT"}


def _tile(shape: tuple[int, int], mem: str) -> str:
    return f"pl.Tile[[{shape[0]}, {shape[1]}], pl.FP32, pl.Mem.{mem}]"


def _half(shape: tuple[int, int], code: int) -> tuple[int, int]:
    return (shape[0] // 2, shape[1]) if code == 1 else (shape[0], shape[1] // 2)


def _lane_off(shape: tuple[int, int], code: int, col0: str = "0") -> str:
    """Offsets of this lane's half of a ``shape`` block whose columns start at ``col0``."""
    h = _half(shape, code)
    if code == 1:
        return f"[0 + subblock_idx * {h[0]}, {col0}]"
    return f"[0, {col0} + subblock_idx * {h[1]}]"


def split_program(code: int, gather: bool, shard: bool) -> str:
    """out[:, chunk] = c[:, chunk] + (A + 1) @ (2 * B[:, chunk]) (``gather``: the lanes load
    and scale the operands, the cube gets them joined; else the cube loads them itself;
    ``shard``: each lane adds its half of the product to c and stores it; else the cube
    stores the whole product plus c loaded by the cube)."""
    a_h, b_h, t_h = _half((M, K), code), _half((K, N), code), _half((M, N), code)
    body = [f'pl.func_attr({{"split": pl.SplitMode.{MODES[code]}, "split_aiv": True}})']
    body.append("subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()")
    body.append(f"for nb__idx_v0, (c__iter_v1,) in pl.range({CHUNKS}, init_values=(c__ssa_v0,)):")
    loop = [f"n0__ssa_v0: pl.Scalar[pl.INDEX] = nb__idx_v0 * {N}"]
    if shard:  # lane-local work before the gathers
        loop.append(
            f"c_prev__tile: {_tile(t_h, 'Vec')} = pl.tile.load(c__iter_v1, {_lane_off((M, N), code, 'n0__ssa_v0')}, "
            f"[{t_h[0]}, {t_h[1]}], [{t_h[0]}, {t_h[1]}], target_memory=pl.Mem.Vec)"
        )
    if gather:
        loop += [
            f"a__tile: {_tile(a_h, 'Vec')} = pl.tile.load(a__ssa_v0, {_lane_off((M, K), code)}, [{a_h[0]}, {a_h[1]}], "
            f"[{a_h[0]}, {a_h[1]}], target_memory=pl.Mem.Vec)",
            f"a1__tile: {_tile(a_h, 'Vec')} = pl.tile.adds(a__tile, 1.0)",
            f"a_mat: {_tile((M, K), 'Mat')} = pl.tile.aic_gather(a1__tile, split={code})",
            # lane-local work between two gathers of one iteration
            f"b__tile: {_tile(b_h, 'Vec')} = pl.tile.load(b__ssa_v0, {_lane_off((K, N), code, 'n0__ssa_v0')}, "
            f"[{b_h[0]}, {b_h[1]}], [{b_h[0]}, {b_h[1]}], target_memory=pl.Mem.Vec)",
            f"b2__tile: {_tile(b_h, 'Vec')} = pl.tile.muls(b__tile, 2.0)",
            f"b_mat: {_tile((K, N), 'Mat')} = pl.tile.aic_gather(b2__tile, split={code})",
        ]
    else:
        loop += [
            f"a_mat: {_tile((M, K), 'Mat')} = pl.tile.load(a2__ssa_v0, [0, 0], [{M}, {K}], [{M}, {K}], target_memory=pl.Mem.Mat)",
            f"b_mat: {_tile((K, N), 'Mat')} = pl.tile.load(b2__ssa_v0, [0, n0__ssa_v0], [{K}, {N}], [{K}, {N}], target_memory=pl.Mem.Mat)",
        ]
    loop += [
        f"a_left: {_tile((M, K), 'Left')} = pl.tile.move(a_mat, target_memory=pl.Mem.Left)",
        f"b_right: {_tile((K, N), 'Right')} = pl.tile.move(b_mat, target_memory=pl.Mem.Right)",
        f"t__tile: {_tile((M, N), 'Acc')} = pl.tile.matmul(a_left, b_right)",
    ]
    if shard:
        loop += [
            f"t__tile_Vec: {_tile(t_h, 'Vec')} = pl.tile.aiv_shard(t__tile, split={code})",
            f"c_next__tile: {_tile(t_h, 'Vec')} = pl.tile.add(c_prev__tile, t__tile_Vec)",
            f"c__tile: pl.Tensor[[{M}, {N * CHUNKS}], pl.FP32] = pl.tile.store(c_next__tile, {_lane_off((M, N), code, 'n0__ssa_v0')}, c__iter_v1)",
        ]
    else:
        loop += [
            f"c_prev_mat: {_tile((M, N), 'Mat')} = pl.tile.load(c__iter_v1, [0, n0__ssa_v0], [{M}, {N}], [{M}, {N}], target_memory=pl.Mem.Mat)",
            f"c_acc: {_tile((M, N), 'Acc')} = pl.tile.add(t__tile, c_prev_mat)",
            f"c__tile: pl.Tensor[[{M}, {N * CHUNKS}], pl.FP32] = pl.tile.store(c_acc, [0, n0__ssa_v0], c__iter_v1)",
        ]
    loop.append(f"c__rv_v2: pl.Tensor[[{M}, {N * CHUNKS}], pl.FP32] = pl.yield_(c__tile)")
    body += ["    " + ln for ln in loop]
    body.append("return c__ssa_v0")
    c_t = f"pl.Tensor[[{M}, {N * CHUNKS}], pl.FP32]"
    params = (
        f"c__ssa_v0: pl.InOut[{c_t}], a__ssa_v0: pl.Tensor[[{M}, {K}], pl.FP32], b__ssa_v0: pl.Tensor[[{K}, {N * CHUNKS}], pl.FP32], "
        f"a2__ssa_v0: pl.Tensor[[{M}, {K}], pl.FP32], b2__ssa_v0: pl.Tensor[[{K}, {N * CHUNKS}], pl.FP32]"
    )
    lines = [INCORE, f"def main_incore_0({params}) -> {c_t}:", *("    " + b for b in body)]
    lines += [
        ORCH,
        f"def main(self, {params.replace('pl.InOut[' + c_t + ']', c_t)}) -> {c_t}:",
        f"    c__rv_v2: {c_t} = self.main_incore_0(c__ssa_v0, a__ssa_v0, b__ssa_v0, a2__ssa_v0, b2__ssa_v0)",
        "    return c__rv_v2",
    ]
    text = "# pypto.program: SplitAivLanes\nimport pypto.language as pl\n\n@pl.program\nclass SplitAivLanes:\n"
    return text + "".join("    " + ln + "\n" for ln in lines)


def _golden() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(11)
    a = torch.randn(M, K, generator=g)
    b = torch.randn(K, N * CHUNKS, generator=g)
    c = torch.randn(M, N * CHUNKS, generator=g)
    inputs = {"a__ssa_v0": a, "b__ssa_v0": b, "c__ssa_v0": c, "a2__ssa_v0": a + 1.0, "b2__ssa_v0": 2.0 * b}
    return inputs, {"c__ssa_v0": c + (a + 1.0) @ (2.0 * b)}


CASES = [(code, g, s) for code in (1, 2) for g, s in ((True, False), (False, True), (True, True))]


@pytest.mark.parametrize(
    ("code", "gather", "shard"), CASES, ids=[f"{MODES[c]}-{'gather' * g}{'+' * (g and s)}{'shard' * s}" for c, g, s in CASES]
)
def test_lanes_meet_at_gather_and_shard(code: int, gather: bool, shard: bool) -> None:
    text = split_program(code, gather, shard)
    inputs, expected = _golden()
    r = run_text(text, inputs, expected, rtol=1e-4, atol=1e-3)
    assert r.status == PASS, (r.error, [(t.name, t.max_abs_diff) for t in r.tensors])


@pytest.mark.parametrize("code", [1, 2])
def test_the_cube_work_runs_once(code: int) -> None:
    """Lane 1 skips the cube statements: a matmul count over the run is the loop's trip count."""
    from pypto_lsp.exec import kernels

    calls = []
    real = kernels.KERNELS["tile.matmul"]

    def counting(*a: object, **k: object) -> object:
        calls.append(context.lane())
        return real(*a, **k)

    kernels.KERNELS["tile.matmul"] = counting
    try:
        inputs, expected = _golden()
        r = run_text(split_program(code, True, True), inputs, expected, rtol=1e-4, atol=1e-3)
    finally:
        kernels.KERNELS["tile.matmul"] = real
    assert r.status == PASS
    assert calls == [0] * CHUNKS


def test_a_gather_only_one_lane_reaches_is_a_deadlock() -> None:
    def lane_fn() -> None:
        if context.lane() == 0:
            rt = context.current_runtime()
            assert rt is not None
            rt.gather_exchange(torch.ones(2, 2), 1, 0)

    with pytest.raises(crosscore.CrossCoreError) as ei:
        crosscore.run_lanes("t", lane_fn, (), split=1)
    assert ei.value.kind == "deadlock" and ei.value.op == "tile.aic_gather"


def shard_then_gather_program(code: int) -> str:
    """out = (2 * (a @ b)) @ v: the cube's product handed to the lanes, scaled there, joined
    back for a second product (the order of ``cross_core_split_aiv_qk_pv``), in a loop of two
    that also re-reads ``out``'s accumulation (out += each round)."""
    h = _half((M, M), code)
    mat = lambda n, src, off="[0, 0]": (  # noqa: E731
        f"{n}: {_tile((M, M), 'Mat')} = pl.tile.load({src}, {off}, [{M}, {M}], [{M}, {M}], target_memory=pl.Mem.Mat)"
    )
    body = [
        f'pl.func_attr({{"split": pl.SplitMode.{MODES[code]}, "split_aiv": True}})',
        "for i__idx_v0, (o__iter_v1,) in pl.range(2, init_values=(o__ssa_v0,)):",
        "    " + mat("a_l1", "a__ssa_v0"),
        "    " + mat("b_l1", "b__ssa_v0"),
        f"    a_left: {_tile((M, M), 'Left')} = pl.tile.move(a_l1, target_memory=pl.Mem.Left)",
        f"    b_right: {_tile((M, M), 'Right')} = pl.tile.move(b_l1, target_memory=pl.Mem.Right)",
        f"    qk: {_tile((M, M), 'Acc')} = pl.tile.matmul(a_left, b_right)",
        f"    qk_h: {_tile(h, 'Vec')} = pl.tile.aiv_shard(qk, split={code})",
        f"    sc: {_tile(h, 'Vec')} = pl.tile.muls(qk_h, 2.0)",
        f"    full: {_tile((M, M), 'Mat')} = pl.tile.aic_gather(sc, split={code})",
        f"    full_left: {_tile((M, M), 'Left')} = pl.tile.move(full, target_memory=pl.Mem.Left)",
        "    " + mat("v_l1", "v__ssa_v0"),
        f"    v_right: {_tile((M, M), 'Right')} = pl.tile.move(v_l1, target_memory=pl.Mem.Right)",
        f"    pv: {_tile((M, M), 'Acc')} = pl.tile.matmul(full_left, v_right)",
        "    " + mat("o_prev", "o__iter_v1"),
        f"    o_acc: {_tile((M, M), 'Acc')} = pl.tile.add(pv, o_prev)",
        f"    o__tile: pl.Tensor[[{M}, {M}], pl.FP32] = pl.tile.store(o_acc, [0, 0], o__iter_v1)",
        f"    o__rv_v2: pl.Tensor[[{M}, {M}], pl.FP32] = pl.yield_(o__tile)",
        "return o__ssa_v0",
    ]
    t = f"pl.Tensor[[{M}, {M}], pl.FP32]"
    params = f"a__ssa_v0: {t}, b__ssa_v0: {t}, v__ssa_v0: {t}, o__ssa_v0: pl.InOut[{t}]"
    lines = [INCORE, f"def qkpv({params}) -> {t}:", *("    " + b for b in body)]
    lines += [
        ORCH,
        f"def main(self, {params.replace('pl.InOut[' + t + ']', t)}) -> {t}:",
        f"    o__rv: {t} = self.qkpv(a__ssa_v0, b__ssa_v0, v__ssa_v0, o__ssa_v0)",
        "    return o__rv",
    ]
    text = "# pypto.program: ShardThenGather\nimport pypto.language as pl\n\n@pl.program\nclass ShardThenGather:\n"
    return text + "".join("    " + ln + "\n" for ln in lines)


@pytest.mark.parametrize("code", [1, 2], ids=["UP_DOWN", "LEFT_RIGHT"])
def test_shard_then_gather_in_a_loop(code: int) -> None:
    g = torch.Generator().manual_seed(5)
    a, b, v = (torch.randn(M, M, generator=g) for _ in range(3))
    o = torch.randn(M, M, generator=g)
    inputs = {"a__ssa_v0": a, "b__ssa_v0": b, "v__ssa_v0": v, "o__ssa_v0": o}
    r = run_text(shard_then_gather_program(code), inputs, {"o__ssa_v0": o + 2 * ((2 * (a @ b)) @ v)}, rtol=1e-4, atol=1e-2)
    assert r.status == PASS, (r.error, [(t.name, t.max_abs_diff) for t in r.tensors])
