"""exec.task_watch on small programs: what a loop's unwatched middle tasks still show (a race one of
them is part of, an undefined value one of them would read), the same as with every task watched."""

from __future__ import annotations

import torch

from pypto_lsp.exec import task_watch
from pypto_lsp.validate import engine

T = "pl.Tensor[[16, 128], pl.FP32]"
TILE = "pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec]"
D = "pl.adir"

# line 18: the loop's task call; line 20: the call after the loop
PROGRAM = f"""# pypto.program: watch
import pypto.language as pl

@pl.program
class watch:
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def copy_cols(x: {T}, o0: pl.Scalar[pl.INDEX], out: pl.Out[{T}]) -> {T}:
        t: {TILE} = pl.tile.load(x, [0, o0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)
        u: {TILE} = pl.tile.adds(t, 1.0)
        s: {T} = pl.tile.store(u, [0, o0], out)
        return out
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: {T}, c: pl.Out[{T}]) -> {T}:
        mid: {T} = pl.tensor.create([16, 128], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        src: {T} = SOURCE
        for i, (mid_i,) in pl.range(8, init_values=(mid,)):
            o0: pl.Scalar[pl.INDEX] = i * 16
            mid_n: {T} = self.copy_cols(src, o0, mid_i, attrs={{"arg_directions": [{D}.input, {D}.scalar, {D}.output_existing]}})
            mid_r: {T} = pl.yield_(mid_n)
        c1: {T} = self.copy_cols(mid_r, 80, c, attrs={{"arg_directions": [{D}.TAG, {D}.scalar, {D}.output_existing]}})
        return c1
"""
A = torch.arange(16 * 128, dtype=torch.float32).reshape(16, 128)


def _both(text: str, monkeypatch) -> tuple[list, list]:
    """The findings (and each run's sanitizer) with the middle tasks unwatched, then all watched;
    task by task under the watch (task sweeps off; the loop's watched sweep: the tests at the end)."""
    from pypto_lsp.analysis import lowering

    monkeypatch.setattr(lowering, "TASK_SWEEPS", False)
    monkeypatch.setattr(engine, "_COMPILED", {})
    comp = engine.compile_text(text, filename="<watch>", memory=True, sanitize=True)
    assert comp.error is None and comp.task_loops, comp.error
    out = []
    for unwatched in (True, False):
        monkeypatch.setattr(task_watch, "UNWATCHED", unwatched)
        san = engine._sanitizer(comp)
        ran = engine.run(comp, {"a": A.clone(), "c": torch.zeros(16, 128)}, observers=[san])
        assert ran.error is None, ran.error
        out.append((san, san.findings + san.races()))
    return out[0], out[1]


def test_a_race_with_a_middle_task_is_found_as_when_it_is_watched(monkeypatch):
    # the call after the loop reads columns 80:96 (what task 5 wrote) as no_dep: a RAW race
    text = PROGRAM.replace("SOURCE", "pl.tensor.create([16, 128], dtype=pl.FP32, layout=pl.TensorLayout.ND, init_value=2.0)")
    (fast, found), (_slow, watched) = _both(text.replace("TAG", "no_dep"), monkeypatch)
    assert fast.loops and sum(w.unwatched for w in fast.loops.values()) == 4  # tasks 3 to 6 of 0..7
    races = [h for h in found if h["kind"] == "race"]
    assert [(h["race"], h["tasks"], h["line"], h["other_line"]) for h in races] == [("RAW", [5, 8], 20, 18)]
    assert found == watched
    (fast, found), _ = _both(text.replace("TAG", "input"), monkeypatch)  # ordered: no race
    assert [h for h in found if h["kind"] == "race"] == [] and any(5 in t.deps for t in fast.tasks[8:])


def test_a_middle_task_that_would_read_an_undefined_element_runs_watched(monkeypatch):
    # the loop copies 'src', whose columns from 64 on were never written: tasks 4 to 7 read them
    text = PROGRAM.replace("SOURCE", "pl.tensor.create([16, 128], dtype=pl.FP32, layout=pl.TensorLayout.ND)").replace("TAG", "input")
    writes = "".join(
        f'        src{k}: {T} = self.copy_cols(a, {16 * k}, src, attrs={{"arg_directions": [{D}.input, {D}.scalar, {D}.output_existing]}})\n'
        for k in range(4)
    )
    text = text.replace("        for i, (mid_i,)", writes + "        for i, (mid_i,)")
    (fast, found), (_slow, watched) = _both(text, monkeypatch)
    assert sum(w.unwatched for w in fast.loops.values()) == 1  # task 3 (columns 48:64); 4 to 6 read undefined ones
    assert found == watched and any(h["kind"] == "uninitialised" for h in found)


def test_a_loop_whose_tasks_store_undefined_values_gives_the_watched_findings(monkeypatch):
    # every task adds an uninitialised tile to what it copies: the copies are undefined where they land
    text = PROGRAM.replace("SOURCE", "pl.tensor.create([16, 128], dtype=pl.FP32, layout=pl.TensorLayout.ND, init_value=2.0)")
    text = text.replace("TAG", "input").replace(
        f"        u: {TILE} = pl.tile.adds(t, 1.0)\n",
        f"        z: {TILE} = pl.tile.create([16, 16], dtype=pl.FP32, target_memory=pl.Mem.Vec)\n        u: {TILE} = pl.tile.add(z, t)\n",
    )
    results = []
    for unwatched in (True, False):
        monkeypatch.setattr(task_watch, "UNWATCHED", unwatched)
        r = engine.run_text(text, {"a": A.clone(), "c": torch.zeros(16, 128)}, {}, filename="<watch>")
        results.append(r.memory["hazards"])
    assert results[0] == results[1] and [h["name"] for h in results[0] if h["kind"] == "uninitialised"] == ["z"]


# a Group in a loop of 8 tasks: the cube sends each task's window of x, lane 0 stores it plus one into
# c; lane 1 of the dual-dispatch pair pops its copy and (LANE1) stores it into c2, or does nothing
LANES = f"""# pypto.program: lanes
import pypto.language as pl

@pl.program
class lanes:
    @pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)
    def k_aic(x: {T}, o0: pl.Scalar[pl.INDEX], out: pl.Out[{T}], out2: pl.Out[{T}]):
        m: pl.Tile[[16, 16], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, o0], [16, 16], [16, 16], target_memory=pl.Mem.Mat)
        pl.tile.tpush_to_aiv(m, split=0)
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def k_aiv(x: {T}, o0: pl.Scalar[pl.INDEX], out: pl.Out[{T}], out2: pl.Out[{T}]) -> {T}:
        pl.func_attr({{"dual_aiv_dispatch": True}})
        sb: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()
        if sb == 0:
            t: {TILE} = pl.tile.tpop_from_aic(split=0)
            u: {TILE} = pl.tile.adds(t, 1.0)
            pl.system.tfree_to_aic(t, split=0)
            s: {T} = pl.tile.store(u, [0, o0], out)
            return out
        else:
            t1: {TILE} = pl.tile.tpop_from_aic(split=0)
            pl.system.tfree_to_aic(t1, split=0)
LANE1
            return out
    @pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)
    def k(x: {T}, o0: pl.Scalar[pl.INDEX], out: pl.Out[{T}], out2: pl.Out[{T}]) -> {T}:
        self.k_aic(x, o0, out, out2)
        self.k_aiv(x, o0, out, out2)
        return out
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: {T}, c: pl.Out[{T}], c2: pl.Out[{T}]) -> {T}:
        for i, (c_i,) in pl.range(8, init_values=(c,)):
            o0: pl.Scalar[pl.INDEX] = i * 16
            c_n: {T} = self.k(a, o0, c_i, c2, attrs={{"arg_directions": [{D}.input, {D}.scalar, {D}.output_existing, {D}.output_existing]}})
            c_r: {T} = pl.yield_(c_n)
        return c_r
"""


def _lanes(lane1: str, monkeypatch, text: str | None = None) -> list[tuple[int, dict, dict]]:
    """Per run (middle tasks unwatched, then all watched): tasks run without lane 1, call counts, outputs.
    Task by task under the watch: task sweeps off (the loop's sweep: test_a_watched_task_sweep_...)."""
    from pypto_lsp.analysis import lowering
    from pypto_lsp.exec.memory import MemoryObserver
    from pypto_lsp.exec.observe import CallCounter

    monkeypatch.setattr(lowering, "TASK_SWEEPS", False)
    monkeypatch.setattr(engine, "_COMPILED", {})
    text = (text or LANES).replace("LANE1\n", f"            {lane1}\n" if lane1 else "")
    comp = engine.compile_text(text, filename="<lanes>", memory=True, sanitize=True)
    assert comp.error is None and comp.task_loops, comp.error
    out = []
    for unwatched in (True, False):
        monkeypatch.setattr(task_watch, "UNWATCHED", unwatched)
        san, calls = engine._sanitizer(comp), CallCounter()
        ins = {"a": A.clone(), "c": torch.zeros(16, 128), "c2": torch.zeros(16, 128)}
        ran = engine.run(comp, ins, observers=[MemoryObserver(), calls, san])
        assert ran.error is None, ran.error
        records = all(w.records for w in san.loops.values())
        assert sum(w.unwatched for w in san.loops.values()) == (4 if unwatched and records else 0)
        assert unwatched or san.lanes_left_out == 0
        out.append((san.lanes_left_out, calls.counts, ran.tensors))
    return out


def test_an_unwatched_task_leaves_out_an_idle_lane_1_and_counts_its_call(monkeypatch):
    (left, counts, got), (_, watched_counts, watched) = _lanes("", monkeypatch)
    assert left == 4  # tasks 3 to 6: their lane 1 only popped its copy
    assert counts == watched_counts == {"main": 1, "k_aic": 8, "k_aiv": 16}
    assert torch.equal(got["c"], A + 1) and torch.equal(watched["c"], A + 1)


def test_a_lane_1_that_writes_a_global_buffer_runs_in_every_task(monkeypatch):
    (left, counts, got), (_, watched_counts, _) = _lanes(f"s1: {T} = pl.tile.store(t1, [0, o0], out2)", monkeypatch)
    assert left == 0 and counts == watched_counts
    assert torch.equal(got["c"], A + 1) and torch.equal(got["c2"], A)  # every task's lane 1 wrote its columns


def test_a_loop_without_task_records_leaves_an_idle_lane_out_only_while_nothing_is_undefined(monkeypatch):
    """Before DeriveCallDirections every task runs watched (no records to predict), and only the idle
    lane of the middle ones is left out: not while a buffer holds an undefined element (nothing would
    check the lane's reads of it first). (Such a loop now runs as one task sweep of the Group,
    analysis.task_sweep_plan; with task sweeps off it runs task by task under the watch, as here.)"""
    from pypto_lsp.analysis import lowering

    monkeypatch.setattr(lowering, "TASK_SWEEPS", False)
    monkeypatch.setattr(engine, "_COMPILED", {})
    plain = LANES.replace(f', attrs={{"arg_directions": [{D}.input, {D}.scalar, {D}.output_existing, {D}.output_existing]}}', "")
    assert plain != LANES
    (left, counts, got), (_, watched_counts, _) = _lanes("", monkeypatch, plain)
    assert left == 4 and counts == watched_counts and torch.equal(got["c"], A + 1)
    unwritten = plain.replace(
        "        for i, (c_i,)",
        f"        spare: {T} = pl.tensor.create([16, 128], dtype=pl.FP32, layout=pl.TensorLayout.ND)\n        for i, (c_i,)",
    )
    (left, counts, got), _ = _lanes("", monkeypatch, unwritten)
    assert left == 0 and torch.equal(got["c"], A + 1)


# -- a watched task sweep (analysis.task_sweep_plan.TaskSweep.watched): the middle tasks as one sweep


def _swept_and_watched(text: str, ins: dict, monkeypatch) -> list[tuple]:
    """Per run (task sweeps as planned, then every task watched as written): the sweeps run, the
    unwatched tasks, each task's index, dependencies and records (by argument), the findings, the call
    counts, the outputs."""
    import pypto_lsp.exec.sweep as sweep
    from pypto_lsp.exec.observe import CallCounter

    comp = engine.compile_text(text, filename="<swept>", memory=True, sanitize=True)
    assert comp.error is None and "_pl_san.sweep_ready(" in comp.generated.source, comp.error
    runs = []
    real = sweep.Sweep.run_tasks

    def counted(self, *args):
        out = real(self, *args)
        runs.append(out is not sweep.FAILED)
        return out

    monkeypatch.setattr(sweep.Sweep, "run_tasks", counted)
    out = []
    for unwatched in (True, False):
        monkeypatch.setattr(task_watch, "UNWATCHED", unwatched)
        runs.clear()
        san, calls = engine._sanitizer(comp), CallCounter()
        ran = engine.run(comp, {k: v.clone() for k, v in ins.items()}, observers=[calls, san])
        assert ran.error is None, ran.error
        tasks = [
            (t.index, sorted(t.deps), {t.args[k]: {kind: list(b) for kind, b in v.items() if b} for k, v in t.access.items()})
            for t in san.tasks
        ]
        out.append((sum(runs), sum(w.unwatched for w in san.loops.values()), tasks, san.findings + san.races(), calls.counts, ran.tensors))
    return out


def test_a_watched_task_sweep_runs_the_middle_tasks_as_one_and_gives_each_its_records(monkeypatch):
    # the Group loop of 8 tasks: tasks 0-2 and 7 run as written, watched; 3-6 as one sweep
    text = LANES.replace("LANE1\n", "")
    ins = {"a": A, "c": torch.zeros(16, 128), "c2": torch.zeros(16, 128)}
    (sweeps, unwatched, tasks, found, counts, got), (w_sweeps, w_unwatched, w_tasks, w_found, w_counts, watched) = _swept_and_watched(
        text, ins, monkeypatch
    )
    assert (sweeps, unwatched, w_sweeps, w_unwatched) == (1, 4, 0, 0)
    assert tasks == w_tasks and len(tasks) == 8 and found == w_found
    assert counts == w_counts == {"main": 1, "k_aic": 8, "k_aiv": 16}
    assert torch.equal(got["c"], A + 1) and torch.equal(watched["c"], A + 1)


def test_a_race_with_a_swept_task_is_found_as_when_it_is_watched(monkeypatch):
    # PROGRAM's loop (its task a plain AIV kernel, as an InCore one) is a watched sweep; the call after
    # it reads what task 5 (swept) wrote, as no_dep: the same RAW race as when every task is watched
    text = PROGRAM.replace("SOURCE", "pl.tensor.create([16, 128], dtype=pl.FP32, layout=pl.TensorLayout.ND, init_value=2.0)")
    text = text.replace("TAG", "no_dep")
    ins = {"a": A, "c": torch.zeros(16, 128)}
    (sweeps, unwatched, tasks, found, _, got), (_, _, w_tasks, w_found, _, watched) = _swept_and_watched(text, ins, monkeypatch)
    assert (sweeps, unwatched) == (1, 4) and tasks == w_tasks and found == w_found
    races = [h for h in found if h["kind"] == "race"]
    assert [(h["race"], h["tasks"], h["line"], h["other_line"]) for h in races] == [("RAW", [5, 8], 20, 18)]
    assert torch.equal(got["c"], watched["c"])


def test_a_watched_task_sweep_is_declined_when_a_middle_task_would_read_an_undefined_element(monkeypatch):
    # the loop (an InCore task here) copies 'src', whose columns from 64 on were never written: no
    # sweep, task by task as the watch runs them (task 3 unwatched, 4 to 7 watched), the same findings
    text = PROGRAM.replace("SOURCE", "pl.tensor.create([16, 128], dtype=pl.FP32, layout=pl.TensorLayout.ND)").replace("TAG", "input")
    text = text.replace("FunctionType.AIV, level=pl.Level.AIV", "FunctionType.InCore, level=pl.Level.CORE_GROUP")
    writes = "".join(
        f'        src{k}: {T} = self.copy_cols(a, {16 * k}, src, attrs={{"arg_directions": [{D}.input, {D}.scalar, {D}.output_existing]}})\n'
        for k in range(4)
    )
    text = text.replace("        for i, (mid_i,)", writes + "        for i, (mid_i,)")
    ins = {"a": A, "c": torch.zeros(16, 128)}
    (sweeps, unwatched, tasks, found, _, _), (_, _, w_tasks, w_found, _, _) = _swept_and_watched(text, ins, monkeypatch)
    assert (sweeps, unwatched) == (0, 1) and tasks == w_tasks
    assert found == w_found and any(h["kind"] == "uninitialised" for h in found)
