"""The memory model and its hazard sanitizer on small hand-written IR (pypto_lsp.exec.memory,
pypto_lsp.ir.memory): overlaps in every memory space, loop-carried values, in-place ops and
reshape aliases (no finding), tiles in pipe slots on both sides, capacity, bounds, and a
MemoryReuse-level bug (one base shared before AllocateMemoryAddr).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from pypto_lsp.ir.memory import CAPACITIES, capacities, check_memory, plan_program
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.report import ERROR, FAIL, PASS

AIC = "@pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)"
AIV = "@pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)"
GROUP = "@pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)"
ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"
T = "pl.Tensor[[16, 16], pl.FP32]"
SIG = f"a: {T}, b: {T}, o: pl.Out[{T}]"


def program(*functions: list[str]) -> str:
    text = "# pypto.program: M\nimport pypto.language as pl\n\n@pl.program\nclass M:\n"
    for f in functions:
        text += "".join("    " + ln + "\n" for ln in f)
    return text


def kernel(deco: str, name: str, body: list[str], allocs: dict[str, tuple[str, int]]) -> list[str]:
    head = [deco, f"def {name}({SIG}) -> {T}:"]
    head += [f"    {b}: pl.Ptr = pl.tile.alloc(pl.Mem.{space}, {size})" for b, (space, size) in allocs.items()]
    return head + ["    " + b for b in body]


def orch(callee: str = "k") -> list[str]:
    return [ORCH, f"def main(self, {SIG}) -> {T}:", f"    r: {T} = self.{callee}(a, b, o)", "    return r"]


def tile(space: str, base: str, off: int, size: int = 1024, shape: str = "[16, 16]", dtype: str = "FP32") -> str:
    return f"pl.Tile[{shape}, pl.{dtype}, pl.MemRef({base}, pl.const({off}, pl.INT64), {size}), pl.Mem.{space}]"


def run(text: str, memory: bool = True, backend: str | None = None, expected: torch.Tensor | None = None):
    torch.manual_seed(0)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    exp = {"o": expected(a, b)} if expected is not None else {}
    return run_text(text, {"a": a, "b": b, "o": torch.zeros(16, 16)}, exp, filename="m.py", memory=memory, backend=backend)


def line(text: str, needle: str) -> int:
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def hazards(fr, kind: str | None = None) -> list[dict]:
    return [h for h in fr.memory["hazards"] if kind is None or h["kind"] == kind]


# ---------------------------------------------------------------------- Vec (AIV)


def vec_program(y_off: int, *, reread: bool = True) -> str:
    """x = load(a); y = load(b) at y_off; z = x + y (reads x: overwritten when y overlaps it)."""
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', 'mem_vec_1', y_off)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"z: {tile('Vec', 'mem_vec_2', 4096)} = pl.tile.add({'x' if reread else 'y'}, y)",
        f"o1: {T} = pl.tile.store(z, [0, 0], o)",
        "return o1",
    ]
    return program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)}), orch())


def test_vec_apart_runs_clean_and_right() -> None:
    fr = run(vec_program(1024), expected=lambda a, b: a + b)
    assert fr.status == PASS and fr.memory == {"checked": True, "hazards": []}


@pytest.mark.parametrize(("y_off", "rng"), [(0, [0, 1024]), (512, [512, 1024])], ids=["exact", "partial"])
def test_vec_overlap_is_an_overwrite_on_the_reading_line(y_off: int, rng: list[int]) -> None:
    text = vec_program(y_off)
    fr = run(text, expected=lambda a, b: a + b)
    assert fr.status == FAIL
    (h,) = hazards(fr)
    assert h["kind"] == "overwrite" and h["name"] == "x" and h["other_name"] == "y"
    assert h["line"] == line(text, "z: ") and h["other_line"] == line(text, "y: ")
    assert h["space"] == "Vec" and h["core"] == "AIV0" and h["range"] == rng
    assert "MemRef(mem_vec_0, 0, 1024)" in h["message"] and f"MemRef(mem_vec_1, {y_off}, 1024)" in h["message"]
    # the numbers are the hardware's: the overlapped part of x holds y
    assert fr.tensors["o"].max_abs_diff > 0.1


def test_memory_off_is_values_only() -> None:
    fr = run(vec_program(0), memory=False, expected=lambda a, b: a + b)
    assert fr.status == PASS and fr.memory == {"checked": False, "hazards": []}


def test_an_overlap_nobody_reads_again_is_no_finding() -> None:
    fr = run(vec_program(0, reread=False), expected=lambda a, b: b + b)
    assert fr.status == PASS and not hazards(fr)


# ---------------------------------------------------------------------- AIC spaces


def aic_program(space: str, delta: int) -> str:
    """a @ b on the cube; in ``space`` a second tile is placed ``delta`` bytes from a live one
    (None: apart), before the live one is read."""
    off = {"Mat": 0, "Left": 0, "Right": 0, "Acc": 0}
    clobber = {k: 2048 for k in off}  # apart by default
    if delta is not None:
        clobber[space] = delta
    body = [
        f"am: {tile('Mat', 'mem_mat_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Mat)",
        f"bm: {tile('Mat', 'mem_mat_1', clobber['Mat'] if space == 'Mat' else 1024)} = "
        "pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Mat)",
        f"al: {tile('Left', 'mem_left_2', 0)} = pl.tile.move(am, target_memory=pl.Mem.Left)",
        f"br: {tile('Right', 'mem_right_3', 0)} = pl.tile.move(bm, target_memory=pl.Mem.Right)",
        f"bl: {tile('Left', 'mem_left_4', clobber['Left'])} = pl.tile.move(bm, target_memory=pl.Mem.Left)",
        f"ar: {tile('Right', 'mem_right_5', clobber['Right'])} = pl.tile.move(am, target_memory=pl.Mem.Right)",
        f"c: {tile('Acc', 'mem_acc_6', 0)} = pl.tile.matmul(al, br)",
        f"d: {tile('Acc', 'mem_acc_7', clobber['Acc'])} = pl.tile.matmul(bl, ar)",
        f"s: {tile('Acc', 'mem_acc_8', 4096)} = pl.tile.add(c, d)",
        f"o1: {T} = pl.tile.store(s, [0, 0], o)",
        "return o1",
    ]
    allocs = {
        "mem_mat_0": ("Mat", 1024),
        "mem_mat_1": ("Mat", 1024),
        "mem_left_2": ("Left", 1024),
        "mem_right_3": ("Right", 1024),
        "mem_left_4": ("Left", 1024),
        "mem_right_5": ("Right", 1024),
        "mem_acc_6": ("Acc", 1024),
        "mem_acc_7": ("Acc", 1024),
        "mem_acc_8": ("Acc", 1024),
    }
    return program(kernel(AIC, "k", body, allocs), orch())


def _ab_ba(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b + b @ a


def test_aic_apart_runs_clean_and_right() -> None:
    fr = run(aic_program("Mat", None), expected=_ab_ba)  # type: ignore[arg-type]
    assert fr.status == PASS and fr.memory["checked"] and not hazards(fr)


# (space, victim read, victim, clobbering line)
_AIC_CASES = {
    "Mat": ("al: ", "am", "bm: "),  # bm lands on am before am moves to Left
    "Left": ("c: ", "al", "bl: "),
    "Right": ("c: ", "br", "ar: "),
    "Acc": ("s: ", "c", "d: "),
}


@pytest.mark.parametrize("space", sorted(_AIC_CASES))
@pytest.mark.parametrize("delta", [0, 512], ids=["exact", "partial"])
def test_aic_overlap_in_each_space(space: str, delta: int) -> None:
    text = aic_program(space, delta)
    fr = run(text, expected=_ab_ba)
    assert fr.status == FAIL
    reader, victim, clobber = _AIC_CASES[space]
    first = [h for h in hazards(fr) if h["name"] == victim]
    assert first, hazards(fr)
    h = first[0]
    assert h["kind"] == "overwrite" and h["space"] == space and h["core"] == "AIC"
    assert h["line"] == line(text, reader) and h["other_line"] == line(text, clobber)
    assert h["range"] == [delta, 1024]


# ---------------------------------------------------------------------- loops, in-place, reshape


def loop_program(t_off: int) -> str:
    """prev is carried; each iteration loads t at t_off, then reads prev. From the second
    iteration on prev is the previous cur, at 1024: a t at 1024 overwrites it first."""
    body = [
        f"x0: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        "for i, (prev,) in pl.range(3, init_values=(x0,)):",
        f"    t: {tile('Vec', 'mem_vec_1', t_off)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"    s: {tile('Vec', 'mem_vec_2', 2048)} = pl.tile.add(prev, t)",
        f"    cur: {tile('Vec', 'mem_vec_3', 1024)} = pl.tile.muls(s, 0.5)",
        "    prev_rv = pl.yield_(cur)",
        f"o1: {T} = pl.tile.store(prev_rv, [0, 0], o)",
        "return o1",
    ]
    allocs = {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024), "mem_vec_3": ("Vec", 1024)}
    return program(kernel(AIV, "k", body, allocs), orch())


def _loop(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    x = a
    for _ in range(3):
        x = (x + b) * 0.5
    return x


def test_loop_carried_value_overwritten_on_the_next_iteration() -> None:
    ok = run(loop_program(3072), expected=_loop)
    assert ok.status == PASS and not hazards(ok)
    text = loop_program(1024)
    fr = run(text, expected=_loop)
    assert fr.status == FAIL
    (h,) = hazards(fr)
    assert (h["name"], h["line"], h["other_name"], h["other_line"]) == ("prev", line(text, "s: "), "t", line(text, "t: "))
    assert f"written at line {line(text, 'cur: ')} as 'cur'" in h["message"]


def test_in_place_elementwise_and_reshape_alias_are_no_finding() -> None:
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.muls(x, 2.0)",  # in place on x's bytes
        f"r: {tile('Vec', 'mem_vec_0', 0, shape='[1, 256]')} = pl.tile.reshape(y, [1, 256])",  # same bytes, another shape
        f"u: {tile('Vec', 'mem_vec_1', 1024, shape='[1, 256]')} = pl.tile.adds(r, 1.0)",
        f"w: {tile('Vec', 'mem_vec_1', 1024)} = pl.tile.reshape(u, [16, 16])",
        f"z: {tile('Vec', 'mem_vec_2', 2048)} = pl.tile.add(w, y)",  # y is read after its reshape: still its bytes
        f"o1: {T} = pl.tile.store(z, [0, 0], o)",
        "return o1",
    ]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)}), orch())
    fr = run(text, expected=lambda a, b: (a * 2 + 1) + a * 2)
    assert fr.status == PASS and fr.memory["checked"] and not hazards(fr)


def test_read_after_in_place_overwrite_is_a_finding() -> None:
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.muls(x, 2.0)",
        f"z: {tile('Vec', 'mem_vec_1', 1024)} = pl.tile.add(x, y)",  # x is gone: y took its bytes
        f"o1: {T} = pl.tile.store(z, [0, 0], o)",
        "return o1",
    ]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024)}), orch())
    fr = run(text, expected=lambda a, b: a * 3)
    assert fr.status == FAIL
    assert [(h["name"], h["other_name"]) for h in hazards(fr)] == [("x", "y")]
    assert fr.tensors["o"].max_abs_diff > 0.1  # 2x + 2x on the hardware, not x + 2x


# ---------------------------------------------------------------------- MemoryReuse level (same base, offsets 0)


@pytest.mark.parametrize(("y_base", "bad"), [("mem_vec_1", False), ("mem_vec_0", True)], ids=["own-base", "shared-base"])
def test_memory_reuse_level_same_base_before_addresses(y_base: str, bad: bool) -> None:
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', y_base, 0)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"z: {tile('Vec', 'mem_vec_2', 0)} = pl.tile.add(x, y)",
        f"o1: {T} = pl.tile.store(z, [0, 0], o)",
        "return o1",
    ]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)}), orch())
    r = parse_text(text, "m.py")
    assert r.program is not None and not plan_program(r.program).addressed
    fr = run(text, expected=lambda a, b: a + b)
    assert [(h["name"], h["other_name"]) for h in hazards(fr)] == ([("x", "y")] if bad else [])
    assert fr.status == (FAIL if bad else PASS)


# ---------------------------------------------------------------------- capacity and bounds


def test_capacity_is_a_static_error_per_backend() -> None:
    assert capacities()["Vec"] == 240 * 1024 and capacities("910B")["Vec"] == 184 * 1024
    assert capacities()["Acc"] == max(c["Acc"] for c in CAPACITIES.values())
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 200 * 1024)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"o1: {T} = pl.tile.store(x, [0, 0], o)",
        "return o1",
    ]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024)}), orch())
    assert run(text, expected=lambda a, b: a).status == PASS  # fits the 950's 240 KB
    fr = run(text, backend="910B", expected=lambda a, b: a)  # not the 910B's 184 KB
    assert fr.status == ERROR and fr.error is not None and fr.error.kind == "static:memory-capacity"
    assert fr.error.line == line(text, "x: ")
    (h,) = hazards(fr)
    assert h["kind"] == "capacity" and h["range"] == [200 * 1024, 200 * 1024 + 1024]
    r = parse_text(text, "m.py")
    assert r.program is not None
    assert [d.code for d in check_memory(r.program, "910B")] == ["memory-capacity"]


def test_bounds_tile_larger_than_its_memref() -> None:
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0, size=512)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"o1: {T} = pl.tile.store(x, [0, 0], o)",
        "return o1",
    ]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 512)}), orch())
    fr = run(text, expected=lambda a, b: a)
    assert fr.status == ERROR and fr.error is not None and fr.error.kind == "static:memory-bounds"
    (h,) = hazards(fr)
    assert h["kind"] == "bounds" and h["line"] == line(text, "x: ") and h["range"] == [512, 1024]


# ---------------------------------------------------------------------- pipe slots


def c2v_program(prev_off: int) -> str:
    """The cube pushes a @ b twice (2-slot ring at Vec [0, 2048)); the vector adds each to a
    tile it loaded before the pop, at ``prev_off``."""
    aic = kernel(
        AIC,
        "g_aic",
        [
            "imp: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name='ring', peer_func='g_aiv')",
            "pl.system.aic_initialize_pipe(imp, pl.const(0, pl.INT32), dir_mask=1, slot_size=1024, slot_num=2)",
            "for i in pl.range(2):",
            f"    am: {tile('Mat', 'mem_mat_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Mat)",
            f"    bm: {tile('Mat', 'mem_mat_1', 1024)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Mat)",
            f"    al: {tile('Left', 'mem_left_2', 0)} = pl.tile.move(am, target_memory=pl.Mem.Left)",
            f"    br: {tile('Right', 'mem_right_3', 0)} = pl.tile.move(bm, target_memory=pl.Mem.Right)",
            f"    c: {tile('Acc', 'mem_acc_4', 0)} = pl.tile.matmul(al, br)",
            "    pl.tile.tpush_to_aiv(c, split=0)",
            "return o",
        ],
        {
            "mem_mat_0": ("Mat", 1024),
            "mem_mat_1": ("Mat", 1024),
            "mem_left_2": ("Left", 1024),
            "mem_right_3": ("Right", 1024),
            "mem_acc_4": ("Acc", 1024),
        },
    )
    aiv = kernel(
        AIV,
        "g_aiv",
        [
            "ring: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='ring', size=2048, base=0)",
            "pl.system.aiv_initialize_pipe(ring, pl.const(0, pl.INT32), dir_mask=1, slot_size=1024, slot_num=2)",
            f"x0: {tile('Vec', 'mem_vec_0', 4096)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
            "for i, (acc,) in pl.range(2, init_values=(x0,)):",
            f"    prev: {tile('Vec', 'mem_vec_1', prev_off)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
            "    p: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
            f"    n: {tile('Vec', 'mem_vec_2', 6144)} = pl.tile.add(prev, p)",
            "    pl.system.tfree_to_aic(p, split=0)",
            f"    acc2: {tile('Vec', 'mem_vec_0', 4096)} = pl.tile.add(acc, n)",
            "    acc_rv = pl.yield_(acc2)",
            f"o1: {T} = pl.tile.store(acc_rv, [0, 0], o)",
            "return o1",
        ],
        {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)},
    )
    group = [GROUP, f"def g({SIG}) -> {T}:", "    self.g_aic(a, b, o)", "    self.g_aiv(a, b, o)", "    return o"]
    return program(aic, aiv, group, orch("g"))


def _c2v(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return b + 2 * (a + a @ b)


def test_c2v_ring_apart_runs_clean() -> None:
    fr = run(c2v_program(2048), expected=_c2v)
    assert fr.status == PASS and fr.memory["checked"] and not hazards(fr)


def test_tile_in_a_pipe_slot_on_the_aiv_side() -> None:
    text = c2v_program(1024)  # inside slot 1 of the ring
    fr = run(text, expected=_c2v)
    assert fr.status == FAIL
    kinds = {(h["kind"], h["line"], h["other_line"]) for h in hazards(fr)}
    ring, prev, pop, n = (line(text, s) for s in ("reserve_buffer", "prev: ", "tpop_from_aic", "n: "))
    assert ("pipe-slot", prev, ring) in kinds  # static: placed inside the reserved ring
    assert ("overwrite", n, pop) in kinds  # run: the second pop lands on it
    assert fr.tensors["o"].max_abs_diff > 0.1
    r = parse_text(text, "m.py")
    assert r.program is not None
    (d,) = check_memory(r.program)
    assert d.code == "memory-pipe-slot" and d.severity == "warning" and d.span.line == prev and d.related[0].span.line == ring


def v2c_program(tile_off: int) -> str:
    """The vector pushes a + b; the cube pops it into its Mat ring at [0, 2048) and multiplies."""
    aic = kernel(
        AIC,
        "g_aic",
        [
            "ring: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='ring', size=2048, base=0)",
            "pl.system.aic_initialize_pipe(pl.const(0, pl.INT32), ring, dir_mask=2, slot_size=1024, slot_num=2)",
            f"bm: {tile('Mat', 'mem_mat_0', tile_off)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Mat)",
            "p: pl.Tile[[16, 16], pl.FP32, pl.Mem.Mat] = pl.tile.tpop_from_aiv(split=0)",
            f"pl_: {tile('Left', 'mem_left_1', 0)} = pl.tile.move(p, target_memory=pl.Mem.Left)",
            "pl.system.tfree_to_aiv(p, split=0)",
            f"br: {tile('Right', 'mem_right_2', 0)} = pl.tile.move(bm, target_memory=pl.Mem.Right)",
            f"c: {tile('Acc', 'mem_acc_3', 0)} = pl.tile.matmul(pl_, br)",
            f"o1: {T} = pl.tile.store(c, [0, 0], o)",
            "return o1",
        ],
        {"mem_mat_0": ("Mat", 1024), "mem_left_1": ("Left", 1024), "mem_right_2": ("Right", 1024), "mem_acc_3": ("Acc", 1024)},
    )
    aiv = kernel(
        AIV,
        "g_aiv",
        [
            "imp: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name='ring', peer_func='g_aic')",
            "pl.system.aiv_initialize_pipe(pl.const(0, pl.INT32), imp, dir_mask=2, slot_size=1024, slot_num=2)",
            f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
            f"y: {tile('Vec', 'mem_vec_1', 1024)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
            f"s: {tile('Vec', 'mem_vec_2', 2048)} = pl.tile.add(x, y)",
            "pl.tile.tpush_to_aic(s, split=0)",
            "return o",
        ],
        {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)},
    )
    group = [GROUP, f"def g({SIG}) -> {T}:", "    self.g_aic(a, b, o)", "    self.g_aiv(a, b, o)", "    return o"]
    return program(aic, aiv, group, orch("g"))


def _v2c(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a + b) @ b


def test_v2c_ring_apart_runs_clean() -> None:
    fr = run(v2c_program(2048), expected=_v2c)
    assert fr.status == PASS and fr.memory["checked"] and not hazards(fr)


def test_tile_in_a_pipe_slot_on_the_aic_side() -> None:
    text = v2c_program(0)  # inside slot 0 of the cube's Mat ring
    fr = run(text, expected=_v2c)
    assert fr.status == FAIL
    kinds = {(h["kind"], h["name"], h["line"], h["other_line"], h["core"]) for h in hazards(fr)}
    bm, ring, pop, br = (line(text, s) for s in ("bm: ", "reserve_buffer", "tpop_from_aiv", "br: "))
    assert ("pipe-slot", "bm", bm, ring, "AIC") in kinds
    assert ("overwrite", "bm", br, pop, "AIC") in kinds  # the popped tile landed on bm


# ---------------------------------------------------------------------- CLI and configuration

EXAMPLE = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "broken_memory"


def test_cli_json_memory_findings_and_memory_off(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from pypto_lsp.cli import main

    args = ["validate", str(EXAMPLE / "passes_dump"), "--json", "--no-cache", "--no-localize", "--jobs", "1"]
    assert main(args) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["first_divergent"].endswith("35_after_AllocateMemoryAddr.py")
    by_name = {f["file"].rsplit("/", 1)[1][:2]: f for f in report["files"]}
    assert [by_name[k]["memory"]["checked"] for k in ("00", "11", "32", "35")] == [False, False, True, True]
    (h,) = by_name["35"]["memory"]["hazards"]
    assert set(h) == {"kind", "line", "name", "other_line", "other_name", "space", "core", "range", "message"}
    assert (h["kind"], h["line"], h["name"], h["other_line"], h["space"]) == ("overwrite", 16, "y_chunk__tile", 15, "Vec")
    assert main([*args, "--memory", "off"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert all(f["status"] == "pass" and f["memory"] == {"checked": False, "hazards": []} for f in report["files"])


def test_cli_text_prints_findings_under_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    from pypto_lsp.cli import main

    assert main(["validate", str(EXAMPLE / "passes_dump" / "35_after_AllocateMemoryAddr.py"), "--no-cache", "--no-localize"]) == 1
    out = capsys.readouterr().out
    assert "memory overwrite (line 16): 'y_chunk__tile' is read here" in out
    assert "first divergent pass: 35_after_AllocateMemoryAddr.py:16 (fail)" in out


def test_case_keys_memory_and_backend(tmp_path) -> None:
    from pypto_lsp.validate.config import ConfigError, find_case

    (tmp_path / "passes_dump").mkdir()
    dump = tmp_path / "passes_dump" / "00_frontend.py"
    dump.write_text("# pypto.program: P\n")
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\nmemory = false\nbackend = "910B"\n')
    case = find_case(dump)
    assert (case.settings.memory, case.settings.backend, case.notes) == (False, "910B", [])
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\nbackend = "A9"\n')
    with pytest.raises(ConfigError, match="unknown backend"):
        find_case(dump)


def test_placed_tiles_sweep_peeled() -> None:
    """With the memory model on, a placed program's sweeps run their first and last iterations in
    the arenas (``Sweep.peeled``); the other batched loops (K-chunks, pipe loops) run as written."""
    from pypto_lsp.exec.codegen import generate

    placed = parse_text(c2v_program(2048), "m.py").program
    assert placed is not None
    on, off = generate(placed).source, generate(placed, memory=False).source
    assert "_pl_mem_session.frame(" in on and "_pl_sweep.peeled(_pl_mem_session, _pl_m, " in on and "_pl_pipebatch" not in on
    assert "_pl_sweeps.Sweep(" in off and "peeled" not in off


W = "pl.Tensor[[16, 128], pl.FP32]"


def sweep_program(y_off: int, pre_read: bool = False) -> str:
    """An AIV sweep over 8 column windows: z = x + y stored into o's window. ``y_off`` 0 puts y on
    x's bytes (overwritten before the add reads it, every iteration); ``pre_read``: a tile loaded
    before the loop at Vec [8192, +1024) is added in, and the body's last tile lands on it, so only
    the second iteration on reads it overwritten."""
    last = 8192 if pre_read else 5120
    body = [
        f"k: {tile('Vec', 'mem_vec_3', 8192)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        "for j, (o_it,) in pl.range(8, init_values=(o,)):",
        "    c0: pl.Scalar[pl.INDEX] = j * 16",
        f"    x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, c0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"    y: {tile('Vec', 'mem_vec_1', y_off)} = pl.tile.load(b, [0, c0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"    z: {tile('Vec', 'mem_vec_2', 4096)} = pl.tile.add(x, y)",
        f"    w: {tile('Vec', 'mem_vec_4', 6144)} = pl.tile.add(z, k)"
        if pre_read
        else f"    w: {tile('Vec', 'mem_vec_4', 6144)} = pl.tile.adds(z, 0.0)",
        f"    v: {tile('Vec', 'mem_vec_5', last)} = pl.tile.adds(w, 1.0)",
        f"    o2: {W} = pl.tile.store(v, [0, c0], o_it)",
        f"    o_rv: {W} = pl.yield_(o2)",
        "return o_rv",
    ]
    allocs = {f"mem_vec_{i}": ("Vec", 1024) for i in range(6)}
    head = [AIV, f"def k(a: {W}, b: {W}, o: pl.Out[{W}]) -> {W}:"]
    head += [f"    {n}: pl.Ptr = pl.tile.alloc(pl.Mem.{sp}, {size})" for n, (sp, size) in allocs.items()]
    entry = [ORCH, f"def main(self, a: {W}, b: {W}, o: pl.Out[{W}]) -> {W}:", f"    r: {W} = self.k(a, b, o)", "    return r"]
    return program(head + ["    " + ln for ln in body], entry)


def _counting(
    monkeypatch: pytest.MonkeyPatch,
    cls: type,
    name: str,
    run: Callable[[], Any],
    weight: Callable[[Any], int] = lambda _r: 1,
    forget: bool = True,
) -> tuple[Any, int]:
    """``run()`` and how often it called ``cls.name`` (wrapped, not replaced; ``weight`` of each
    result); with ``forget``, from what no earlier run of the process proved (``memory.forget_proofs``)."""
    from pypto_lsp.exec import memory

    if forget:
        memory.forget_proofs()
    count = [0]
    real = getattr(cls, name)

    def counted(self: Any, *a: Any, **kw: Any) -> Any:
        r = real(self, *a, **kw)
        count[0] += weight(r)
        return r

    monkeypatch.setattr(cls, name, counted)
    try:
        return run(), count[0]
    finally:
        monkeypatch.setattr(cls, name, real)


def _run_sweep(text: str, exact: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[object, torch.Tensor, int]:
    """The run, its output and how many batched chunks it ran (``Sweep.next`` counted)."""
    from pypto_lsp.exec import sweep

    torch.manual_seed(0)
    a, b = torch.randn(16, 128), torch.randn(16, 128)
    keep: dict[str, torch.Tensor] = {}
    ins, exp = {"a": a, "b": b, "o": torch.zeros(16, 128)}, {"o": a + b + 1}
    fr, chunks = _counting(monkeypatch, sweep.Sweep, "next", lambda: run_text(text, ins, exp, filename="m.py", exact=exact, keep=keep), int)
    return fr, keep["o"], chunks


def test_peeled_sweep_batches_the_middle_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    text = sweep_program(1024)
    fr, out, chunks = _run_sweep(text, False, monkeypatch)
    ref, ref_out, ref_chunks = _run_sweep(text, True, monkeypatch)
    assert fr.status == PASS and fr.memory == {"checked": True, "hazards": []}  # type: ignore[attr-defined]
    assert chunks == 1 and ref_chunks == 0  # iterations 2..6 in one chunk; 0, 1 and 7 in the arenas
    assert torch.equal(out, ref_out)


@pytest.mark.parametrize("pre_read", [False, True])
def test_peeled_sweep_with_a_hazard_runs_every_iteration_in_the_arenas(pre_read: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """An overwrite met in the first iterations (in the second only, for a tile loaded before the
    loop and overwritten late in the body): no batched chunk, the findings and the garbage values
    exactly those of the loop run one by one."""
    text = sweep_program(1024 if pre_read else 0, pre_read=pre_read)
    fr, out, chunks = _run_sweep(text, False, monkeypatch)
    ref, ref_out, _ = _run_sweep(text, True, monkeypatch)
    assert chunks == 0
    assert fr.status == FAIL and fr.memory == ref.memory and hazards(fr, "overwrite")  # type: ignore[attr-defined]
    assert torch.equal(out, ref_out)
    reader = line(text, "w: ") if pre_read else line(text, "z: ")
    assert {h["line"] for h in hazards(fr, "overwrite")} == {reader}  # type: ignore[arg-type]


def test_no_hooks_before_the_first_memref() -> None:
    """A pipe ring alone (before InitMemRef) places nothing: the script is the values-only one."""
    from pypto_lsp.exec.codegen import generate

    text = c2v_program(2048)
    unplaced = __import__("re").sub(r", pl\.MemRef\(\w+, pl\.const\(\d+, pl\.INT64\), \d+\)", "", text)
    r = parse_text(unplaced, "m.py")
    assert r.program is not None and "MemRef" not in unplaced
    assert not plan_program(r.program).placed
    assert generate(r.program).source == generate(r.program, memory=False).source
    placed = parse_text(text, "m.py").program
    assert placed is not None and "_pl_mem_session.frame(" in generate(placed).source


A = "pl.Tensor[[16, 128], pl.FP32]"
B = "pl.Tensor[[128, 16], pl.FP32]"


def kchunk_pipe_program(acc_off: int) -> str:
    """The cube pushes a[:, 16k:16k+16] @ b[16k:16k+16, :] for k < 8 (a batched push loop); the
    vector pops each into its 2-slot ring at Vec [0, 2048) and adds it into an accumulator at
    Vec ``acc_off`` (a batched pop loop): o = a @ b. ``acc_off`` 1024 puts it in ring slot 1."""
    sig = f"a: {A}, b: {B}, o: pl.Out[{T}]"
    aic = [
        AIC,
        f"def g_aic({sig}) -> {T}:",
        *(
            f"    {n}: pl.Ptr = pl.tile.alloc(pl.Mem.{sp}, 1024)"
            for n, sp in (
                ("mem_mat_0", "Mat"),
                ("mem_mat_1", "Mat"),
                ("mem_left_2", "Left"),
                ("mem_right_3", "Right"),
                ("mem_acc_4", "Acc"),
            )
        ),
        "    imp: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name='ring', peer_func='g_aiv')",
        "    pl.system.aic_initialize_pipe(imp, pl.const(0, pl.INT32), dir_mask=1, slot_size=1024, slot_num=2)",
        "    for kb in pl.range(8):",
        "        k0: pl.Scalar[pl.INDEX] = kb * 16",
        f"        am: {tile('Mat', 'mem_mat_0', 0)} = pl.tile.load(a, [0, k0], [16, 16], [16, 16], target_memory=pl.Mem.Mat)",
        f"        bm: {tile('Mat', 'mem_mat_1', 1024)} = pl.tile.load(b, [k0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Mat)",
        f"        al: {tile('Left', 'mem_left_2', 0)} = pl.tile.move(am, target_memory=pl.Mem.Left)",
        f"        br: {tile('Right', 'mem_right_3', 0)} = pl.tile.move(bm, target_memory=pl.Mem.Right)",
        f"        c: {tile('Acc', 'mem_acc_4', 0)} = pl.tile.matmul(al, br)",
        "        pl.tile.tpush_to_aiv(c, split=0)",
        "    return o",
    ]
    aiv = [
        AIV,
        f"def g_aiv({sig}) -> {T}:",
        *(f"    mem_vec_{i}: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 1024)" for i in range(2)),
        "    ring: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='ring', size=2048, base=0)",
        "    pl.system.aiv_initialize_pipe(ring, pl.const(0, pl.INT32), dir_mask=1, slot_size=1024, slot_num=2)",
        f"    acc0: {tile('Vec', 'mem_vec_0', acc_off)} = pl.tile.full([16, 16], dtype=pl.FP32, value=0.0)",
        "    for kb, (acc,) in pl.range(8, init_values=(acc0,)):",
        "        p: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)",
        f"        acc1: {tile('Vec', 'mem_vec_0', acc_off)} = pl.tile.add(acc, p)",
        "        pl.system.tfree_to_aic(p, split=0)",
        "        acc_rv = pl.yield_(acc1)",
        f"    o1: {T} = pl.tile.store(acc_rv, [0, 0], o)",
        "    return o1",
    ]
    group = [GROUP, f"def g({sig}) -> {T}:", "    self.g_aic(a, b, o)", "    self.g_aiv(a, b, o)", "    return o"]
    main = [ORCH, f"def main(self, {sig}) -> {T}:", f"    r: {T} = self.g(a, b, o)", "    return r"]
    return program(aic, aiv, group, main)


def _run_peel(text: str, exact: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[object, torch.Tensor, int]:
    """The run, its output and how many batched calls a Peel took (``Peel.take`` counted)."""
    from pypto_lsp.exec import pipebatch

    torch.manual_seed(0)
    a, b = torch.randn(16, 128), torch.randn(128, 16)
    keep: dict[str, torch.Tensor] = {}
    ins, exp = {"a": a, "b": b, "o": torch.zeros(16, 16)}, {"o": a @ b}
    fr, taken = _counting(monkeypatch, pipebatch.Peel, "take", lambda: run_text(text, ins, exp, filename="m.py", exact=exact, keep=keep))
    return fr, keep["o"], taken


def test_peeled_pipe_loops_batch_the_middle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ends of a K-chunk round trip on placed tiles: the push loop and the pop-accumulate loop
    run iterations 3..6 batched (a 2-slot ring: 3 first, 1 last in the arenas), the same numbers and
    findings as one by one."""
    text = kchunk_pipe_program(2048)
    fr, out, taken = _run_peel(text, False, monkeypatch)
    ref, ref_out, ref_taken = _run_peel(text, True, monkeypatch)
    assert fr.status == PASS and fr.memory == {"checked": True, "hazards": []}  # type: ignore[attr-defined]
    assert taken == 2 and ref_taken == 0
    assert torch.allclose(out, ref_out, rtol=0, atol=1e-5)  # one bmm for the middle products: FP32 order only


def test_peeled_pipe_loop_with_a_hazard_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The accumulator in ring slot 1: the second pop overwrites it. The vector's loop runs every
    iteration in the arenas (the cube's, clean, still batches): the findings and the garbage are
    those of the loop run one by one."""
    text = kchunk_pipe_program(1024)
    fr, out, taken = _run_peel(text, False, monkeypatch)
    ref, ref_out, _ = _run_peel(text, True, monkeypatch)
    assert taken == 1
    assert fr.status == FAIL and fr.memory == ref.memory and hazards(fr, "overwrite")  # type: ignore[attr-defined]
    assert torch.allclose(out, ref_out, rtol=0, atol=1e-5)


# ---------------------------------------------------------------------- a kernel called many times


def calls_program(y_off: int, when: str | None = None) -> str:
    """An orchestration loop calling an AIV kernel 8 times, one column window each: o = a + b.
    ``y_off`` 0 puts y on x's bytes (every call reads y overwritten); ``when``: a condition on the
    call's column under which a tile lands on y's bytes before the add reads it (one call only)."""
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, c0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', 'mem_vec_1', y_off)} = pl.tile.load(b, [0, c0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
    ]
    if when is not None:
        body += [f"if {when}:", f"    t: {tile('Vec', 'mem_vec_2', 1024)} = pl.tile.adds(x, 0.0)"]
    body += [
        f"z: {tile('Vec', 'mem_vec_3', 2048)} = pl.tile.add(x, y)",
        f"o2: {W} = pl.tile.store(z, [0, c0], o)",
        "return o2",
    ]
    allocs = {f"mem_vec_{i}": ("Vec", 1024) for i in range(4)}
    head = [AIV, f"def k(a: {W}, b: {W}, c0: pl.Scalar[pl.INDEX], o: pl.Out[{W}]) -> {W}:"]
    head += [f"    {n}: pl.Ptr = pl.tile.alloc(pl.Mem.{sp}, {size})" for n, (sp, size) in allocs.items()]
    entry = [
        ORCH,
        f"def main(self, a: {W}, b: {W}, o: pl.Out[{W}]) -> {W}:",
        "    for j, (o_it,) in pl.range(8, init_values=(o,)):",
        "        c: pl.Scalar[pl.INDEX] = j * 16",
        f"        r: {W} = self.k(a, b, c, o_it)",
        f"        o_rv: {W} = pl.yield_(r)",
        "    return o_rv",
    ]
    return program(head + ["    " + ln for ln in body], entry)


def _run_calls(text: str, exact: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[object, torch.Tensor, int]:
    """The run, its output and how many calls ran in the arenas (``Frame``s made, counted)."""
    from pypto_lsp.exec import memory

    torch.manual_seed(0)
    a, b = torch.randn(16, 128), torch.randn(16, 128)
    keep: dict[str, torch.Tensor] = {}
    ins, exp = {"a": a, "b": b, "o": torch.zeros(16, 128)}, {"o": a + b}
    fr, frames = _counting(monkeypatch, memory.Frame, "__init__", lambda: run_text(text, ins, exp, filename="m.py", exact=exact, keep=keep))
    return fr, keep["o"], frames


def test_a_kernel_every_call_of_which_takes_one_path_is_checked_until_a_call_is_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    text = calls_program(1024)
    fr, out, frames = _run_calls(text, False, monkeypatch)
    ref, ref_out, ref_frames = _run_calls(text, True, monkeypatch)
    assert fr.status == PASS and fr.memory == {"checked": True, "hazards": []}  # type: ignore[attr-defined]
    assert frames == 1 and ref_frames == 8  # the first call proves the other seven clean (exact: every call)
    assert torch.equal(out, ref_out)


def test_a_hazard_on_every_call_keeps_every_call_in_the_arenas(monkeypatch: pytest.MonkeyPatch) -> None:
    text = calls_program(0)
    fr, out, frames = _run_calls(text, False, monkeypatch)
    ref, ref_out, _ = _run_calls(text, True, monkeypatch)
    assert frames == 8
    assert [(h["kind"], h["line"]) for h in hazards(fr)] == [("overwrite", line(text, "pl.tile.add(x, y)"))]
    assert hazards(fr) == hazards(ref) and torch.equal(out, ref_out)


@pytest.mark.parametrize("when", ["c0 == 48", "c0 > 200"])
def test_a_path_that_depends_on_the_call_is_checked_on_every_call(when: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The branch tests a parameter: the fourth call alone overwrites y (``c0 == 48``), or none does."""
    from pypto_lsp.ir.invariance import same_path_every_call

    text = calls_program(1024, when)
    program_ir = parse_text(text).program
    assert program_ir is not None and not same_path_every_call(program_ir.function("k"))  # type: ignore[arg-type]
    fr, _out, frames = _run_calls(text, False, monkeypatch)
    assert frames == 8
    expect = [("overwrite", line(text, "pl.tile.add(x, y)"))] if "48" in when else []
    assert [(h["kind"], h["line"]) for h in hazards(fr)] == expect


# ---------------------------------------------------------------------- placeholders before AllocateMemoryAddr


def test_a_subview_offset_before_addresses_keeps_bases_apart() -> None:
    """Before AllocateMemoryAddr an offset is the place inside its own base: a slice at 512 in
    mem_vec_2 does not turn every base's placeholder 0 into address 0 (x, y and z overlapping)."""
    half = tile("Vec", "mem_vec_2", 512, size=512, shape="[8, 16]")
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', 'mem_vec_1', 0)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"z: {tile('Vec', 'mem_vec_2', 0)} = pl.tile.add(x, y)",
        f"zs: {half} = pl.tile.slice(z, [8, 16], [8, 0])",
        f"o1: {T} = pl.tile.store(z, [0, 0], o)",
        "return o1",
    ]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)}), orch())
    r = parse_text(text, "m.py")
    assert r.program is not None and not plan_program(r.program).addressed
    fr = run(text, expected=lambda a, b: a + b)
    assert hazards(fr) == [] and fr.status == PASS


def test_a_user_reserve_buffer_base_before_addresses_keeps_bases_apart() -> None:
    """``system.reserve_buffer(base=...)`` written by the user is no sign that the other tiles' offsets are addresses."""
    body = [
        'ring: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name="c2v", size=1024, base=4096)',
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', 'mem_vec_1', 0)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"z: {tile('Vec', 'mem_vec_2', 0)} = pl.tile.add(x, y)",
        f"o1: {T} = pl.tile.store(z, [0, 0], o)",
        "return o1",
    ]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)}), orch())
    r = parse_text(text, "m.py")
    assert r.program is not None and not plan_program(r.program).addressed
    fr = run(text, expected=lambda a, b: a + b)
    assert hazards(fr) == [] and fr.status == PASS
