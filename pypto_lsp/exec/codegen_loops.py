"""Printing a loop that :mod:`pypto_lsp.analysis.lowering` chose not to run as written: one
batched call (:class:`~pypto_lsp.analysis.lowering.KChunk`), bulk pipe transfers
(:class:`~pypto_lsp.analysis.lowering.PipePush` / ``PipePop``) or a sweep over all iterations
(:class:`~pypto_lsp.analysis.lowering.Sweep`), each with the loop as written as its fallback
(printed by the caller in the ``else:``). Nothing here decides whether a strategy applies."""

from __future__ import annotations

from typing import Any

from ..analysis.lowering import KChunk, PipePop, PipePush, Sweep
from ..analysis.sweep_plan import SweepPlan
from ..analysis.task_sweep_plan import TaskSweep, task_body
from ..ir.model import Assign, ExprStmt, For, FuncCall, OpCall, Span, Stmt, Yield
from .codegen_text import Frame, literal

__all__ = ["LoopLowering"]


class LoopLowering:
    """Emits for one function's generator ``f`` (an ``exec.codegen._FunctionGen``: its names,
    lines, memory plan and expressions)."""

    def __init__(self, f: Any) -> None:
        self.f = f

    def placeholder(self, ind: int, span: Span) -> int:
        """An empty line to :meth:`fill` once what it needs is known (the memory sites of a body)."""
        self.f.emit(ind, "", span)
        return len(self.f.gen.lines) - 1

    def fill(self, at: int, ind: int, text: str) -> None:
        self.f.gen.lines[at] = ("    " * ind + text, self.f.gen.lines[at][1])

    def pop_sites(self, body: list[Stmt]) -> str:
        """The memory sites of the pops of ``body`` (emitted already), as a tuple literal."""
        assert self.f.mem is not None
        return (
            "("
            + "".join(f"{self.f.mem_site_of[id(st)]}, " for st in body if id(st) in self.f.mem.pops and id(st) in self.f.mem_site_of)
            + ")"
        )

    def batched_loop(self, s: For, st: KChunk, carried: list[str], var: str, ind: int) -> None:
        """A K-chunk accumulation loop as one batched call (see :mod:`.batching`), the loop
        itself emitted by the caller in its ``else:``."""
        from ..analysis import batching_plan as batching

        plan = st.accumulations
        if not carried:  # before ConvertToSSA: the accumulators are the names the body rebinds
            carried = [self.f.py(a.name) for a in plan if a.name is not None]

        def spec(w: batching.Window) -> str:
            offs = "".join((literal(o) if isinstance(o, int) else self.f.expr(o)) + ", " for o in w.offsets)
            return f"{self.f.py(w.source)}, ({offs}), {w.shape!r}"

        specs = "".join(f"({spec(a.lhs)}, {spec(a.rhs)}, {self.f.gen.dtype(a.product) if a.product else None}), " for a in plan)
        trips = st.trips
        self.f.emit(ind, f"_pl_b = _pl_kchunk.kchunk(({''.join(c + ', ' for c in carried)}), ({specs}), {len(trips)})", s.header_span)
        self.f.emit(ind, "if _pl_b is not None:", s.header_span)
        self.f.emit(ind + 1, f"{', '.join(carried)}, = _pl_b", s.header_span)
        self.f.emit(ind + 1, f"{var} = {trips[-1]}", s.header_span)
        self.f.emit(ind, "else:", s.header_span)
        self.f.gen.uses_batching = True

    def pipe_loop(self, s: For, st: PipePush | PipePop, carried: list[str], var: str, ind: int) -> bool | tuple[str, list[tuple[int, str]]]:
        """A loop on one end of a cross-core pipe as one call (see :mod:`.pipebatch`), the loop
        itself emitted by the caller in its ``else:`` (True).

        With the memory model on placed tiles: the name of a :class:`.pipebatch.Peel` the caller
        iterates instead of the range, and the lines (indent, text) of the batched call the caller
        puts at the top of the body."""
        trips = st.trips
        peel = f"_pl_pk{len(self.f.gen.lines)}" if self.f.mem is not None else None
        chunks = f"{peel}.count" if peel is not None else str(len(trips))
        if isinstance(st, PipePush):
            push = st.plan
            specs = ""
            for (lhs, rhs), (ldt, rdt) in zip(push.products, push.dtypes, strict=True):
                specs += "(" + self._window_spec(lhs, ldt) + ", " + self._window_spec(rhs, rdt) + "), "
            order = "".join(f"{i}, " for i in push.order)
            paced = ", paced=True" if st.paced else ""
            first = f", first={peel}.first" if peel is not None else ""
            across = f", across={st.across!r}" if st.across else ""
            call = [(0, f"if _pl_pipebatch.push_loop(({specs}), ({order}), {chunks}{paced}{first}{across}):")]
        else:
            pop = st.plan
            steps = ""
            for slot, p_name, p_type, op, a_name, a_type, first_, line in pop.steps:
                steps += f"({slot}, {self.f.checks.args(p_type)}, {literal(p_name)}, {literal(op)}, "
                steps += f"{self.f.checks.args(a_type)}, {literal(a_name)}, {first_}, {line}), "
            inits = "".join(c + ", " for c in carried)
            call = [
                (0, f"_pl_b = _pl_pipebatch.pop_accumulate(({inits}), {chunks}, ({steps}), {pop.split}, {pop.pid})"),
                (0, "if _pl_b is not None:"),
                (1, f"{', '.join(carried)}, = _pl_b"),
            ]
        self.f.gen.uses_pipebatch = True
        if peel is not None:
            # placed tiles: the first and last iterations run in the arenas, the middle batched
            # when they met no hazard (see pipebatch.Peel); the call sits at the top of the body
            return peel, [(1, f"if {peel}.batch:")] + [(d + 2, t) for d, t in call] + [(3, f"{peel}.take()"), (3, "continue")]
        for d, t in call:
            self.f.emit(ind + d, t, s.header_span)
        self.f.emit(ind + 1, f"{var} = {trips[-1]}", s.header_span)
        self.f.emit(ind, "else:", s.header_span)
        return True

    def sweep_loop(self, s: For, st: Sweep, carried: list[str], ind: int) -> None:
        """A loop nest whose iterations are independent, its body emitted once over all iterations
        (see :mod:`.sweep`), the loop itself emitted by the caller in its ``else:``."""
        plan = st.plan
        writes = ""
        for w in st.writes:
            offs = "[" + ", ".join(self.f.expr(o) for o in w.offsets) + "]"
            writes += f"({self.f.py(w.tensor)}, {offs}, {w.shape!r}), "
        ranges = "".join(f"({t.start}, {t.stop}, {t.step}), " for t in plan.trips)
        paced = ", paced=True" if plan.paced else ""
        self.f.emit(ind, f"_pl_sweep = _pl_sweeps.Sweep(({ranges}), {plan.pop_first!r}{paced})", s.header_span)
        self._sweep_head(plan, ind, per_item=None)
        reads = "".join(self.f.py(n) + ", " for n in plan.reads)
        self.f.emit(ind, f"if _pl_sweep.ready(({reads}), ({writes})):", s.header_span)
        if self.f.mem is None:
            self._sweep_batched(plan, carried, ind + 1, s)
        else:
            # placed tiles: the first and last iterations run one by one in the arenas, the middle
            # batched when the first ones met no hazard (see Sweep.peeled)
            peel_at = self.placeholder(ind + 1, s.header_span)
            self.f.emit(ind + 2, "if _pl_it is None:", s.header_span)
            self._sweep_head(plan, ind + 3, per_item=None)
            self._sweep_batched(plan, carried, ind + 3, s)
            self.f.emit(ind + 2, "else:", s.header_span)
            self._sweep_head(plan, ind + 3, per_item="_pl_it")
            self.f.block(plan.body, ind + 3)
            for name, final in zip(carried, plan.finals, strict=True):
                self.f.emit(ind + 3, f"{name} = {self.f.py(final)}", s.header_span)
            self.fill(peel_at, ind + 1, f"for _pl_it in _pl_sweep.peeled(_pl_mem_session, _pl_m, {self.pop_sites(plan.body)}):")
        for loop, trips in zip(plan.loops, plan.trips, strict=True):
            assert loop.var is not None
            self.f.emit(ind + 1, f"{self.f.py(loop.var.name)} = {trips[-1]}", loop.header_span)
        self.f.emit(ind, "else:", s.header_span)
        self.f.gen.uses_sweep = True

    def task_sweep_loop(self, s: For, ts: TaskSweep, carried: list[str], var: str, ind: int) -> range:
        """An orchestrator loop whose tasks run as one sweep (:mod:`pypto_lsp.analysis.task_sweep_plan`):
        its scalars over all tasks, one call of the kernel's ``__tasks`` variant, with the sanitizer
        each task then submitted as done (its dependencies and place in the task graph); the loop
        itself emitted by the caller in its ``else:`` over the trips returned (those of the sweep),
        and after it over the rest (:meth:`task_sweep_tail`)."""
        f = self.f
        r = ts.swept_trips()
        calm = check = ""
        if r.start != ts.trips.start:
            # tiles placed: the first task as written (followed in the arenas, or run by a proof), the
            # others as one sweep when no hazard was met meanwhile: every kernel of the task is then
            # proven, and their later calls would run values only (exec.memory.Session.frame).
            # Watched (the sanitizer keeps task records): the first tasks as written, which
            # exec.task_watch learns the step of their records from
            if ts.first_apart:
                f.emit(ind, "_pl_ev = _pl_mem_session.events", s.header_span)
                calm = "_pl_mem_session.events == _pl_ev and "
            self._trips_as_written(s, carried, var, ind, ts.trips[: ts.trips.index(r.start)])
        f.emit(ind, f"_pl_ts = _pl_sweeps.Sweep((({r.start}, {r.stop}, {r.step}), ), None)", s.header_span)
        f.emit(ind, f"{var} = _pl_ts.var(0)", s.header_span)
        body = task_body(s)
        assert body is not None  # (the plan took it)
        scalars = [b for b in body if isinstance(b, Assign) and not isinstance(b.value, FuncCall)]
        for sc in scalars:
            f.stmt(sc, ind)
        reads, writes, sums = ("".join(f.py(n) + ", " for n in names) for names in (ts.reads, ts.writes, ts.sums))
        args = [f.expr(a) for a in ts.call.args]
        if ts.group is None:
            variant = f"{f.gen.fn_names[ts.kernel]}__tasks"
            counts = [(ts.kernel, "_pl_ts.n")]
        else:  # a Group: one cross-core run of its kernels' variants carries every task's tiles
            aic, aiv, lanes, idle = ts.group
            variant = (
                f"_pl_ts.group({literal(ts.kernel)}, {f.gen.fn_names[aic]}__tasks, {f.gen.fn_names[aiv]}__tasks, {lanes == 2}, {idle})"
            )
            counts = [(aic, "_pl_ts.n"), (aiv, f"{lanes} * _pl_ts.n")]
        site = f.gen.task_sites.get(id(ts.call)) if f.gen.sanitize else None
        tuple_args = "(" + "".join(a + ", " for a in args) + ")"
        run = f"_pl_ts.run_tasks({variant}, {', '.join(args)})"
        if ts.watched and site is not None:
            # every middle task would run unwatched (exec.task_watch); the sweep runs so, as one
            check = f"_pl_san.sweep_ready({site.index}, _pl_ts.task_args({tuple_args}, 0), _pl_ts.n) and "
            run = f"_pl_san.unwatched(lambda: {run})"
        f.emit(
            ind,
            f"if {calm}{check}_pl_ts.tasks_ready(({reads}), ({writes}), ({sums})) and (_pl_r := {run}) is not _pl_sweeps.FAILED:",
            s.header_span,
        )
        for name, n in counts:
            f.emit(ind + 1, f"_pl_calls[{literal(name)}] += {n}", s.header_span)
        f.frames.append(Frame("loop", carried, s.iter_args))
        try:
            for b in body:
                if isinstance(b, Yield):
                    f.yield_stmt(b, ind + 1)
                    continue
                if not isinstance(b, Assign | ExprStmt) or b.value is not ts.call:
                    continue  # (a scalar: above)
                result = "None"
                if isinstance(b, Assign):
                    result = f.py(b.target.name)
                    f.emit(ind + 1, f"{result} = {f.checks.checked('_pl_r', b.target)}", b.span)
                if site is not None:  # each task, run already, through the sanitizer in its order
                    f.emit(ind + 1, "for _pl_i in range(_pl_ts.n):", b.span)
                    if ts.watched:  # its dependencies and its records, as its unwatched run would get them
                        f.emit(ind + 2, f"_pl_san.swept_task({site.index}, _pl_ts.task_args({tuple_args}, _pl_i))", b.span)
                    else:
                        f.emit(
                            ind + 2, f"_pl_san.task({site.index}, _pl_ts.task_args({tuple_args}, _pl_i), lambda *_pl_a: {result})", b.span
                        )
        finally:
            f.frames.pop()
        for sc in scalars:
            name = f.py(sc.target.name)
            f.emit(ind + 1, f"{name} = _pl_ts.last_value({name})", sc.span)
        f.emit(ind + 1, f"{var} = {r[-1]}", s.header_span)
        f.emit(ind, "else:", s.header_span)
        f.gen.uses_sweep = True
        return r

    def task_sweep_tail(self, s: For, ts: TaskSweep, carried: list[str], var: str, ind: int) -> None:
        """After a task sweep's loop (swept or as written): the trips after the sweep's, as written
        (a watched sweep's last task: exec.task_watch checks its records against the step)."""
        r = ts.swept_trips()
        self._trips_as_written(s, carried, var, ind, ts.trips[ts.trips.index(r[-1]) + 1 :])

    def _trips_as_written(self, s: For, carried: list[str], var: str, ind: int, trips: range) -> None:
        if not trips:
            return
        f = self.f
        f.emit(ind, f"for {var} in range({trips.start}, {trips.stop}, {trips.step}):", s.header_span)
        f.frames.append(Frame("loop", carried, s.iter_args))
        try:
            f.block(s.body, ind + 1)
        finally:
            f.frames.pop()

    def ordered_add(self, s: Assign) -> str:
        """A task sweep's ordered add (analysis.task_sweep_plan): the window's value plus every
        task's term, one at a time in task order (exec.sweep.Sweep.ordered_add)."""
        f = self.f
        e = s.value
        assert isinstance(e, OpCall) and len(e.args) == 2 and f.task_adds is not None
        a, b = e.args
        return f"_pl_sweep.ordered_add({f.gen.use_op(e.op)}, {f.expr(a)}, {f.expr(b)}, {f.task_adds[id(s)]})"

    def _sweep_head(self, plan: SweepPlan, ind: int, per_item: str | None) -> None:
        """A sweep's loop variables (all iterations, or one: ``per_item`` names the tuple of its
        values), each inner level's carried values handed on from its outer level, the scalars."""
        names = [self.f.py(loop.var.name) for loop in plan.loops if loop.var is not None]
        if per_item is not None:
            self.f.emit(ind, f"{', '.join(names)}, = {per_item}", plan.loops[0].header_span)
        for level, loop in enumerate(plan.loops):
            if per_item is None:
                self.f.emit(ind, f"{names[level]} = _pl_sweep.var({level})", loop.header_span)
            if level > 0 and loop.iter_args:
                inner = ", ".join(self.f.py(a.name) for a in loop.iter_args)
                outer = ", ".join(self.f.py(a.name) for a in plan.loops[level - 1].iter_args)
                self.f.emit(ind, f"{inner}, = ({outer},)", loop.header_span)
        for _level, st in plan.scalars:
            self.f.stmt(st, ind)

    def _sweep_batched(self, plan: SweepPlan, carried: list[str], ind: int, s: For) -> None:
        """A sweep's body over its iterations, chunk by chunk; the carried values after it."""
        self.f.emit(ind, "while _pl_sweep.next():", s.header_span)
        self.f.sweep_mode, self.f.sweep_dead_ids = True, plan.dead
        try:
            self.f.block(plan.body, ind + 1)
        finally:
            self.f.sweep_mode = self.f.sweep_dead = False
        for name, final in zip(carried, plan.finals, strict=True):
            self.f.emit(ind, f"{name} = {self.f.py(final)}", s.header_span)

    def _window_spec(self, w: object, dtype: str) -> str:
        from ..analysis.batching_plan import Window

        assert isinstance(w, Window)
        offs = "".join((literal(o) if isinstance(o, int) else self.f.expr(o)) + ", " for o in w.offsets)
        return f"{self.f.py(w.source)}, ({offs}), {w.shape!r}, {self.f.gen.dtype(dtype)}"
