"""analysis.task_batch_plan: which orchestrator loops could run all their tasks as one batch, and why not."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_lsp.analysis.task_batch_plan import TaskLoopPlan, plan_task_loops
from pypto_lsp.ir.parser import parse_text

H4096 = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "scale" / "qwen3_scope3_910b_h4096" / "passes_dump"

# two kernels and an orchestrator with a loop over each: ``own`` writes the task's own 64 columns of
# ``out``; ``summed`` adds a window of ``x`` into the one accumulator window every task shares
PROGRAM = """\
import pypto.language as pl

@pl.program
class Plan:
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def own(x: pl.Tensor[[16, 256], pl.FP32], o0: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]) -> pl.Tensor[[16, 256], pl.FP32]:
        t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, o0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
        u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)
        out_1: pl.Tensor[[16, 256], pl.FP32] = pl.tile.store(u, [0, o0], out)
        return out
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def summed(x: pl.Tensor[[16, 256], pl.FP32], o0: pl.Scalar[pl.INDEX], acc: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, o0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
        prev: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(acc, [0, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
        s: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(prev, t)
        acc_1: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(s, [0, 0], acc)
        return acc
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, x: pl.Tensor[[16, 256], pl.FP32], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]], acc: pl.Out[pl.Tensor[[16, 64], pl.FP32]], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[16, 256], pl.FP32]:
        for ob, (out_i,) in pl.range(4, init_values=(out,)):
            o0: pl.Scalar[pl.INDEX] = ob * 64 + 0
            out_n: pl.Tensor[[16, 256], pl.FP32] = self.own(x, o0, out_i)
            out_r: pl.Tensor[[16, 256], pl.FP32] = pl.yield_(out_n)
        for kb, (acc_i,) in pl.range(4, init_values=(acc,)):
            k0: pl.Scalar[pl.INDEX] = kb * 64
            acc_n: pl.Tensor[[16, 64], pl.FP32] = self.summed(x, k0, acc_i)
            acc_r: pl.Tensor[[16, 64], pl.FP32] = pl.yield_(acc_n)
        return out_r
"""


# the first loop of PROGRAM, which the tests below rewrite
OWN_LOOP = """        for ob, (out_i,) in pl.range(4, init_values=(out,)):
            o0: pl.Scalar[pl.INDEX] = ob * 64 + 0
            out_n: pl.Tensor[[16, 256], pl.FP32] = self.own(x, o0, out_i)
            out_r: pl.Tensor[[16, 256], pl.FP32] = pl.yield_(out_n)"""


def plans(text: str) -> list[TaskLoopPlan]:
    res = parse_text(text)
    assert res.program is not None, [d.message for d in res.diagnostics]
    return plan_task_loops(res.program)


def edited(old: str, new: str) -> list[TaskLoopPlan]:
    """The plans of PROGRAM with the first ``old`` made ``new``."""
    assert old in PROGRAM
    return plans(PROGRAM.replace(old, new, 1))


def test_own_windows_and_an_ordered_sum_are_batchable() -> None:
    own, summed = plans(PROGRAM)
    assert (own.line, own.var, own.trips, own.callee, own.kernels, own.declined) == (20, "ob", 4, "own", ("own",), None)
    assert [(a.name, a.role, a.step) for a in own.args] == [("x", "input", None), ("o0", "scalar", (64, 0)), ("out_i", "own-window", None)]
    assert summed.declined is None
    assert [(a.name, a.role) for a in summed.args] == [("x", "input"), ("k0", "scalar"), ("acc_i", "ordered-sum")]


@pytest.mark.parametrize(
    ("old", "new", "which", "reason"),  # the first ``old`` made ``new``: loop ``which`` is declined for ``reason``
    [
        # task i writes columns [32 i, 32 i + 64): each overlaps the next
        ("o0: pl.Scalar[pl.INDEX] = ob * 64 + 0", "o0: pl.Scalar[pl.INDEX] = ob * 32", 0, "the tasks' windows of 'out_i' may overlap"),
        # the store keeps the tile as it is: every task overwrites the same window, the last one wins
        (
            "pl.tile.store(s, [0, 0], acc)",
            "pl.tile.store(t, [0, 0], acc)",
            1,
            "every task writes the same window of 'acc_i' (line 16), not as an ordered sum",
        ),
        # the task reads the buffer the others write
        (
            "pl.tile.exp(t)",
            "pl.tile.exp(pl.tile.load(out, [0, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec))",
            0,
            "the tasks read 'out_i' (line 8), which they write",
        ),
        ("pl.tile.store(u, [0, o0], out)", "pl.tile.store(u, [0, o0], out, atomic=True)", 0, "tile.store (line 9) is atomic"),
        (
            "pl.tile.exp(t)",
            "pl.tensor.reshape(out, [16, 256])",
            0,
            "tensor.reshape (line 8) takes 'out', a task's buffer, in a way this plan does not follow",
        ),
        # a tensor-level window (tensor.slice) is a read as tile.load is: of a buffer the tasks write, declined
        ("pl.tile.exp(t)", "pl.tensor.slice(out, [16, 64], [0, 0])", 0, "the tasks read 'out_i' (line 8), which they write"),
        # a batch reads each task's window of an input through one strided view: its offsets must be affine too
        (
            "pl.tile.load(x, [0, o0], [16, 64]",
            "pl.tile.load(x, [0, o0 * o0], [16, 64]",
            0,
            "the window of tile.load (line 7) is not affine in the task's scalars and the kernel's loops",
        ),
        (
            "pl.tile.store(u, [0, o0], out)",
            "pl.tile.store(u, [0, o0 * o0], out)",
            0,
            "the window of tile.store (line 9) is not affine in the task's scalars and the kernel's loops",
        ),
        ("pl.range(4, init_values=(out,))", "pl.range(n, init_values=(out,))", 0, "its bounds are not constants"),
        (
            "o0: pl.Scalar[pl.INDEX] = ob * 64 + 0",
            "o0: pl.Scalar[pl.INDEX] = ob * ob",
            0,
            "its body computes 'o0' (line 21), neither a scalar affine in 'ob' nor a new buffer",
        ),
    ],
)
def test_declined_with_the_reason(old: str, new: str, which: int, reason: str) -> None:
    assert edited(old, new)[which].declined == reason


def test_a_kernel_that_branches_on_its_arguments_is_declined() -> None:
    got = edited(
        "        u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)\n",
        "        if o0 == 0:\n            u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)\n        else:\n            u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.neg(t)\n",
    )
    assert got[0].declined == "kernel 'own' may take another path on another call (a branch or bound reads its arguments)"


def test_buffers_handed_round_are_declined() -> None:
    # a ping-pong: each task's output becomes the next task's input and the other buffer its output
    got = edited(
        OWN_LOOP,
        """        for ob, (x_i, out_i) in pl.range(4, init_values=(x, out)):
            o0: pl.Scalar[pl.INDEX] = ob * 64 + 0
            out_n: pl.Tensor[[16, 256], pl.FP32] = self.own(x_i, o0, out_i)
            x_r, out_r = pl.yield_(out_n, x_i)""",
    )
    assert got[0].declined == "its yield hands 'out_n' on as 'x_i': the next task would get another buffer"


def test_an_enclosing_loops_variable_is_the_same_for_every_task() -> None:
    got = edited(
        OWN_LOOP,
        """        for half, (out_h,) in pl.range(2, init_values=(out,)):
            for ob, (out_i,) in pl.range(2, init_values=(out_h,)):
                o0: pl.Scalar[pl.INDEX] = half * 128 + ob * 64
                out_n: pl.Tensor[[16, 256], pl.FP32] = self.own(x, o0, out_i)
                out_r: pl.Tensor[[16, 256], pl.FP32] = pl.yield_(out_n)
            out_q: pl.Tensor[[16, 256], pl.FP32] = pl.yield_(out_r)""",
    )
    inner = next(p for p in got if p.var == "ob")
    assert inner.declined is None and inner.trips == 2
    assert [(a.role, a.step) for a in inner.args] == [("input", None), ("scalar", (64, None)), ("own-window", None)]
    assert not any(p.var == "half" for p in got)  # the outer loop submits no task itself


@pytest.mark.skipif(not H4096.is_dir(), reason="needs ../shared/fixtures (scale/qwen3_scope3_910b_h4096)")
def test_qwen3_scope3_at_hidden_4096() -> None:
    """The four loops of the last dump: the output projection, post-norm and final-residual blocks each
    write their own columns; the MLP blocks add into the down projection's accumulator in task order."""
    got = plans((H4096 / "49_after_MaterializeValidShapeSymbols.py").read_text())
    assert [(p.callee, p.trips, p.declined) for p in got] == [
        ("oproj_block", 64, None),
        ("postnorm_block", 32, None),
        ("mlp_block", 128, None),
        ("final_resid_block", 32, None),
    ]
    oproj, postnorm, mlp, final = got
    assert oproj.kernels == ("oproj_block_aic", "oproj_block_aiv")
    assert [a.role for a in oproj.args] == ["input", "input", "input", "scalar", "scalar", "own-window", "scratch"]
    assert postnorm.role("post_norm_gm__iter_v1") == "own-window"
    assert mlp.role("down_proj_gm__iter_v2") == "ordered-sum" and mlp.role("gm_pipe_buffer_1") == "scratch"
    assert [a.step for a in mlp.args if a.role == "scalar"] == [(64, 0)]
    assert final.role("out__iter_v3") == "own-window"
    # before the tile ops the kernels read windows with tensor.slice and write them with
    # tensor.assemble, the written values nested ops (before FlattenCallExpr): the same roles
    early = plans((H4096 / "04_after_ConvertToSSA.py").read_text())
    assert [(p.callee, p.trips, p.declined) for p in early[1:]] == [
        ("oproj_block", 64, None),
        ("postnorm_block", 32, None),
        ("mlp_block", 128, None),
        ("final_resid_block", 32, None),
    ]
    assert early[0].declined == "its body holds a for (line 91) besides the task call"  # (rmsnorm: one task)
    assert early[3].role("down_proj_gm__iter_v2") == "ordered-sum" and early[1].role("resid1_gm__iter_v1") == "own-window"


def test_a_task_scalar_used_other_than_as_a_windows_offset_is_named() -> None:
    """Only a scalar moving with the task used as a window's offset makes each task's checks the
    first one's moved (exec.task_watch): any other use (a valid shape, a derived value) is listed."""
    own, summed = plans(PROGRAM)
    assert own.scalar_uses == () and summed.scalar_uses == ()
    # the valid shape of the load depends on the task
    valid = edited("[16, 64], [16, 64], target_memory=pl.Mem.Vec)\n        u:", "[16, 64], [16, o0], target_memory=pl.Mem.Vec)\n        u:")
    assert valid[0].declined is None and valid[0].scalar_uses == (7,)
    # a value derived from it, not affinely (as an offset it would decline the loop)
    derived = edited(
        "t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, o0],",
        "h: pl.Scalar[pl.INDEX] = o0 // 2\n        t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, o0],",
    )
    assert derived[0].declined is None and derived[0].scalar_uses == (7,)  # (where 'h' is made)
    # a scalar that is the same in every task is no such use
    same = edited("o0: pl.Scalar[pl.INDEX] = ob * 64 + 0", "o0: pl.Scalar[pl.INDEX] = 0 * ob + 64")
    assert same[0].scalar_uses == ()
