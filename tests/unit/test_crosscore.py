"""The AIC/AIV cross-core runtime: split modes, dual dispatch, pipe ids, deadlock and error reporting."""

from __future__ import annotations

import math
import threading
import time
import traceback

import pytest
import torch

from pypto_lsp.exec import context, crosscore, runtime
from pypto_lsp.exec.crosscore import CrossCoreError, run_group
from pypto_lsp.exec.kernels import KERNELS, ResultType
from pypto_lsp.exec.values import get_valid, valid_or_shape, with_valid

K = KERNELS
push_aiv = K["tile.tpush_to_aiv"]
pop_aic = K["tile.tpop_from_aic"]
push_aic = K["tile.tpush_to_aic"]
pop_aiv = K["tile.tpop_from_aiv"]
lane_idx = K["tile.get_subblock_idx"]


def _nothing(*_args):
    return None


def _c2v(tile: torch.Tensor, split: int, *, lane_stride: int = 0, dual: bool = False, rtype=None) -> dict[int, torch.Tensor]:
    """AIC pushes ``tile`` once; every AIV lane pops; returns {lane: popped}."""
    got: dict[int, torch.Tensor] = {}

    def aic():
        push_aiv(tile, split=split, lane_stride=lane_stride)

    def aiv():
        got[lane_idx()] = pop_aic(split=split, _rtype=rtype)

    run_group("c2v", aic, aiv, (), split=split, dual_aiv_dispatch=dual)
    return got


# ---------------------------------------------------------------------- AIC -> AIV


def test_c2v_no_split_single_lane() -> None:
    t = torch.randn(16, 8)
    got = _c2v(t, 0)
    assert list(got) == [0] and torch.equal(got[0], t)


def test_c2v_up_down() -> None:
    t = torch.randn(64, 32)
    got = _c2v(t, 1)
    assert torch.equal(got[0], t[:32]) and torch.equal(got[1], t[32:])
    assert get_valid(got[0]) is None and get_valid(got[1]) is None


def test_c2v_left_right() -> None:
    t = torch.randn(16, 40)
    got = _c2v(t, 2)
    assert torch.equal(got[0], t[:, :20]) and torch.equal(got[1], t[:, 20:])


def test_c2v_up_down_odd_pads_lane1_to_the_box() -> None:
    t = torch.randn(33, 64)
    got = _c2v(t, 3, rtype=ResultType((17, 64), torch.float32, None, None, "Vec"))
    assert got[0].shape == (17, 64) and torch.equal(got[0], t[:17])
    assert valid_or_shape(got[0]) == (17, 64)
    # The reference hands lane 1 a 16-row tensor against a declared 17-row tile.
    assert got[1].shape == (17, 64)
    assert torch.equal(got[1][:16], t[17:]) and get_valid(got[1]) == (16, 64)


def test_c2v_left_right_odd() -> None:
    t = torch.randn(8, 9)
    got = _c2v(t, 4)
    assert got[0].shape == (8, 5) and got[1].shape == (8, 5)
    assert torch.equal(got[0], t[:, :5]) and torch.equal(got[1][:, :4], t[:, 5:])
    assert get_valid(got[1]) == (8, 4)


def test_c2v_odd_with_lane_stride() -> None:
    # Upstream example: 16x2 tile, valid 13 rows, code 3, lane_stride 7 -> 8-row payloads, valid 7 and 6.
    t = with_valid(torch.arange(32.0).reshape(16, 2), (13, 2))
    got = _c2v(t, 3, lane_stride=7)
    assert got[0].shape == (8, 2) and got[1].shape == (8, 2)
    assert torch.equal(got[0], t[:8]) and torch.equal(got[1], t[7:15])
    assert valid_or_shape(got[0]) == (7, 2) and valid_or_shape(got[1]) == (6, 2)


def test_c2v_odd_split_requires_lanes_one_apart() -> None:
    with pytest.raises(CrossCoreError) as ei:
        _c2v(torch.randn(16, 4), 3)  # 8 and 8: not one apart
    assert ei.value.kind == "thread_error" and ei.value.role == "aic"
    assert isinstance(ei.value.__cause__, ValueError)


def test_c2v_bad_lane_stride() -> None:
    with pytest.raises(CrossCoreError) as ei:
        _c2v(torch.randn(16, 4), 1, lane_stride=9)
    assert isinstance(ei.value.__cause__, ValueError)


def test_c2v_dual_no_split_copies_to_both_lanes() -> None:
    t = torch.randn(8, 8)
    seen = {}

    def aic():
        push_aiv(t, split=0)

    def aiv():
        x = pop_aic(split=0)
        seen[lane_idx()] = x.clone()
        x.mul_(100.0)  # each lane owns an independent copy

    run_group("dual", aic, aiv, (), split=0, dual_aiv_dispatch=True)
    assert torch.equal(seen[0], t) and torch.equal(seen[1], t)


def test_push_stores_a_clone() -> None:
    t = torch.zeros(4, 4)
    got = {}

    def aic():
        push_aiv(t, split=0)
        t.fill_(9.0)  # producer reuses its buffer

    def aiv():
        time.sleep(0.05)
        got["x"] = pop_aic(split=0)

    run_group("clone", aic, aiv, (), split=0, dual_aiv_dispatch=False)
    assert bool((got["x"] == 0).all())


# ---------------------------------------------------------------------- AIV -> AIC


@pytest.mark.parametrize("split", [1, 2])
def test_v2c_split_merges_lanes(split: int) -> None:
    got = {}
    shape = (8, 16) if split == 1 else (16, 8)

    def aic():
        got["x"] = pop_aiv(split=split)

    def aiv():
        push_aic(torch.full(shape, float(lane_idx() + 1)), split=split)

    run_group("v2c", aic, aiv, (), split=split, dual_aiv_dispatch=False)
    x = got["x"]
    assert x.shape == (16, 16)
    first, second = (x[:8], x[8:]) if split == 1 else (x[:, :8], x[:, 8:])
    assert bool((first == 1).all()) and bool((second == 2).all())
    assert get_valid(x) is None


def test_v2c_merge_valid_is_sum_of_lane_valids() -> None:
    got = {}

    def aic():
        got["x"] = pop_aiv(split=1)

    def aiv():
        push_aic(with_valid(torch.ones(8, 4), (8, 4) if lane_idx() == 0 else (5, 4)), split=1)

    run_group("v2cv", aic, aiv, (), split=1, dual_aiv_dispatch=False)
    assert get_valid(got["x"]) == (13, 4)


def test_v2c_no_split_and_dual() -> None:
    got = {}

    def aic():
        got["x"] = pop_aiv(split=0)

    def aiv():
        push_aic(torch.full((2, 2), float(lane_idx() + 1)), split=0)

    run_group("v2c0", aic, aiv, (), split=0, dual_aiv_dispatch=False)
    assert bool((got["x"] == 1).all())
    run_group("v2cdual", aic, aiv, (), split=0, dual_aiv_dispatch=True)
    assert bool((got["x"] == 1).all())  # waits for both lanes, keeps lane 0's


def test_v2c_odd_split_is_rejected() -> None:
    with pytest.raises(CrossCoreError) as ei:
        run_group("odd", _nothing, lambda: push_aic(torch.ones(2, 2), split=3), (), split=3, dual_aiv_dispatch=False)
    assert ei.value.kind == "thread_error" and isinstance(ei.value.__cause__, ValueError)


def test_round_trip_with_store_by_lane() -> None:
    a = torch.randn(64, 32)
    out = torch.zeros(64, 32)
    back = {}

    def aic(a, out):
        push_aiv(a, split=1)
        back["x"] = pop_aiv(split=1)

    def aiv(a, out):
        h = K["tile.muls"](pop_aic(split=1), 2.0)
        K["tile.store"](h, [lane_idx() * 32, 0], out)
        push_aic(h, split=1)
        return out

    r = run_group("rt", aic, aiv, (a, out), split=1, dual_aiv_dispatch=False)
    assert r is out
    assert torch.allclose(out, 2 * a) and torch.allclose(back["x"], 2 * a)


# ---------------------------------------------------------------------- pipe ids, values, context


def test_separate_pipe_ids_are_separate_fifos() -> None:
    got = {}

    def aic():
        push_aiv(torch.zeros(2, 2), split=0, id=0)
        push_aiv(torch.ones(2, 2), split=0, id=1)

    def aiv():
        got["one"] = pop_aic(split=0, id=1)  # the reference would hand out the id=0 tile here
        got["zero"] = pop_aic(split=0, id=0)

    run_group("ids", aic, aiv, (), split=0, dual_aiv_dispatch=False)
    assert bool((got["one"] == 1).all()) and bool((got["zero"] == 0).all())


def test_returns_aiv_lane0_value() -> None:
    r = run_group("ret", lambda: "aic", lambda: f"lane{lane_idx()}", (), split=1, dual_aiv_dispatch=False)
    assert r == "lane0"


def test_nan_passes_through() -> None:
    t = torch.tensor([[math.nan, 1.0], [2.0, math.inf]])
    got = _c2v(t, 1)
    assert math.isnan(got[0][0, 0]) and got[1][0, 1] == math.inf
    merged = {}

    def aic():
        merged["x"] = pop_aiv(split=1)

    def aiv():
        push_aic(torch.full((1, 2), math.nan), split=1)

    run_group("nan", aic, aiv, (), split=1, dual_aiv_dispatch=False)
    assert bool(torch.isnan(merged["x"]).all())


def test_spmd_block_reaches_group_threads() -> None:
    seen = []

    def aiv():
        seen.append((K["tile.get_block_idx"](), K["tile.get_block_num"](), lane_idx()))

    with context.spmd_block(2, 4):
        run_group("spmd", _nothing, aiv, (), split=1, dual_aiv_dispatch=False)
    assert sorted(seen) == [(2, 4, 0), (2, 4, 1)]
    assert K["tile.get_block_idx"]() == 0


def test_concurrent_groups_do_not_interfere() -> None:
    errors = []

    def worker(seed: int) -> None:
        try:
            for i in range(20):
                a = torch.full((8, 4), float(seed * 100 + i))
                got = _c2v(a, 1)
                assert bool((got[0] == seed * 100 + i).all()) and bool((got[1] == seed * 100 + i).all())
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors


def test_group_overhead_is_small() -> None:
    run_group("warm", _nothing, _nothing, (), split=1, dual_aiv_dispatch=False)
    t0 = time.perf_counter()
    for _ in range(50):
        run_group("fast", _nothing, _nothing, (), split=1, dual_aiv_dispatch=False)
    per_run = (time.perf_counter() - t0) / 50
    assert per_run < 0.005


# ---------------------------------------------------------------------- deadlock, errors, timeouts


def unpaired_aiv_pop():
    return pop_aic(split=0)


def test_unpaired_pop_is_a_deadlock_raised_quickly() -> None:
    t0 = time.monotonic()
    with pytest.raises(CrossCoreError) as ei:
        run_group("dl", _nothing, unpaired_aiv_pop, (), split=0, dual_aiv_dispatch=False)
    elapsed = time.monotonic() - t0
    assert elapsed < 2.0  # detected, not timed out
    e = ei.value
    assert e.kind == "deadlock" and e.op == "tile.tpop_from_aic" and e.split == 0 and e.lane == 0 and e.role == "aiv"
    assert e.queue_depths == {"to_aiv[split=0,lane=*,id=0]": 0}
    assert "tile.tpop_from_aic" in str(e) and "split=0" in str(e) and "lane=0" in str(e)
    # chained to the pop's exception, whose traceback holds the kernel frame that called the pop
    assert isinstance(e.__cause__, CrossCoreError)
    frames = [f.name for f in traceback.extract_tb(e.__cause__.__traceback__)]
    assert "unpaired_aiv_pop" in frames


def test_crossed_pops_deadlock() -> None:
    def aic():
        pop_aiv(split=1)
        push_aiv(torch.ones(4, 4), split=1)

    def aiv():
        pop_aic(split=1)
        push_aic(torch.ones(2, 4), split=1)

    t0 = time.monotonic()
    with pytest.raises(CrossCoreError) as ei:
        run_group("cross", aic, aiv, (), split=1, dual_aiv_dispatch=False)
    assert time.monotonic() - t0 < 2.0
    assert ei.value.kind == "deadlock"


def test_one_lane_finished_other_lane_blocked_is_deadlock() -> None:
    def aic():
        push_aiv(torch.ones(2, 2), split=0)  # only one tile for two dual lanes... lane 1 gets its copy too

    def aiv():
        pop_aic(split=0)
        if lane_idx() == 1:
            pop_aic(split=0)  # nobody will push a second tile

    with pytest.raises(CrossCoreError) as ei:
        run_group("half", aic, aiv, (), split=0, dual_aiv_dispatch=True)
    assert ei.value.kind == "deadlock" and ei.value.lane == 1


def test_slow_producer_is_not_a_deadlock() -> None:
    got = {}

    def aic():
        time.sleep(0.3)  # busy, not blocked in a pop
        push_aiv(torch.ones(2, 2), split=0)

    def aiv():
        got["x"] = pop_aic(split=0)

    run_group("slow", aic, aiv, (), split=0, dual_aiv_dispatch=False)
    assert bool((got["x"] == 1).all())


def failing_aiv_kernel(x):
    return x / 0 if isinstance(x, int) else 1 // 0


def test_thread_exception_is_chained_with_its_traceback() -> None:
    def aic(x):
        pop_aiv(split=0)  # blocked: must be cancelled, not reported

    t0 = time.monotonic()
    with pytest.raises(CrossCoreError) as ei:
        run_group("boom", aic, failing_aiv_kernel, (3,), split=0, dual_aiv_dispatch=False)
    assert time.monotonic() - t0 < 2.0
    e = ei.value
    assert e.kind == "thread_error" and e.role == "aiv" and e.lane == 0
    assert isinstance(e.__cause__, ZeroDivisionError)
    frames = [f.name for f in traceback.extract_tb(e.__cause__.__traceback__)]
    assert frames[-1] == "failing_aiv_kernel"
    assert "failing_aiv_kernel" in str(e)


def test_pusher_loop_is_cancelled_after_a_failure() -> None:
    pushes = []

    def aic():
        for _ in range(100000):
            push_aiv(torch.ones(1), split=0)
            pushes.append(1)
            time.sleep(0.001)

    def aiv():
        raise RuntimeError("lane failed")

    t0 = time.monotonic()
    with pytest.raises(CrossCoreError) as ei:
        run_group("cancel", aic, aiv, (), split=0, dual_aiv_dispatch=False)
    assert time.monotonic() - t0 < 2.0
    assert isinstance(ei.value.__cause__, RuntimeError)
    n = len(pushes)
    time.sleep(0.1)
    assert len(pushes) == n  # the AIC loop stopped


def test_pop_behind_a_busy_peer_is_a_deadlock_once_the_peer_ends() -> None:
    # Kernel threads take turns (deterministic scheduling): the vector lane's pop only
    # starts when the cube kernel has ended without pushing, so it is a deadlock, named
    # at the pop, as soon as that happens.
    def aic():
        time.sleep(0.3)

    t0 = time.monotonic()
    with pytest.raises(CrossCoreError) as ei:
        run_group("busy", aic, unpaired_aiv_pop, (), split=0, dual_aiv_dispatch=False)
    assert time.monotonic() - t0 < 0.3 + 1.5
    assert ei.value.kind == "deadlock" and ei.value.op == "tile.tpop_from_aic"
    assert isinstance(ei.value.__cause__, CrossCoreError)


def test_group_timeout() -> None:
    def sleepy():
        time.sleep(0.6)

    t0 = time.monotonic()
    with pytest.raises(CrossCoreError) as ei:
        run_group("stuck", sleepy, sleepy, (), split=0, dual_aiv_dispatch=False, group_timeout_s=0.2)
    assert time.monotonic() - t0 < 1.5
    assert ei.value.kind == "timeout" and ei.value.op == "group"


def test_configure_changes_defaults() -> None:
    old = crosscore.DEFAULT_GROUP_TIMEOUT_S
    try:
        crosscore.configure(group_timeout_s=7.0)
        assert crosscore.DEFAULT_GROUP_TIMEOUT_S == 7.0
    finally:
        crosscore.configure(group_timeout_s=old)


def test_standalone_transport_outside_groups() -> None:
    context.reset()
    try:
        push_aiv(torch.ones(2, 2), split=0)
        assert bool((pop_aic(split=0) == 1).all())
        t0 = time.monotonic()
        with pytest.raises(CrossCoreError) as ei:
            pop_aic(split=0)
        assert time.monotonic() - t0 < 1.0
        assert ei.value.kind == "deadlock"
        push_aiv(torch.ones(2, 2), split=0)
        context.reset()  # drops the standalone FIFOs
        with pytest.raises(CrossCoreError):
            pop_aic(split=0)
    finally:
        context.reset()


# ---------------------------------------------------------------------- split_aiv markers


def test_aiv_shard_and_aic_gather_identity_without_lanes() -> None:
    t = torch.randn(64, 64)
    assert K["tile.aiv_shard"](t, split=1) is t
    assert K["tile.aic_gather"](t, split=1) is t


def test_split_aiv_region_sequential_lanes() -> None:
    """The production region (``runtime.split_aiv_lanes`` and the kernels the script gets)."""
    shard, gather = runtime.kernel("tile.aiv_shard"), runtime.kernel("tile.aic_gather")
    qk = torch.randn(64, 64)
    full = None
    lanes = []
    for aiv_id in runtime.split_aiv_lanes(2, 1):  # UP_DOWN
        lanes.append((aiv_id, lane_idx()))
        h = shard(qk)  # split inherited from the region
        assert h.shape == (32, 64)
        sc = K["tile.muls"](h, 2.0)
        full = gather(sc, _site=1)
    assert lanes == [(0, 0), (1, 1)]
    assert lane_idx() == 0
    assert full is not None and torch.allclose(full, 2 * qk)


def test_aiv_shard_odd_extent_per_lane_valid() -> None:
    acc = torch.randn(33, 64)
    parts = {}
    shard = runtime.kernel("tile.aiv_shard")
    for lane in runtime.split_aiv_lanes(2, 1):
        parts[lane] = shard(acc, split=1, _rtype=ResultType((17, 64), torch.float32, None, None, "Vec"))
    assert parts[0].shape == (17, 64) and torch.equal(parts[0], acc[:17])
    assert parts[1].shape == (17, 64) and torch.equal(parts[1][:16], acc[17:]) and get_valid(parts[1]) == (16, 64)


def test_aiv_shard_and_gather_in_concurrent_lane_threads() -> None:
    qk = torch.randn(16, 8)
    got = {}

    def aiv():
        h = K["tile.aiv_shard"](qk, split=2)
        full = K["tile.aic_gather"](K["tile.adds"](h, 1.0), split=2)
        got[lane_idx()] = full

    run_group("shard", _nothing, aiv, (), split=2, dual_aiv_dispatch=False)
    assert torch.allclose(got[0], qk + 1) and torch.allclose(got[1], qk + 1)


# ---------------------------------------------------------------------- bulk transfers (sweeps, pipe loops)


def test_a_bulk_push_popped_in_a_row_is_one_view_of_its_buffer() -> None:
    t = torch.randn(6, 4, 4)
    got: dict[str, object] = {}

    def aic():
        crosscore.get_runtime().push_many_to_aiv(lambda: list(t.clone().unbind(0)), 0)  # one buffer
        crosscore.get_runtime().push_many_to_aiv(lambda: list(t.clone().unbind(0)), 0)  # another

    def aiv():
        rt = crosscore.get_runtime()
        got["first"] = rt.pop_many_from_aic(0, 0, 0, 4)
        got["rest"] = rt.pop_many_from_aic(0, 0, 0, 4)  # two of each buffer

    run_group("bulk", aic, aiv, (), split=0, dual_aiv_dispatch=False)
    first, rest = got["first"], got["rest"]
    view = crosscore.parts_view(first)  # type: ignore[arg-type]
    assert view is not None and torch.equal(view, t[:4]) and view.data_ptr() == first[0].data_ptr()  # type: ignore[index]
    assert torch.equal(crosscore.parts_view(first[1:3]), t[1:3])  # type: ignore[arg-type,index]
    assert crosscore.parts_view(rest) is None  # type: ignore[arg-type]  # across two buffers: a stack is needed
    assert crosscore.parts_view(first[:1]) is None  # type: ignore[index]
    assert crosscore.parts_view([first[0], first[2]]) is None  # type: ignore[index]  # not in a row
    assert crosscore.parts_view([with_valid(x, (2, 2)) for x in first]) is None  # type: ignore[union-attr]


def test_a_dual_lane_bulk_push_to_the_cube_queues_lane_1_without_copies() -> None:
    """A dual-dispatch no-split pair: the cube keeps lane 0's tile of each pair, so lane 1's bulk
    push queues placeholders (its copies are never made) and the pops count them alike."""
    made: list[int] = []
    got: dict[str, list[torch.Tensor]] = {}
    tiles = {0: torch.ones(3, 4, 4), 1: torch.full((3, 4, 4), 7.0)}

    def aic():
        got["cube"] = crosscore.get_runtime().pop_many_from_aiv(0, 0, 3)

    def aiv():
        lane = lane_idx()

        def copies() -> list[torch.Tensor]:
            made.append(lane)
            return list(tiles[lane].clone().unbind(0))

        crosscore.get_runtime().push_many_to_aic(copies, 0, lane, 0, 3)

    run_group("dual-bulk", aic, aiv, (), split=0, dual_aiv_dispatch=True)
    assert made == [0]
    assert len(got["cube"]) == 3 and all(torch.equal(x, torch.ones(4, 4)) for x in got["cube"])


def test_a_bulk_push_of_one_buffer_is_one_run_popped_whole_as_that_buffer() -> None:
    """A bulk push may queue one ``[n, ...]`` buffer (its rows the tiles): a bulk pop of the whole
    run gets the buffer itself, single pops and part-pops get its rows, and the FIFO counts tiles."""
    t = torch.randn(6, 4, 4)
    got: dict[str, object] = {}
    buf = t.clone()

    def aic():
        rt = crosscore.get_runtime()
        rt.push_many_to_aiv(lambda: buf, 0)  # one run of 6
        rt.push_many_to_aiv(lambda: t[:3].clone(), 0)  # a second run of 3
        push_aiv(torch.full((4, 4), 9.0), split=0)  # and one tile

    def aiv():
        rt = crosscore.get_runtime()
        got["whole"] = rt.pop_many_from_aic(0, 0, 0, 6)
        got["one"] = pop_aic(split=0)
        got["across"] = rt.pop_many_from_aic(0, 0, 0, 3)  # two rows of the run and the single tile
        got["left"] = len(rt.fifos[("to_aiv", 0, None, 0)])

    run_group("runs", aic, aiv, (), split=0, dual_aiv_dispatch=False)
    whole = got["whole"]
    assert isinstance(whole, crosscore.Tiles) and len(whole) == 6
    view = crosscore.parts_view(whole)
    assert view is not None and view.data_ptr() == buf.data_ptr() and torch.equal(view, t)  # no copy, no rows made
    assert torch.equal(whole[2], t[2]) and [torch.equal(a, b) for a, b in zip(whole, t, strict=True)] == [True] * 6
    assert torch.equal(got["one"], t[0])  # type: ignore[arg-type]
    across = got["across"]
    assert isinstance(across, list) and len(across) == 3
    assert torch.equal(across[0], t[1]) and torch.equal(across[1], t[2]) and torch.equal(across[2], torch.full((4, 4), 9.0))
    assert got["left"] == 0

    # what the debugger lists of a pipe: every queued tile, runs row by row
    fifo = crosscore.Fifo()
    fifo.extend(t[:2].clone())
    fifo.append(torch.full((4, 4), 9.0))
    assert len(fifo) == 3 and [torch.equal(a, b) for a, b in zip(fifo, [t[0], t[1], torch.full((4, 4), 9.0)], strict=True)] == [True] * 3
    assert torch.equal(fifo.popleft(), t[0]) and len(fifo) == 2 and len(list(fifo)) == 2
