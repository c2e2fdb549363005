"""Lowering: what the script for a program will do, decided from the IR before a line is printed.

One :class:`FunctionLowering` per function says how it runs (once, or once per AIV lane of an
outlined split region; the names only lane 0 computes), which instrumentation applies (traced for
localisation, tiles in the memory arenas and whether a frame may stop checking once a call met no
hazard, task calls through the sanitizer) and, per loop, the strategy:

* :class:`AsWritten` -- the loop as the dump writes it (every loop not in ``loops``);
* :class:`KChunk` -- a K-chunk accumulation as one batched call (:mod:`.batching_plan`);
* :class:`PipePush` / :class:`PipePop` -- one end of a cross-core pipe in bulk (:mod:`.pipebatch_plan`);
* :class:`Sweep` -- a nest of independent iterations, its body once over all of them (:mod:`.sweep_plan`).

Each batched strategy keeps the loop as written as its run-time fallback. The code generator
(``exec/codegen.py``) only prints what this says; it decides nothing. The strategies are tried in
that order and the first that applies is taken. No torch here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..ir.cube_side import cube_names
from ..ir.invariance import same_path_every_call
from ..ir.memory import FunctionPlan as FunctionMemory
from ..ir.memory import MemoryPlan
from ..ir.model import For, FuncCall, Function, Name, Program, Scope, Type, stmt_exprs, stmt_targets, walk_expr
from ..ir.tasks import reaches_syncall, sites_by_call, skipped_results
from . import batching_plan, pipebatch_plan, sweep_plan, task_sweep_plan
from .groups import split_aiv_function
from .task_batch_plan import task_scalars

__all__ = [
    "AsWritten",
    "FunctionLowering",
    "KChunk",
    "LoopStrategy",
    "Lowering",
    "Options",
    "PipePop",
    "PipePush",
    "Sweep",
    "lower_program",
]


@dataclass(frozen=True, slots=True)
class Options:
    """What the run asks for: ``trace`` (localisation: every value through the tracer, every loop
    as written), ``exact`` (every loop as written), ``check_shapes``,
    ``sanitize`` (task calls through the sanitizer)."""

    trace: bool = False
    exact: bool = False
    check_shapes: bool = True
    sanitize: bool = False


@dataclass(frozen=True, slots=True)
class AsWritten:
    """The loop as the dump writes it."""


@dataclass(frozen=True, slots=True)
class KChunk:
    accumulations: list[batching_plan.Accumulation]
    trips: range


@dataclass(frozen=True, slots=True)
class PipePush:
    plan: pipebatch_plan.PushPlan
    trips: range
    paced: bool  # the peer is racy: pushes paced to its pops (sweep_plan.racy_peer)
    # per product: (step, first, tasks, the loop's chunks) when its right operand's columns are a task's stripe of a loop
    # whose tasks could run as one batch (task_batch_plan.task_scalars) and its left operand is the
    # same for every task: the products of every task's stripe may be made at once (exec.pipebatch)
    across: tuple[tuple[int, int, int, int] | None, ...] = ()


@dataclass(frozen=True, slots=True)
class PipePop:
    plan: pipebatch_plan.PopPlan
    trips: range


@dataclass(frozen=True, slots=True)
class SweepWrite:
    """A window a sweep writes: the tensor, the window's offsets (IR expressions), the value's shape."""

    tensor: str
    offsets: list[Any]
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Sweep:
    plan: sweep_plan.SweepPlan
    writes: list[SweepWrite]


LoopStrategy = AsWritten | KChunk | PipePush | PipePop | Sweep
AS_WRITTEN = AsWritten()
# orchestrator loops whose tasks run as one sweep (analysis.task_sweep_plan); tests turn it off to compare
TASK_SWEEPS = True


@dataclass(slots=True)
class FunctionLowering:
    function: Function
    types: dict[str, Type]  # IR types by name: parameters and annotated targets
    lanes: int | None  # an outlined split region: run once per AIV lane with this split mode; else None
    cube: frozenset[str]  # in such a region: the names only lane 0 computes (ir.cube_side)
    memory: FunctionMemory | None  # the tiles of this function in the arenas (None: values only)
    same_path: bool  # with memory: every call takes the same path, a frame may stop checking
    loops: dict[int, LoopStrategy] = field(default_factory=dict)  # id(For) -> strategy; absent: as written

    def loop(self, s: For) -> LoopStrategy:
        return self.loops.get(id(s), AS_WRITTEN)


@dataclass(slots=True)
class Lowering:
    options: Options
    memory: MemoryPlan | None  # None: no tile is placed, or the memory model is off
    functions: dict[str, FunctionLowering]
    # the functions whose SPMD launch runs its blocks so they meet at ``system.syncall`` (exec.spmd)
    barrier: frozenset[str] = frozenset()
    # per function launched with ``predicate=``: the arguments a launch left undispatched returns
    skipped: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # orchestrator loops whose tasks run as one sweep, and the kernels printed for them (task_sweep_plan)
    task_sweeps: task_sweep_plan.TaskSweeps = task_sweep_plan.NONE

    def strategies(self) -> dict[str, int]:
        """How many loops take each strategy (by class name): for tests and the bench."""
        out: dict[str, int] = {}
        for f in self.functions.values():
            for st in f.loops.values():
                out[type(st).__name__] = out.get(type(st).__name__, 0) + 1
        return out


def _types(fn: Function) -> dict[str, Type]:
    types: dict[str, Type] = {p.name: p.type for p in fn.params if p.type is not None}
    for s in fn.statements():
        for t in stmt_targets(s):
            if t.type is not None:
                types.setdefault(t.name, t.type)
    return types


def _sweep(s: For, f: FunctionLowering, program: Program) -> Sweep | None:
    plan = sweep_plan.plan_sweep(s, f.function, program, f.types)
    if plan is None:
        return None
    writes = []
    for written, w in plan.writes:
        parts = sweep_plan.window_parts(w)
        value = w.args[0] if w.op == "tile.store" else w.args[1]
        shape = sweep_plan.static_shape(f.types.get(value.id)) if isinstance(value, Name) else None
        if parts is None or shape is None:
            return None
        writes.append(SweepWrite(written, list(parts[0]), shape))
    return Sweep(plan, writes)


def _task_stripes(
    push: pipebatch_plan.PushPlan, trips: range, fn: Function, scalars: Callable[[], dict[tuple[str, str], tuple[int, int, int]]]
) -> tuple[tuple[int, int, int, int] | None, ...]:
    """Per product of a push loop: the task stripe its right operand's columns are (see :class:`PipePush`)."""
    mine = {p: v for (k, p), v in scalars().items() if k == fn.name}
    out: list[tuple[int, int, int, int] | None] = []
    for lhs, rhs in push.products:
        col = rhs.offsets[1] if rhs.axis == 0 else None
        stripe = mine.get(col.id) if isinstance(col, Name) else None
        lhs_fixed = not any(isinstance(x, Name) and x.id in mine for o in lhs.offsets if not isinstance(o, int) for x in walk_expr(o))
        out.append((*stripe, len(trips)) if stripe is not None and stripe[0] == rhs.shape[1] and lhs_fixed else None)
    return tuple(out) if any(out) else ()


def _strategy(
    s: For,
    f: FunctionLowering,
    program: Program,
    opts: Options,
    batching: bool,
    sweeps: bool,
    scalars: Callable[[], dict[tuple[str, str], tuple[int, int, int]]],
) -> LoopStrategy:
    fn = f.function
    if batching:
        accs = batching_plan.plan_loop(s, fn)
        if accs is not None:
            trips = batching_plan.loop_range(s)
            assert trips is not None
            return KChunk(accs, trips)
    if not sweeps or not opts.check_shapes or f.cube:
        return AS_WRITTEN
    if f.memory is not None or batching:  # pipe loops: values only, or placed tiles peeled
        trips = pipebatch_plan.loop_range(s)
        if trips is not None:
            if not s.iter_args:
                push = pipebatch_plan.plan_push_loop(s, fn)
                if push is not None:
                    return PipePush(push, trips, sweep_plan.racy_peer(program, fn), _task_stripes(push, trips, fn, scalars))
            else:
                pop = pipebatch_plan.plan_pop_loop(s, fn)
                if pop is not None:
                    return PipePop(pop, trips)
    return _sweep(s, f, program) or AS_WRITTEN


def lower_program(program: Program, options: Options, memory: MemoryPlan | None) -> Lowering:
    """The :class:`Lowering` of ``program`` for a run with ``options``; ``memory``: its memory
    plan when the memory model is on (kept only when it places something)."""
    placed = memory if memory is not None and memory.placed else None
    exact = bool(options.exact)
    # batched loops: never traced, never exact, never with the memory model on placed tiles (the
    # memory model on a program whose plan places nothing leaves the script values-only)
    batching = not options.trace and not exact and placed is None
    # sweeps and pipe loops run on placed dumps too: their first and last iterations in the arenas
    sweeps = not options.trace and not exact
    functions: dict[str, FunctionLowering] = {}
    # the kernels' parameters that step through the tasks of a loop whose tasks could run as one batch
    scalars = functools.cache(lambda: task_scalars(program))  # asked for by push loops only (most dumps have none)
    with batching_plan.reads_kept():
        for fn in program.functions:
            functions[fn.name] = _lower_function(fn, program, options, placed, batching, sweeps, scalars)
    tasks = task_sweep_plan.NONE
    if sweeps and options.check_shapes and TASK_SWEEPS:
        # with the sanitizer on, a call with arg_directions is left to exec.task_watch
        directions = {k: site.directions is not None for k, site in sites_by_call(program).items()} if options.sanitize else None
        # on placed tiles: the kernels a clean call proves (exec.memory.Session.frame), each loop's first task as written
        proven = frozenset(n for n, f in functions.items() if f.memory is None or f.same_path) if placed is not None else None
        tasks = task_sweep_plan.plan_task_sweeps(program, directions, proven)
    return Lowering(options, placed, functions, reaches_syncall(program), _skipped(program), tasks)


def _lower_function(
    fn: Function,
    program: Program,
    options: Options,
    placed: MemoryPlan | None,
    batching: bool,
    sweeps: bool,
    scalars: Callable[[], dict[tuple[str, str], tuple[int, int, int]]],
) -> FunctionLowering:
    """One function's loop strategies (see :func:`lower_program`)."""
    mem = placed.functions.get(fn.name) if placed is not None else None
    if mem is not None and mem.empty:
        mem = None
    lanes = split_aiv_function(fn)
    f = FunctionLowering(
        function=fn,
        types=_types(fn),
        lanes=lanes,
        cube=frozenset(cube_names(fn)) if lanes is not None else frozenset(),
        memory=mem,
        same_path=mem is not None and sweeps and same_path_every_call(fn),
    )
    for s in fn.statements():
        if isinstance(s, For):
            st = _strategy(s, f, program, options, batching, sweeps, scalars)
            if not isinstance(st, AsWritten):
                f.loops[id(s)] = st
    return f


def _skipped(program: Program) -> dict[str, tuple[int, ...]]:
    """Per function launched with ``predicate=`` (``pl.submit``/``pl.spmd_submit``, or called in a
    predicated ``with pl.spmd(...)``): the arguments an undispatched launch returns (ir.tasks)."""
    if program.source and "predicate" not in program.source:
        return {}  # no launch can carry one: the walk below would find nothing
    launched: list[FuncCall] = []
    for fn in program.functions:
        for s in fn.statements():
            scoped = [x for b in s.body for x in stmt_exprs(b)] if isinstance(s, Scope) and "predicate" in s.kwargs else []
            inside = {id(x) for x in scoped}
            for top in [*stmt_exprs(s), *scoped]:
                launched += [e for e in walk_expr(top) if isinstance(e, FuncCall) and ("predicate" in e.kwargs or id(top) in inside)]
    out: dict[str, tuple[int, ...]] = {}
    for e in launched:
        callee = program.function(e.func)
        if callee is not None:
            out[e.func] = skipped_results(callee)
    return out
