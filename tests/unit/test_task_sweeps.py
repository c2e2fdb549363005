"""Task sweeps (analysis.task_sweep_plan, exec.sweep.Sweep.run_tasks): an orchestrator loop whose
tasks are one InCore kernel runs every task at once, and leaves its buffers, its errors and the
sanitizer's task graph as the tasks one by one would (``exact``: every loop as written)."""

from __future__ import annotations

import torch

import pypto_lsp.exec.sweep as sweep
from pypto_lsp.analysis.task_sweep_plan import plan_task_sweeps
from pypto_lsp.exec.codegen import generate
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.engine import run_text

INCORE = "@pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)"
ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"

# ``own`` writes each task's 64 columns of ``out`` (exp of x's); ``summed`` adds each task's window
# of ``x`` into the one window of ``acc`` every task shares (an ordered sum), in two K steps
OWN = f"""    {INCORE}
    def own(x: pl.Tensor[[16, 256], pl.FP32], o0: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]) -> pl.Tensor[[16, 256], pl.FP32]:
        t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, o0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
        u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)
        out_1: pl.Tensor[[16, 256], pl.FP32] = pl.tile.store(u, [0, o0], out)
        return out_1
"""
SUMMED = f"""    {INCORE}
    def summed(x: pl.Tensor[[16, 256], pl.FP32], o0: pl.Scalar[pl.INDEX], acc: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, o0], [16, 32], [16, 32], target_memory=pl.Mem.Vec)
        for j, (a,) in pl.range(2, init_values=(acc,)):
            c0: pl.Scalar[pl.INDEX] = j * {{STEP}}
            prev: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [0, c0], [16, 32], [16, 32], target_memory=pl.Mem.Vec)
            s: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.add(prev, t)
            a_1: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(s, [0, c0], a)
            a_2: pl.Tensor[[16, 64], pl.FP32] = pl.yield_(a_1)
        return a_2
"""
MAIN = f"""    {ORCH}
    def main(self, x: pl.Tensor[[16, 256], pl.FP32], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]], acc: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 256], pl.FP32]:
        for ob, (out_i,) in pl.range({{OWN_TASKS}}, init_values=(out,)):
            o0: pl.Scalar[pl.INDEX] = ob * 64
            out_n: pl.Tensor[[16, 256], pl.FP32] = self.own(x, o0, out_i)
            out_r: pl.Tensor[[16, 256], pl.FP32] = pl.yield_(out_n)
        for kb, (acc_i,) in pl.range(8, init_values=(acc,)):
            k0: pl.Scalar[pl.INDEX] = kb * 32
            acc_n: pl.Tensor[[16, 64], pl.FP32] = self.summed(x, k0, acc_i)
            acc_r: pl.Tensor[[16, 64], pl.FP32] = pl.yield_(acc_n)
        return out_r
"""


def program(step: int = 32, own_tasks: int = 4) -> str:
    body = OWN + SUMMED.replace("{STEP}", str(step)) + MAIN.replace("{OWN_TASKS}", str(own_tasks))
    return "import pypto.language as pl\n\n@pl.program\nclass Tasks:\n" + body


def inputs() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(7)
    # magnitudes far apart: an FP32 sum taken in another order than task after task shows in the bits
    x = torch.randn(16, 256, generator=g) * torch.tensor([1e-3, 1.0, 1e4, 1e-6] * 64)
    return {"x": x, "out": torch.zeros(16, 256), "acc": torch.randn(16, 64, generator=g)}


def expected(x: torch.Tensor, acc: torch.Tensor) -> dict[str, torch.Tensor]:
    """The tasks one after another, in plain torch: each adds its 32 columns of x to both halves of acc."""
    acc = acc.clone()
    for kb in range(8):
        t = x[:, kb * 32 : kb * 32 + 32]
        for j in range(2):
            acc[:, j * 32 : j * 32 + 32] = acc[:, j * 32 : j * 32 + 32] + t
    return {"out": torch.exp(x), "acc": acc}


def run(text: str, exact: bool, sanitize: bool = False) -> tuple[object, dict[str, torch.Tensor]]:
    ins = inputs()
    kept: dict[str, torch.Tensor] = {}
    r = run_text(text, ins, expected(ins["x"], ins["acc"]), exact=exact, sanitize=sanitize, keep=kept)
    return r, kept


def sweeps_run(monkeypatch) -> list[str]:
    """The kernels run as task sweeps from now on (each call of Sweep.run_tasks, by kernel)."""
    ran: list[str] = []
    real = sweep.Sweep.run_tasks

    def counted(self, variant, *args):
        ran.append(variant.__name__)
        return real(self, variant, *args)

    monkeypatch.setattr(sweep.Sweep, "run_tasks", counted)
    return ran


def test_both_loops_run_as_task_sweeps_with_the_tasks_bits(monkeypatch) -> None:
    text = program()
    res = parse_text(text)
    assert res.program is not None
    assert sorted(t.kernel for t in plan_task_sweeps(res.program).loops.values()) == ["own", "summed"]
    ran = sweeps_run(monkeypatch)
    r, got = run(text, exact=False)
    assert r.status == "pass", r.error
    assert ran == ["_pl_fn_own__tasks", "_pl_fn_summed__tasks"]
    assert r.call_counts == {"main": 1, "own": 4, "summed": 8}
    r2, want = run(text, exact=True)
    assert r2.status == "pass"
    for k in ("out", "acc"):
        assert torch.equal(got[k], want[k]), k
    # the ordered sum is the tasks' adds one at a time in task order, bit for bit
    ins = inputs()
    assert torch.equal(got["acc"], expected(ins["x"], ins["acc"])["acc"])


def test_a_sum_window_a_task_writes_twice_keeps_the_loop() -> None:
    """With c0 = j * 0 both of a task's stores hit one window: the device interleaves the tasks'
    adds there (task 0 twice, then task 1 ...), which a sum over all tasks per store would not."""
    res = parse_text(program(step=0))
    assert res.program is not None
    assert [t.kernel for t in plan_task_sweeps(res.program).loops.values()] == ["own"]
    assert "_pl_fn_summed__tasks" not in generate(res.program).source


def test_a_kernel_with_a_branch_or_a_buffer_of_its_own_keeps_the_loop() -> None:
    branch = program().replace(
        "        u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)\n",
        "        u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)\n        if o0 > 1000:\n            pass\n",
    )
    created = program().replace(
        "        u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)\n",
        "        u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)\n"
        "        tmp: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.create([16, 64], dtype=pl.FP32)\n",
    )
    for text in (branch, created):
        res = parse_text(text)
        assert res.program is not None, [d.message for d in res.diagnostics]
        assert "own" not in [t.kernel for t in plan_task_sweeps(res.program).loops.values()]


QUOTIENT = f"""import pypto.language as pl

@pl.program
class Quotient:
    {INCORE}
    def q(x: pl.Tensor[[16, 256], pl.INT32], d: pl.Tensor[[16, 256], pl.INT32], o0: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 256], pl.INT32]]) -> pl.Tensor[[16, 256], pl.INT32]:
        a: pl.Tile[[16, 64], pl.INT32, pl.Mem.Vec] = pl.tile.load(x, [0, o0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
        b: pl.Tile[[16, 64], pl.INT32, pl.Mem.Vec] = pl.tile.load(d, [0, o0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
        c: pl.Tile[[16, 64], pl.INT32, pl.Mem.Vec] = pl.tile.div(a, b)
        out_1: pl.Tensor[[16, 256], pl.INT32] = pl.tile.store(c, [0, o0], out)
        return out_1
    {ORCH}
    def main(self, x: pl.Tensor[[16, 256], pl.INT32], d: pl.Tensor[[16, 256], pl.INT32], out: pl.Out[pl.Tensor[[16, 256], pl.INT32]]) -> pl.Tensor[[16, 256], pl.INT32]:
        for ob, (out_i,) in pl.range(4, init_values=(out,)):
            o0: pl.Scalar[pl.INDEX] = ob * 64
            out_n: pl.Tensor[[16, 256], pl.INT32] = self.q(x, d, o0, out_i)
            out_r: pl.Tensor[[16, 256], pl.INT32] = pl.yield_(out_n)
        return out_r
"""


def test_an_error_stops_the_run_where_the_tasks_meet_it(monkeypatch) -> None:
    """Task 2's divisor window holds a 0: the sweep raises, puts ``out`` back and the tasks run one
    by one, so the run stops with the error of the loop as written, on its line."""
    x = torch.arange(16 * 256, dtype=torch.int32).reshape(16, 256)
    d = torch.ones(16, 256, dtype=torch.int32)
    d[3, 130] = 0
    ran = sweeps_run(monkeypatch)
    results = []
    for exact in (False, True):
        kept: dict[str, torch.Tensor] = {}
        ins = {"x": x, "d": d, "out": torch.zeros(16, 256, dtype=torch.int32)}
        results.append((run_text(QUOTIENT, ins, {"out": x}, exact=exact, keep=kept), kept))
    (r, _), (r2, _) = results
    assert ran == ["_pl_fn_q__tasks"]
    assert r.status == r2.status == "error"
    assert r.error is not None and r2.error is not None
    assert (r.error.kind, r.error.message, r.error.line) == (r2.error.kind, r2.error.message, r2.error.line)
    assert "division by zero" in r.error.message


def test_a_window_past_the_buffer_is_the_same_finding(monkeypatch) -> None:
    """Five tasks of 64 columns on 256: the last one's windows leave ``x`` and ``out``; the
    sanitizer says so on the same lines whichever way the tasks ran."""
    text = program(own_tasks=5)
    ran = sweeps_run(monkeypatch)
    r, _ = run(text, exact=False, sanitize=True)
    r2, _ = run(text, exact=True, sanitize=True)
    assert ran and ran[0] == "_pl_fn_own__tasks"
    assert r.status == r2.status == "fail"
    assert r.memory == r2.memory and any(h["kind"] == "out-of-bounds" for h in r.memory["hazards"])


def test_with_the_sanitizer_every_task_is_submitted_in_its_order(monkeypatch) -> None:
    """The sanitizer hears of every task, with its own arguments, in the loop's order (its task
    records, dependencies and graph are made from those)."""
    from pypto_lsp.exec import sanitizer

    heard: list[tuple[int, tuple[object, ...]]] = []
    real = sanitizer.Sanitizer.task

    def task(self, site_index, args, call, deps=None):
        heard.append((site_index, tuple(a if isinstance(a, int) else type(a).__name__ for a in args)))
        return real(self, site_index, args, call, deps)

    monkeypatch.setattr(sanitizer.Sanitizer, "task", task)
    text = program()
    ran = sweeps_run(monkeypatch)
    r, got = run(text, exact=False, sanitize=True)
    batched, heard[:] = list(heard), []
    r2, want = run(text, exact=True, sanitize=True)
    assert ran, "no task sweep ran"
    assert r.status == r2.status == "pass"
    assert batched == heard and len(heard) == 12
    assert [a[1] for _, a in heard[:4]] == [0, 64, 128, 192]  # each task's own o0
    assert r.memory == r2.memory
    for k in ("out", "acc"):
        assert torch.equal(got[k], want[k]), k


def test_an_undefined_input_runs_the_tasks_one_by_one(monkeypatch) -> None:
    """A buffer the tasks read that holds unwritten elements (a tensor.create without a value,
    read by the sum's tasks): the sanitizer follows it kernel by kernel, so the loop runs as written."""
    text = (
        program()
        .replace(
            "        for kb, (acc_i,) in pl.range(8, init_values=(acc,)):",
            "        y: pl.Tensor[[16, 256], pl.FP32] = pl.tensor.create([16, 256], dtype=pl.FP32)\n"
            "        for kb, (acc_i,) in pl.range(8, init_values=(acc,)):",
        )
        .replace("self.summed(x, k0, acc_i)", "self.summed(y, k0, acc_i)")
    )
    ran = sweeps_run(monkeypatch)
    r, _ = run(text, exact=False, sanitize=True)
    r2, _ = run(text, exact=True, sanitize=True)
    assert ran == ["_pl_fn_own__tasks"]  # (summed's tasks read y: one by one)
    assert r.status == r2.status == "fail"
    assert r.memory == r2.memory and [h["kind"] for h in r.memory["hazards"]] == ["uninitialised"]


def test_a_buffer_passed_as_an_input_and_as_the_output_runs_the_tasks_one_by_one(monkeypatch) -> None:
    """``own(out, o0, out)``: each task reads windows of the buffer the tasks write (under another
    parameter, so the plan sees an input and an output); task 1 would read what task 0 wrote.
    At run time the two are one buffer: the loop runs as written."""
    text = program().replace("self.own(x, o0, out_i)", "self.own(out_i, o0, out_i)")
    ran = sweeps_run(monkeypatch)
    r, got = run(text, exact=False)
    r2, want = run(text, exact=True)
    assert "_pl_fn_own__tasks" not in ran and "_pl_fn_summed__tasks" in ran
    assert r.status == r2.status and torch.equal(got["out"], want["out"])


def test_a_task_whose_result_is_its_own_runs_the_tasks_one_by_one(monkeypatch) -> None:
    """A kernel that returns a tile of its own (not the buffer it wrote): the value the loop leaves
    is the last task's, which a sweep's batch is not; the tasks run as written."""
    text = (
        program()
        .replace(
            "def own(x: pl.Tensor[[16, 256], pl.FP32], o0: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]) -> pl.Tensor[[16, 256], pl.FP32]:",
            "def own(x: pl.Tensor[[16, 256], pl.FP32], o0: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]) -> pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec]:",
        )
        .replace("        return out_1\n", "        return u\n", 1)
        .replace(
            "            out_n: pl.Tensor[[16, 256], pl.FP32] = self.own(x, o0, out_i)\n",
            "            last: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = self.own(x, o0, out_i)\n",
        )
        .replace(
            "            out_r: pl.Tensor[[16, 256], pl.FP32] = pl.yield_(out_n)",
            "            out_r: pl.Tensor[[16, 256], pl.FP32] = pl.yield_(out_i)",
        )
    )
    ran = sweeps_run(monkeypatch)
    r, got = run(text, exact=False)
    r2, want = run(text, exact=True)
    assert r.status == r2.status == "pass", (r.error, r2.error)
    assert torch.equal(got["out"], want["out"])
    assert ran == ["_pl_fn_own__tasks", "_pl_fn_summed__tasks"]  # (own's tried, given up, run as written)
