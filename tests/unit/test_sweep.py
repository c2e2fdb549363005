"""Loop nests with independent iterations run over all iterations at once (pypto_lsp.exec.sweep), and where they must not."""

from __future__ import annotations

import torch

from pypto_lsp.validate.engine import compile_text, run_text
from pypto_lsp.validate.report import ERROR, PASS

AIC = "@pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)"
AIV = "@pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)"
GROUP = "@pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)"
ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"
INCORE = "@pl.function(type=pl.FunctionType.InCore)"
HEAD = "# pypto.program: P\nimport pypto.language as pl\n\n@pl.program\nclass P:\n"


def _class(*functions: list[str]) -> str:
    text = HEAD
    for f in functions:
        text += "".join("    " + ln + "\n" for ln in f)
    return text


def _source(text: str, exact: bool = False) -> str:
    comp = compile_text(text, exact=exact)
    assert comp.generated is not None, comp.error
    return comp.generated.source


# -- a window sweep on one core: out[:, j:j+8] = x[:, j:j+8] * 2 + y[:, j:j+8], over a 2-level nest


def _elementwise(offset: str = "[0, c]", extra: str = "") -> str:
    t = "pl.Tile[[4, 8], pl.FP32, pl.Mem.Vec]"
    body = [
        INCORE,
        "def k(x: pl.Tensor[[4, 64], pl.FP32], y: pl.Tensor[[4, 64], pl.FP32], o: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:",
        "    for ob, (o1,) in pl.range(4, init_values=(o,)):",
        "        c0: pl.Scalar[pl.INDEX] = ob * 16",
        "        for oi, (o2,) in pl.range(0, 16, 8, init_values=(o1,)):",
        "            c: pl.Scalar[pl.INDEX] = c0 + oi",
        f"            xt: {t} = pl.tile.load(x, [0, c], [4, 8], [4, 8], target_memory=pl.Mem.Vec)",
        f"            yt: {t} = pl.tile.load(y, [0, c], [4, 8], [4, 8], target_memory=pl.Mem.Vec)",
        f"            prev: {t} = pl.tile.load(o2, {offset}, [4, 8], [4, 8], target_memory=pl.Mem.Vec)",
        f"            s: {t} = pl.tile.muls(xt, 2.0)",
        f"            u: {t} = pl.tile.add(s, yt)",
        f"            w: {t} = pl.tile.add(u, prev)",
        *([extra] if extra else []),
        f"            o3: pl.Tensor[[4, 64], pl.FP32] = pl.tile.store(w, {offset}, o2)",
        "            o4 = pl.yield_(o3)",
        "        o5 = pl.yield_(o4)",
        "    return o5",
    ]
    orch = [
        ORCH,
        "def main(self, x: pl.Tensor[[4, 64], pl.FP32], y: pl.Tensor[[4, 64], pl.FP32], o: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:",
        "    r: pl.Tensor[[4, 64], pl.FP32] = self.k(x, y, o)",
        "    return r",
    ]
    return _class(body, orch)


def _ew_inputs() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(3)
    x, y, o = torch.randn(4, 64, generator=g), torch.randn(4, 64, generator=g), torch.randn(4, 64, generator=g)
    return {"x": x, "y": y, "o": o}, {"o": x * 2 + y + o}


def _ew_run(text: str, exact: bool) -> torch.Tensor:
    ins, exp = _ew_inputs()
    keep: dict[str, torch.Tensor] = {}
    r = run_text(text, ins, exp, rtol=1e-6, atol=1e-6, exact=exact, keep=keep)
    assert r.status == PASS, r.error
    return keep["o"]


def test_a_window_sweep_runs_once_and_gives_the_loops_numbers_bit_for_bit() -> None:
    text = _elementwise()
    src = _source(text)
    assert "_pl_sweeps.Sweep(((0, 4, 1), (0, 16, 8), ), None)" in src  # the whole nest: 8 iterations
    assert "_pl_sweeps" not in _source(text, exact=True)
    assert torch.equal(_ew_run(text, exact=False), _ew_run(text, exact=True))


def _zeroing() -> str:
    """``o`` zeroed chunk by chunk: one tile (made once, the same every iteration) stored at windows
    that move (qwen3's ``zero_down``)."""
    body = [
        INCORE,
        "def k(o: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:",
        "    for i, (o1,) in pl.range(8, init_values=(o,)):",
        "        c: pl.Scalar[pl.INDEX] = i * 8",
        "        z: pl.Tile[[4, 8], pl.FP32, pl.Mem.Vec] = pl.tile.full([4, 8], dtype=pl.FP32, value=0.0)",
        "        o2: pl.Tensor[[4, 64], pl.FP32] = pl.tile.store(z, [0, c], o1)",
        "        o3 = pl.yield_(o2)",
        "    return o3",
    ]
    orch = [
        ORCH,
        "def main(self, o: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:",
        "    r: pl.Tensor[[4, 64], pl.FP32] = self.k(o)",
        "    return r",
    ]
    return _class(body, orch)


def test_one_tile_stored_at_moving_windows_is_one_broadcast_write(monkeypatch) -> None:
    """The loop-invariant tile goes to all eight windows at once (no store kernel call), with the
    loop's values: the run as written calls the store eight times (the counter sees them)."""
    import pypto_lsp.exec.kernels.movement as movement

    calls = []
    real = movement.write_region
    monkeypatch.setattr(movement, "write_region", lambda *a, **k: calls.append(1) or real(*a, **k))
    text = _zeroing()
    assert "_pl_sweeps.Sweep(((0, 8, 1), ), None)" in _source(text)
    outs = {}
    for exact in (False, True):
        calls.clear()
        keep: dict[str, torch.Tensor] = {}
        r = run_text(text, {"o": torch.randn(4, 64)}, {"o": torch.zeros(4, 64)}, rtol=0, atol=0, exact=exact, keep=keep)
        assert r.status == PASS, r.error
        outs[exact] = (keep["o"], len(calls))
    assert outs[False][1] == 0 and outs[True][1] == 8
    assert torch.equal(outs[False][0], torch.zeros(4, 64)) and torch.equal(outs[True][0], torch.zeros(4, 64))


def test_overlapping_writes_run_the_loop_as_written() -> None:
    """Every iteration reads and writes the same window: an accumulation, not a sweep (the run-time
    check sends it to the loop as written, which must reach the loop's numbers)."""
    text = _elementwise(offset="[0, 0]")
    assert "_pl_sweeps.Sweep(" in _source(text)  # planned: the windows are only known at run time
    ins, _ = _ew_inputs()
    acc = ins["o"].clone()
    for c in range(0, 64, 8):
        acc[:, 0:8] = ins["x"][:, c : c + 8] * 2 + ins["y"][:, c : c + 8] + acc[:, 0:8]
    keep: dict[str, torch.Tensor] = {}
    r = run_text(text, ins, {"o": acc}, rtol=1e-6, atol=1e-6, keep=keep)
    assert r.status == PASS, r.error
    assert torch.equal(keep["o"], acc)


def test_a_read_of_the_written_tensor_elsewhere_keeps_the_loop() -> None:
    extra = "            other: pl.Tile[[4, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(o2, [0, 0], [4, 8], [4, 8], target_memory=pl.Mem.Vec)"
    assert "_pl_sweeps" not in _source(_elementwise(extra=extra))


def test_a_dead_statement_is_still_checked_on_its_line() -> None:
    """Nothing uses ``bad``: the sweep runs it for one iteration only, and its wrong annotation is
    still reported, from the generated line of its own IR line. (The static checker would catch
    this one first; the script is run here without it.)"""
    import sys

    from pypto_lsp.exec.codegen import generate
    from pypto_lsp.exec.runtime import ShapeCheckError
    from pypto_lsp.ir.parser import parse_text

    extra = "            bad: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = pl.tile.add(xt, yt)"
    text = _elementwise(extra=extra)
    program = parse_text(text, "d.py").program
    assert program is not None
    gen = generate(program)
    assert "_pl_sweep.op(_pl_op_tile_add, 'tile.add', True," in gen.source
    ns: dict[str, object] = {}
    exec(compile(gen.source, "<sweep>", "exec"), ns)
    ins, _ = _ew_inputs()
    try:
        ns["main"](ins["x"], ins["y"], ins["o"])  # type: ignore[operator]
    except ShapeCheckError as exc:
        assert "bad" in str(exc)
        tb = sys.exc_info()[2]
        lines = []
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<sweep>":
                lines.append(tb.tb_lineno)
            tb = tb.tb_next
        span = gen.ir_span(lines[-1])
        assert span is not None and span.line == next(i for i, ln in enumerate(text.splitlines(), 1) if "bad:" in ln)
    else:
        raise AssertionError("the dead statement's check did not run")


# -- a cross-core round trip: the AIV sends one tile per window, the AIC multiplies it by its window
#    of w and sends the product back, the AIV adds it into its window of o (ExpandMixedKernel's down
#    projection, at a toy size)

SIG = "x: pl.Tensor[[16, 32], pl.BF16], w: pl.Tensor[[32, 128], pl.BF16], o: pl.Out[pl.Tensor[[16, 128], pl.FP32]]"
OUT = "pl.Tensor[[16, 128], pl.FP32]"


def _round_trip(aiv_tail: str = "", dual: bool = False) -> str:
    aic = [
        AIC,
        f"def g_aic({SIG}):",
        "    for j in pl.range(4):",
        "        c: pl.Scalar[pl.INDEX] = j * 32",
        "        wt: pl.Tile[[32, 32], pl.BF16, pl.Mem.Mat] = pl.tile.load(w, [0, c], [32, 32], [32, 32], target_memory=pl.Mem.Mat)",
        "        xm: pl.Tile[[16, 32], pl.BF16, pl.Mem.Mat] = pl.tile.tpop_from_aiv(split=0)",
        "        xl: pl.Tile[[16, 32], pl.BF16, pl.Mem.Left] = pl.tile.move(xm, target_memory=pl.Mem.Left)",
        "        pl.system.tfree_to_aiv(xm, split=0)",
        "        wr: pl.Tile[[32, 32], pl.BF16, pl.Mem.Right] = pl.tile.move(wt, target_memory=pl.Mem.Right)",
        "        t: pl.Tile[[16, 32], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(xl, wr)",
        "        pl.tile.tpush_to_aiv(t, split=0)",
    ]
    v = "pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec]"
    aiv = [
        AIV,
        f"def g_aiv({SIG}) -> {OUT}:",
        *(['    pl.func_attr({"dual_aiv_dispatch": True})'] if dual else []),
        "    xt: pl.Tile[[16, 32], pl.BF16, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 32], [16, 32], target_memory=pl.Mem.Vec)",
        "    for j, (o1,) in pl.range(4, init_values=(o,)):",
        "        c: pl.Scalar[pl.INDEX] = j * 32",
        f"        prev: {v} = pl.tile.load(o1, [0, c], [16, 32], [16, 32], target_memory=pl.Mem.Vec)",
        "        pl.tile.tpush_to_aic(xt, split=0)",
        f"        p: {v} = pl.tile.tpop_from_aic(split=0)",
        f"        nxt: {v} = pl.tile.add(prev, p)",
        "        pl.system.tfree_to_aic(p, split=0)",
        *([aiv_tail] if aiv_tail else []),
        f"        o2: {OUT} = pl.tile.store(nxt, [0, c], o1)",
        "        o3 = pl.yield_(o2)",
        "    return o3",
    ]
    group = [
        GROUP,
        f"def g({SIG}) -> {OUT}:",
        "    self.g_aic(x, w, o)",
        "    r: pl.Tensor[[16, 128], pl.FP32] = self.g_aiv(x, w, o)",
        "    return r",
    ]
    orch = [ORCH, f"def main(self, {SIG}) -> {OUT}:", f"    r: {OUT} = self.g(x, w, o)", "    return r"]
    return _class(aic, aiv, group, orch)


def _rt_run(text: str, exact: bool) -> torch.Tensor:
    g = torch.Generator().manual_seed(9)
    x = torch.randn(16, 32, generator=g).bfloat16()
    w = torch.randn(32, 128, generator=g).bfloat16()
    o = torch.randn(16, 128, generator=g)
    keep: dict[str, torch.Tensor] = {}
    r = run_text(text, {"x": x, "w": w, "o": o}, {"o": o + x.float() @ w.float()}, rtol=1e-5, atol=1e-4, exact=exact, keep=keep)
    assert r.status == PASS, r.error
    return keep["o"]


def test_both_ends_of_a_round_trip_sweep() -> None:
    text = _round_trip()
    src = _source(text)
    assert "_pl_sweeps.Sweep(((0, 4, 1), ), ('tile.tpop_from_aiv', 0, 0))" in src  # the AIC pops first: chunked
    assert "_pl_sweeps.Sweep(((0, 4, 1), ), None)" in src  # the AIV pushes all, then pops all
    batched, exact = _rt_run(text, exact=False), _rt_run(text, exact=True)
    assert torch.equal(batched, exact)  # one batched matmul gives each window's own product


def test_a_batched_product_another_blas_would_round_otherwise_runs_window_by_window(monkeypatch) -> None:
    """A batched matmul giving each window's own product bit for bit is this BLAS's behaviour, not
    a promise: the first batch of each layout is computed both ways and compared; where they
    differ (here a stand-in BLAS whose batched products differ in the last bits) every window is
    multiplied on its own, and the run keeps the loop's bits."""
    from pypto_lsp.exec import sweep

    real = torch.matmul

    def other_blas(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return real(a, b) * (1 + 2**-20) if a.dim() == 3 else real(a, b)

    monkeypatch.setattr(sweep, "_MATMUL_EXACT", {})
    monkeypatch.setattr(torch, "matmul", other_blas)
    text = _round_trip()
    assert torch.equal(_rt_run(text, exact=False), _rt_run(text, exact=True))
    assert sweep._MATMUL_EXACT and not any(sweep._MATMUL_EXACT.values())


def test_dual_dispatch_lanes_sweep_too() -> None:
    text = _round_trip(dual=True)
    assert _source(text).count("_pl_sweeps.Sweep(") == 2
    assert torch.equal(_rt_run(text, exact=False), _rt_run(text, exact=True))


def test_a_cube_sweep_takes_what_an_unbatched_peer_sends() -> None:
    """The AIV loop cannot sweep (a second pop after the push answers nothing the AIC sent... here:
    an op the sweep never batches); the AIC sweep then runs in chunks of what has arrived."""
    tail = "        pl.system.aiv_initialize_pipe(0, 0, dir_mask=3, slot_size=2048, slot_num=2)"
    text = _round_trip(aiv_tail=tail)
    src = _source(text)
    assert src.count("_pl_sweeps.Sweep(") == 1 and "('tile.tpop_from_aiv', 0, 0)" in src
    assert torch.equal(_rt_run(text, exact=False), _rt_run(text, exact=True))


def test_a_pop_nobody_answers_is_still_a_deadlock_on_its_line() -> None:
    text = _round_trip().replace("pl.tile.tpush_to_aiv(t, split=0)", "pl.system.tfree_to_aiv(xm, split=0)")
    g = torch.Generator().manual_seed(9)
    ins = {"x": torch.randn(16, 32, generator=g).bfloat16(), "w": torch.randn(32, 128, generator=g).bfloat16(), "o": torch.zeros(16, 128)}
    r = run_text(text, ins, {"o": torch.zeros(16, 128)}, rtol=1e-5, atol=1e-4)
    assert r.status == ERROR and r.error is not None and "deadlock" in r.error.message
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "p: pl.Tile" in ln)
    assert r.error.line == line


def _c2v(dual: bool, lane_branch: bool = False) -> str:
    """The cube pushes one product per window; the vector lanes pop it and add it into o."""
    aic = [
        AIC,
        f"def g_aic({SIG}):",
        "    xm: pl.Tile[[16, 32], pl.BF16, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [16, 32], [16, 32], target_memory=pl.Mem.Mat)",
        "    xl: pl.Tile[[16, 32], pl.BF16, pl.Mem.Left] = pl.tile.move(xm, target_memory=pl.Mem.Left)",
        "    for j in pl.range(4):",
        "        c: pl.Scalar[pl.INDEX] = j * 32",
        "        wt: pl.Tile[[32, 32], pl.BF16, pl.Mem.Mat] = pl.tile.load(w, [0, c], [32, 32], [32, 32], target_memory=pl.Mem.Mat)",
        "        wr: pl.Tile[[32, 32], pl.BF16, pl.Mem.Right] = pl.tile.move(wt, target_memory=pl.Mem.Right)",
        "        t: pl.Tile[[16, 32], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(xl, wr)",
        "        pl.tile.tpush_to_aiv(t, split=0)",
    ]
    v = "pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec]"
    loop = [
        "for j, (o1,) in pl.range(4, init_values=(o,)):",
        "    c: pl.Scalar[pl.INDEX] = j * 32",
        f"    prev: {v} = pl.tile.load(o1, [0, c], [16, 32], [16, 32], target_memory=pl.Mem.Vec)",
        f"    p: {v} = pl.tile.tpop_from_aic(split=0)",
        f"    nxt: {v} = pl.tile.add(prev, p)",
        "    pl.system.tfree_to_aic(p, split=0)",
        f"    o2: {OUT} = pl.tile.store(nxt, [0, c], o1)",
        "    o3 = pl.yield_(o2)",
    ]
    aiv = [AIV, f"def g_aiv({SIG}) -> {OUT}:", *(['    pl.func_attr({"dual_aiv_dispatch": True})'] if dual else [])]
    if lane_branch:
        aiv += ["    lane: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()", "    if lane == 0:"]
        aiv += ["        " + ln for ln in loop] + ["        return o3", "    else:"]
        aiv += ["        for j2 in pl.range(4):", f"            q: {v} = pl.tile.tpop_from_aic(split=0)", "        return o"]
    else:
        aiv += ["    " + ln for ln in loop] + ["    return o3"]
    group = [GROUP, f"def g({SIG}) -> {OUT}:", "    self.g_aic(x, w, o)", f"    r: {OUT} = self.g_aiv(x, w, o)", "    return r"]
    orch = [ORCH, f"def main(self, {SIG}) -> {OUT}:", f"    r: {OUT} = self.g(x, w, o)", "    return r"]
    return _class(aic, aiv, group, orch)


def test_lanes_writing_the_same_windows_keep_the_loop() -> None:
    """Two lanes read-modify-write o window by window: the order of their reads and writes (set by
    the pops) is the result, so the vector loop runs as written; one lane alone, or the writing
    loop in a branch on the lane, sweeps."""
    assert _source(_c2v(dual=True)).count("_pl_sweeps.Sweep(") == 1  # the cube's loop only
    assert _source(_c2v(dual=False)).count("_pl_sweeps.Sweep(") == 2
    assert _source(_c2v(dual=True, lane_branch=True)).count("_pl_sweeps.Sweep(") == 3
    for text in (_c2v(dual=False), _c2v(dual=True, lane_branch=True)):
        assert torch.equal(_rt_run(text, exact=False), _rt_run(text, exact=True))


def test_racing_lanes_get_the_turn_per_push() -> None:
    """Both lanes read-modify-write o: their numbers depend on when each push hands them the turn
    (a race on the hardware too). The cube's sweep then pushes one tile at a time, and the run
    gives the loop's numbers exactly."""
    text = _c2v(dual=True)
    assert "paced=True" in _source(text) and "paced" not in _source(_c2v(dual=True, lane_branch=True))
    g = torch.Generator().manual_seed(9)
    ins = {
        "x": torch.randn(16, 32, generator=g).bfloat16(),
        "w": torch.randn(32, 128, generator=g).bfloat16(),
        "o": torch.randn(16, 128, generator=g),
    }
    outs = []
    for exact in (False, True):
        keep: dict[str, torch.Tensor] = {}
        run_text(text, {k: v.clone() for k, v in ins.items()}, {"o": ins["o"]}, rtol=1e-5, atol=1e-4, exact=exact, keep=keep)
        outs.append(keep["o"])
    assert torch.equal(outs[0], outs[1])


def test_a_stacked_batch_carries_one_valid_region_for_all_its_items() -> None:
    """An idle lane's tiles (valid ``[0, 0]``) stay one stacked tensor through the site checks; the
    items carry the region, and the batched forms (``stacked()``) do not take them."""
    from pypto_lsp.exec.sweep import Batch, Sweep
    from pypto_lsp.exec.values import get_valid

    sw = Sweep(((0, 4, 1),), None)
    b = Batch(t=torch.randn(4, 16, 64))
    out = sw.chk(b, (16, 64), torch.float32, (0, 0), "t")
    assert isinstance(out, Batch) and out.t is b.t and out.valid == (0, 0) and out.stacked() is None
    assert [get_valid(x) for x in out.all()] == [(0, 0)] * 4 and get_valid(out.item(2)) == (0, 0)
    assert torch.equal(out.item(2), b.t[2])
    assert sw.chk(out, (16, 64), torch.float32, None, "t") is out  # no annotation: the region stays
    whole = sw.chk(out, (16, 64), torch.float32, (16, 64), "t")  # the whole tile: no region
    assert isinstance(whole, Batch) and whole.valid is None and whole.stacked() is b.t


def test_ix_arithmetic_is_per_iteration() -> None:
    """A sweep's index values: each operation applies per iteration, with an int on either side."""
    import pytest

    from pypto_lsp.exec.sweep import Ix

    i, j = Ix((0, 1, 2)), Ix((10, 20, 30))
    assert (i + j).v == (10, 21, 32)
    assert (i * 4 + 1).v == (1, 5, 9)
    assert (2 * i).v == (0, 2, 4)
    assert (j - i).v == (10, 19, 28)
    assert (j - 5).v == (5, 15, 25)
    assert (100 - i).v == (100, 99, 98)
    assert (i + torch.tensor(3)).v == (3, 4, 5)  # a scalar tensor is an int here
    with pytest.raises(ValueError):
        i + Ix((1, 2))  # nests of different sizes never mix
