"""Multi-rank programs (exec/ranks.py, exec/kernels/distributed.py): the example, a deadlock, the collectives, dist.*."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pypto_lsp.exec import ranks
from pypto_lsp.exec.kernels import KERNELS
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.report import FileResult

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "allreduce_ranks"


def _golden() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    return torch.load(EXAMPLE / "golden" / "inputs.pt"), torch.load(EXAMPLE / "golden" / "expected.pt")


@pytest.mark.parametrize("name", ["00_frontend.py", "35_after_AllocateMemoryAddr.py"])
def test_example_allreduce_over_four_ranks(name: str) -> None:
    inputs, expected = _golden()
    text = (EXAMPLE / "passes_dump" / name).read_text()
    res = run_text(text, inputs, expected, filename=name)
    assert res.status == "pass", res.error
    assert res.call_counts["reduce_step"] == 4  # one chip program per rank, the rank count from x's leading dim


def test_a_wait_nothing_satisfies_is_a_deadlock_on_its_line_naming_signal_and_ranks() -> None:
    inputs, expected = _golden()
    text = (EXAMPLE / "passes_dump" / "00_frontend.py").read_text()
    broken = text.replace("pld.system.notify(signal, peer, [my_rank, 0], pl.const(1, pl.INT32), op=0)", "pass_ = 0")
    broken = broken.replace(
        "                pass_ = 0", "                pld.system.notify(signal, peer, [my_rank, 0], pl.const(0, pl.INT32), op=0)"
    )
    res = run_text(broken, inputs, expected, filename="broken.py")
    assert res.status == "error" and res.error is not None
    assert res.error.kind == "distributed:deadlock"
    wait_line = next(i for i, ln in enumerate(broken.splitlines(), 1) if "pld.system.wait(" in ln)
    assert res.error.line == wait_line
    assert "signal[" in res.error.message and "waiting ranks: 0, 1, 2, 3" in res.error.message


def _host(fn, n: int = 2):  # type: ignore[no-untyped-def]
    return ranks.run_host(fn, (), ranks=n)


def _window(shape: list[int], dtype: torch.dtype = torch.float32) -> ranks.WindowView:
    n = 1
    for d in shape:
        n *= d
    buf = KERNELS["pld.tensor.alloc_window_buffer"](n * torch.empty((), dtype=dtype).element_size())
    return KERNELS["pld.tensor.window"](buf, shape, dtype=dtype)


def test_host_collectives_every_rank() -> None:
    out: dict[str, list[torch.Tensor]] = {}

    def host() -> None:
        data = _window([1, 4])
        for r in range(3):
            data.local(r).fill_(float(r + 1))
        KERNELS["pld.tensor.allreduce"](data, None, op=0)
        out["sum"] = [data.local(r).clone() for r in range(3)]
        KERNELS["pld.tensor.allreduce"](data, None, op="Max")
        stage, gathered = _window([1, 2]), _window([3, 2])
        for r in range(3):
            stage.local(r).fill_(float(10 * r))
        KERNELS["builtin.tensor.allgather"](stage, gathered, None, _device=0)
        KERNELS["builtin.tensor.allgather"](stage, gathered, None, _device=1)
        KERNELS["builtin.tensor.allgather"](stage, gathered, None, _device=2)
        out["gather"] = [gathered.local(r).clone() for r in range(3)]
        a2a_in, a2a_out = _window([3, 1]), _window([3, 1])
        for r in range(3):
            a2a_in.local(r).copy_(torch.tensor([[100.0 * r + d] for d in range(3)]))
        KERNELS["pld.tensor.all_to_all"](a2a_in, a2a_out, None)
        out["a2a"] = [a2a_out.local(r).clone() for r in range(3)]
        rs = _window([3, 2])
        for r in range(3):
            rs.local(r).fill_(float(r))
        KERNELS["pld.tensor.reduce_scatter"](rs, None, op=0)
        out["rs"] = [rs.local(r).clone() for r in range(3)]
        bc = _window([1, 2])
        bc.local(2).fill_(7.0)
        KERNELS["pld.tensor.broadcast"](bc, None, root=2)
        out["bc"] = [bc.local(r).clone() for r in range(3)]

    _host(host, 3)
    assert all(torch.equal(t, torch.full((1, 4), 6.0)) for t in out["sum"])
    assert all(torch.equal(t, torch.tensor([[0.0, 0.0], [10.0, 10.0], [20.0, 20.0]])) for t in out["gather"])
    # rank r receives row r of every rank's input: input_src[r] = 100 * src + r
    assert torch.equal(out["a2a"][1], torch.tensor([[1.0], [101.0], [201.0]]))
    assert torch.equal(out["rs"][2][2], torch.full((2,), 3.0))  # 0 + 1 + 2 in rank 2's own row
    assert all(torch.equal(t, torch.full((1, 2), 7.0)) for t in out["bc"])


def test_a_collective_one_rank_never_joins_is_a_deadlock() -> None:
    def host() -> None:
        sig = _window([2], torch.int32)
        ranks.launch_on_rank(0, lambda: KERNELS["pld.tensor.barrier"](sig.local(0)), ())

    with pytest.raises(ranks.DistributedError) as info:
        _host(host, 2)
    assert info.value.kind == "distributed:deadlock"
    assert "ranks [1] never reach it" in str(info.value)


def test_notify_set_and_atomic_add() -> None:
    seen: list[int] = []

    def host() -> None:
        sig = _window([1, 1], torch.int32)

        def rank0() -> None:
            KERNELS["pld.system.notify"](sig.local(0), 1, [0, 0], 3, op=0)  # AtomicAdd
            KERNELS["pld.system.notify"](sig.local(0), 1, [0, 0], 4, op=0)

        def rank1() -> None:
            KERNELS["pld.system.wait"](sig.local(1), [0, 0], 7, cmp=0)  # Eq
            seen.append(int(sig.local(1)[0, 0]))
            KERNELS["pld.system.notify"](sig.local(1), 1, [0, 0], 2, op="Set")
            seen.append(int(sig.local(1)[0, 0]))

        ranks.launch_on_rank(1, rank1, ())  # blocks until rank 0 has added 3 + 4
        ranks.launch_on_rank(0, rank0, ())

    _host(host, 2)
    assert seen == [7, 2]


def test_dist_intrinsics() -> None:
    leaves = [torch.full((2,), float(i)) for i in range(5)]
    futures = [KERNELS["dist.submit_worker"](None, lambda t: t * 2, leaf) for leaf in leaves]
    values = [KERNELS["dist.future_get"](f) for f in futures]
    total = KERNELS["dist.tree_reduce"](None, values)
    assert torch.equal(total, torch.full((2,), 20.0))
    assert KERNELS["dist.make_tensor"](None, 6).shape == (6,)
    assert KERNELS["dist.future_get"](KERNELS["dist.submit_orchestrator"](None, lambda: 5)) == 5
    # a handle of another kind (the fuzz gave it a CommCtx): Python said "int() argument must be ..."
    with pytest.raises(ranks.DistributedError, match=r"dist.future_get awaits a future \(a dist.submit_\* result\), got a tensor \[2\]"):
        KERNELS["dist.future_get"](leaves[0])


def test_the_case_key_ranks_overrides_the_rank_count(tmp_path: Path) -> None:
    from pypto_lsp.validate.config import ConfigError, cases_in

    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\nranks = 2\n')
    (tmp_path / "passes_dump").mkdir()
    (case,) = cases_in(cfg)
    assert case.settings.ranks == 2 and case.settings.engine_kwargs()["ranks"] == 2
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\nranks = 0\n')
    with pytest.raises(ConfigError, match="'ranks'"):
        cases_in(cfg)
    # the 4-rank example forced onto 2 ranks: its notify to rank 2 has no such peer
    inputs, expected = _golden()
    text = (EXAMPLE / "passes_dump" / "00_frontend.py").read_text()
    res = run_text(text, inputs, expected, filename="two.py", ranks=2)
    assert res.status == "error" and res.error is not None
    assert "peer rank 2 is outside the world of 2 ranks" in res.error.message
    assert res.error.message.startswith("rank 0 ")  # the rank that failed, first


DEFERRED = """# pypto.program: Deferred
import pypto.language as pl

@pl.program
class Deferred:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def chip(self, inp: pl.Tensor[[1, 4], pl.INT32], out: pl.Out[pl.Tensor[[1, 4], pl.INT32]], box: pld.DistributedTensor[[1, 4], pl.INT32], flag: pld.DistributedTensor[[1, 1], pl.INT32], peer: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, 4], pl.INT32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="waiter") as wait_tid:
            pld.system.defer_wait(flag, [0, 0], pl.const(1, pl.INT32), cmp=1)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consumer", deps=[wait_tid]) as use_tid:
            got: pl.Tile[[1, 4], pl.INT32, pl.Mem.Vec] = pl.tile.load(box, [0, 0], [1, 4], [1, 4], target_memory=pl.Mem.Vec)
            out_v1: pl.Tensor[[1, 4], pl.INT32] = pl.tile.store(got, [0, 0], out)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="publisher"):
            mine: pl.Tile[[1, 4], pl.INT32, pl.Mem.Vec] = pl.tile.load(inp, [0, 0], [1, 4], [1, 4], target_memory=pl.Mem.Vec)
            pld.tile.remote_store(mine, box, peer, [0, 0])
            pld.system.notify(flag, peer, [0, 0], pl.const(1, pl.INT32), op=1)
        return out_v1
    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, inp: pl.Tensor[[2, 1, 4], pl.INT32], out: pl.Out[pl.Tensor[[2, 1, 4], pl.INT32]]) -> pl.Tensor[[2, 1, 4], pl.INT32]:
        box_buf: pl.Ptr = pld.tensor.alloc_window_buffer(16)
        flag_buf: pl.Ptr = pld.tensor.alloc_window_buffer(4)
        for r in pl.range(pld.system.world_size()):
            box: pld.DistributedTensor[[1, 4], pl.INT32] = pld.tensor.window(box_buf, [1, 4], dtype=pl.INT32)
            flag: pld.DistributedTensor[[1, 1], pl.INT32] = pld.tensor.window(flag_buf, [1, 1], dtype=pl.INT32)
            self.chip(pl.tensor.slice(inp, [1, 1, 4], [r, 0, 0], [], [0]), pl.tensor.slice(out, [1, 1, 4], [r, 0, 0], [], [0]), box, flag, (r + 1) % pld.system.world_size(), device=r)
        return out
"""


def test_a_consumer_of_a_deferred_waiter_runs_after_the_later_publisher() -> None:
    inp = torch.arange(8, dtype=torch.int32).reshape(2, 1, 4) + 1
    expected = {"out": inp.roll(1, dims=0)}  # rank r receives rank r-1's row
    res = run_text(DEFERRED, {"inp": inp, "out": torch.zeros(2, 1, 4, dtype=torch.int32)}, expected, filename="deferred.py")
    assert res.status == "pass", res.error
    # the same waiter made blocking: both ranks wait before either publishes
    blocking = DEFERRED.replace("pld.system.defer_wait(", "pld.system.wait(")
    res = run_text(blocking, {"inp": inp, "out": torch.zeros(2, 1, 4, dtype=torch.int32)}, expected, filename="blocking.py")
    assert res.error is not None and res.error.kind == "distributed:deadlock", res.error
    assert res.error.detail.get("ranks") == [0, 1]


def test_a_deferred_task_that_never_runs_leaves_the_run_reporting_why() -> None:
    """Two runs where the deferred consumer is still pending when the run goes wrong. The
    publisher's notify dropped: the consumer waits for ever, a deadlock. A publisher that fails
    first: its own error is the verdict (cancelling the consumer, which had never started,
    escaped from the runtime as its internal exception and ended the run without a result)."""
    inp = torch.arange(8, dtype=torch.int32).reshape(2, 1, 4) + 1
    expected = {"out": inp.roll(1, dims=0)}
    notify = "            pld.system.notify(flag, peer, [0, 0], pl.const(1, pl.INT32), op=1)\n"
    assert notify in DEFERRED
    silent = DEFERRED.replace(notify, "")
    res = run_text(silent, {"inp": inp, "out": torch.zeros(2, 1, 4, dtype=torch.int32)}, expected, filename="silent.py")
    assert res.error is not None and res.error.kind == "distributed:deadlock", res.error
    # found where the host joins its launches (its function's end), naming the wait
    assert "deferred" in res.error.message and "defer_wait" in res.error.message, res.error
    assert res.error.line == next(i for i, line in enumerate(silent.splitlines(), 1) if "def host(" in line), res.error
    # the publisher's load reads 8 columns of a 4-column input: a shape error before the notify
    bad = DEFERRED.replace(
        "mine: pl.Tile[[1, 4], pl.INT32, pl.Mem.Vec] = pl.tile.load(inp, [0, 0], [1, 4], [1, 4]",
        "mine: pl.Tile[[1, 4], pl.INT32, pl.Mem.Vec] = pl.tile.load(inp, [0, 0], [1, 8], [1, 8]",
    )
    assert bad != DEFERRED
    res = run_text(bad, {"inp": inp, "out": torch.zeros(2, 1, 4, dtype=torch.int32)}, expected, filename="bad.py")
    assert res.status == "error" and res.error is not None and res.error.kind != "_Cancelled", res.error
    assert res.error.line == next(i for i, line in enumerate(bad.splitlines(), 1) if "[1, 8], [1, 8]" in line), res.error


def test_a_window_buffer_over_the_allocation_budget_is_refused_before_it_is_made() -> None:
    """A window buffer is its size on every rank, made by one op: the budget counts them together,
    before any byte is allocated (a size a pass got wrong was allocated, seconds and gigabytes of
    zeros, or the machine's memory)."""
    inp = torch.arange(8, dtype=torch.int32).reshape(2, 1, 4) + 1
    expected = {"out": inp.roll(1, dims=0)}

    def run_with(text: str, max_alloc: int | None = None) -> FileResult:
        return run_text(text, {"inp": inp, "out": torch.zeros(2, 1, 4, dtype=torch.int32)}, expected, filename="w.py", max_alloc=max_alloc)

    line = next(i for i, text in enumerate(DEFERRED.splitlines(), 1) if "alloc_window_buffer(16)" in text)
    huge = DEFERRED.replace("alloc_window_buffer(16)", "alloc_window_buffer(16 * 1099511627776)")
    res = run_with(huge)
    assert res.error is not None and res.error.kind == "alloc-budget" and res.error.line == line, res.error
    assert "box_buf" in res.error.message and "every rank" in res.error.message
    # 16 bytes on each of the 2 ranks: 32 bytes fit a 32-byte budget, not a 31-byte one
    assert run_with(DEFERRED, max_alloc=32).status == "pass"
    res = run_with(DEFERRED, max_alloc=31)
    assert res.error is not None and res.error.kind == "alloc-budget" and res.error.line == line, res.error


def test_the_error_lens_says_which_ranks() -> None:
    from pypto_lsp.server.results import verdict_titles

    inputs, expected = _golden()
    text = (EXAMPLE / "passes_dump" / "00_frontend.py").read_text()
    res = run_text(text, inputs, expected, filename="two.py", ranks=2)  # rank 0 alone fails
    assert verdict_titles(res)[0].endswith(" on rank 0"), verdict_titles(res)
    broken = text.replace("[my_rank, 0], pl.const(1, pl.INT32), op=0)", "[my_rank, 0], pl.const(0, pl.INT32), op=0)")
    res = run_text(broken, inputs, expected, filename="dead.py")
    assert verdict_titles(res)[0].startswith("✗ error: distributed:deadlock (line ")
    assert verdict_titles(res)[0].endswith(" on ranks 0, 1, 2, 3")


def test_all_to_all_v_moves_whole_blocks_and_publishes_clamped_counts() -> None:
    got: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def host() -> None:
        inp, out = _window([4, 3]), _window([4, 3])  # NR = 2, MAX_RECV = 2 rows of 3
        sends, recvs = _window([2, 1], torch.int32), _window([2, 1], torch.int32)
        for r in range(2):
            inp.local(r).copy_(torch.arange(12, dtype=torch.float32).reshape(4, 3) + 100 * r)
            sends.local(r).copy_(torch.tensor([[1], [5]], dtype=torch.int32))  # 5 clamps to MAX_RECV
        KERNELS["pld.tensor.all_to_all_v"](inp, out, None, sends, recvs)
        for r in range(2):
            got[r] = (out.local(r).clone(), recvs.local(r).clone())

    _host(host, 2)
    out1, counts1 = got[1]
    # rank 1 receives block 1 (rows 2-3) of every sender, in sender order
    assert torch.equal(out1[0:2], torch.tensor([[6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]))
    assert torch.equal(out1[2:4], torch.tensor([[106.0, 107.0, 108.0], [109.0, 110.0, 111.0]]))
    assert counts1.reshape(-1).tolist() == [2, 2] and got[0][1].reshape(-1).tolist() == [1, 1]


def test_without_goldens_a_dynamic_rank_dim_is_the_default_rank_count() -> None:
    from pypto_lsp.ir.parser import loads
    from pypto_lsp.validate.differential import synthesize

    text = DEFERRED.replace("import pypto.language as pl\n", 'import pypto.language as pl\n\nNR = pl.dynamic("NR")\n', 1)
    text = text.replace("pl.Tensor[[2, 1, 4], pl.INT32]", "pl.Tensor[[NR, 1, 4], pl.INT32]")
    program = loads(text)
    inputs, _used = synthesize(program, "host", {"inp": {"low": 1, "high": 3}})
    assert inputs["inp"].shape == (ranks.DEFAULT_RANKS, 1, 4) and inputs["out"].shape == (ranks.DEFAULT_RANKS, 1, 4)


def test_put_get_and_remote_ops_on_peer_windows() -> None:
    seen: dict[str, torch.Tensor] = {}

    def host() -> None:
        win = _window([2, 4])
        win.local(1).copy_(torch.arange(8, dtype=torch.float32).reshape(2, 4))

        def rank0() -> None:
            mine = win.local(0)
            local = torch.zeros(1, 2)
            KERNELS["pld.tensor.get"](local, 1, mine, [0, 0], [1, 2], [1, 2])  # peer rows/cols [1, 2:4]
            seen["get"] = local.clone()
            stage = torch.zeros(1, 4)
            KERNELS["pld.tile.get"](mine, 1, mine, stage, [0, 0], [0, 0], [1, 4])  # peer row 0 into my row 0
            seen["tile_get"] = mine[0].clone()
            KERNELS["pld.tensor.put"](mine, 1, torch.ones(2, 4), atomic="Add")  # full slice, accumulated
            KERNELS["pld.tile.put"](mine, 1, torch.full((1, 4), 9.0), stage, [1, 0], [0, 0], [1, 4])  # row 1 replaced
            seen["peer"] = win.local(1).clone()
            KERNELS["pld.tile.remote_store"](torch.full((1, 2), -1.0), mine, 1, [0, 2], atomic="None_")
            seen["remote_load"] = KERNELS["pld.tile.remote_load"](mine, 1, [0, 0], [1, 4])

        ranks.launch_on_rank(0, rank0, ())

    _host(host, 2)
    assert torch.equal(seen["get"], torch.tensor([[6.0, 7.0]]))
    assert torch.equal(seen["tile_get"], torch.tensor([0.0, 1.0, 2.0, 3.0]))
    assert torch.equal(seen["peer"], torch.tensor([[1.0, 2.0, 3.0, 4.0], [9.0, 9.0, 9.0, 9.0]]))
    assert torch.equal(seen["remote_load"], torch.tensor([[1.0, 2.0, -1.0, -1.0]]))


def test_a_remote_op_outside_the_world_is_a_clear_error() -> None:
    def host() -> None:
        win = _window([1, 4])
        ranks.launch_on_rank(0, lambda: KERNELS["pld.tile.remote_load"](win.local(0), 5, [0, 0], [1, 4]), ())

    with pytest.raises(ranks.DistributedError, match="peer rank 5 is outside the world of 2 ranks"):
        _host(host, 2)
    with pytest.raises(ranks.DistributedError, match="outside a multi-rank program"):
        KERNELS["pld.system.world_size"]()
