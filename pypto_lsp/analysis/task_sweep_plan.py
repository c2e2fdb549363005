"""Orchestrator loops whose tasks run as one sweep: every task of the loop at once, the task index the
sweep's iteration axis (the second step of the task batching laid out in ``docs/speed.md``).

:mod:`.task_batch_plan` says which loops' tasks could run as one batch and the role of every buffer
a task touches. This module takes the loops among them whose task is one InCore kernel (or a plain
AIV one, which a task runs so) or one Group that a sweep can run whole, and says how its body is
printed over all tasks (``exec.codegen``: the kernel's ``__tasks`` variant; ``exec.sweep``: the run)::

    for ob, (acc,) in pl.range(16, init_values=(acc0,)):        # the orchestrator
        o0 = ob * 64
        acc1 = self.mlp_block(x, w, o0, acc)                      # one InCore task a trip
        pl.yield_(acc1)

runs as ``o0 = Ix(0, 64, ..., 960)`` and one call of ``mlp_block__tasks`` whose statements act on
``[tasks, ...]`` batches (:class:`pypto_lsp.exec.sweep.Sweep`), its own loops run as written (the
same trips in every task: the plan's same-path proof).

Why the buffers end as the tasks leave them, one after another:

* an ``input`` is written by no task: every task reads what the first read;
* an ``own-window`` buffer is read by no task and each element is written by one task only: the
  order of the tasks' writes cannot show; within a task the kernel's writes keep their order (its
  loops run as written, each statement over all tasks before the next);
* an ``ordered-sum`` buffer is loaded, added to and stored back at the same window by every task,
  nothing else: the store of each window gets the first value plus every task's term added one by
  one in task order (``Sweep.ordered_add``), as the tasks would leave it. Required here: the load's
  value goes only into the add and the add's only into the store, and no two of a task's stores of
  that buffer meet (else the device's order would interleave tasks within a window);
* a task writes nothing else: no buffer it creates, no pipe, no scalar written back.

A Group task (ExpandMixedKernel on) is its AIC kernel and its AIV kernel run by
``exec.crosscore.run_group``; both get a ``__tasks`` variant and one cross-core run of the two
carries every task (``Sweep.group``). Why that run is each task's own run, in order:

* the pipes are no-split (a lane split would cut each task's tile in halves) and each push and pop
  statement moves one tile per task, in task order (the sweep's bulk pushes and pops), so the
  n-th pop of task t takes the n-th push of task t, as in the task's own fresh pipe; the pipe's
  set-up (``system.reserve_buffer`` ...) is made once for the run, as each task's run makes it once;
* the AIV kernel may branch on the lane's index (``tile.get_subblock_idx``): the same path in every
  task of a lane. With two lanes (dual dispatch) a buffer is written only where that branch says
  lane 0, or by both lanes when they run the same code (no such branch: qwen3 after
  ExpandMixedKernel) and every window of an ordered sum that they load and store back makes a round
  trip through the cube in between: a push to it and then a pop of its answer, which the cube
  pushes after its pop of that push (``pipe_order.round_trips_hold``, the pipes' messages counted through
  both kernels' loops). The cube's no-split pop of a dual-dispatch pair waits for both lanes' pushes,
  so both lanes' loads of a window come before either lane's store of it on any schedule, and both
  store the same sum (the same code on the same inputs and the same popped tiles: the cube pushes a
  copy to each lane); else the lanes would race on it in the scheduler's order. Where lane 1
  touches no buffer and pushes only to the cube, which keeps lane 0's tile of each pair, it is left
  out of the run (``_lane1_idle``), as ``exec.task_watch`` leaves it out of a watched loop's middle
  tasks;
* a scratch buffer made per task (InjectGMPipeBuffer's GM pipe buffer) is taken when no kernel
  reads or writes it: one for all tasks is then the same.

On placed tiles (the memory model on, from InitMemRef) a loop is planned when each of its kernels
is one the memory model proves after a clean call (its every call takes the same path, or it places
nothing): the first task runs as written, followed in the arenas, and the others as one sweep only
when no hazard was met meanwhile. Each kernel is then proven, and its later calls would have run
values only (``exec.memory.Session.frame``: a call's checks start from a fresh write log on static
placements, so the same path meets the same checks). A hazard met: every task as written.

With the sanitizer on and ``arg_directions`` on the call (from DeriveCallDirections on) the sanitizer
keeps each task's records (its windows of each buffer, for the task graph and the races):
``exec.task_watch`` runs the first ``WATCHED_FIRST`` tasks and the last watched and the others
unwatched, each given the first task's records moved by its index. Such a loop's sweep is
:attr:`TaskSweep.watched`: the watched tasks run as written, the middle ones as one sweep (when
``LoopWatch.sweep_ready`` finds what their unwatched runs would need: the step learnt, every window
they read defined), then each is submitted in order with its dependencies and its records, as its
unwatched run would have been. A loop whose trips are each one plain ``with pl.scope():``
(MaterializeRuntimeScopes) is taken as its scope's body (:func:`task_body`).

Not planned (the loop runs as written): traced or exact runs, an SPMD task, a scratch buffer a kernel touches, a branch on anything
but the lane's index, a ``while``, a call, a split pipe, another ``system.`` op, a scalar read back,
a write of any other kind, a scope with a mode, a task id or fences. No torch here.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..ir.model import (
    Assign,
    BinOp,
    Const,
    Expr,
    ExprStmt,
    For,
    FuncAttr,
    FuncCall,
    Function,
    If,
    ListExpr,
    Name,
    OpCall,
    Pass,
    Program,
    Return,
    Scope,
    Stmt,
    TupleExpr,
    UnaryOp,
    Yield,
    fold_ints,
    walk_expr,
)
from .groups import group_metadata, split_aiv_function
from .pipe_order import pipe_op, round_trips_hold
from .sweep_plan import FREES, POPS, PUSHES, WRITES
from .task_batch_plan import INPUT, ORDERED_SUM, OWN_WINDOW, SCALAR, SCRATCH, TaskLoopPlan, loop_trips, plan_task_loops

__all__ = ["WATCHED_FIRST", "TaskSweep", "TaskSweeps", "plan_task_sweeps", "task_body"]

# with the sanitizer keeping task records: the tasks of a loop run as written, watched, before its
# sweep (exec.task_watch learns each buffer's step from tasks 0 and 1 and checks it on task 2)
WATCHED_FIRST = 3

# ops a task sweep never runs: state across tasks or cores, buffers made per task, values read back
_NEVER = ("system.", "tile.aic_gather", "tile.aiv_shard", "tensor.aic_gather", "tensor.aiv_shard", "tile.get_subblock_idx")
_NOT_SWEPT = frozenset(
    {
        "tensor.create",
        "tile.create",
        "tensor.read",
        "tile.read",
        "tensor.write",
        "tile.write",
        "tile.scatter_update",
        "tensor.scatter_update",
        "tensor.dim",
    }
)
_LOOPS = ("range", "parallel", "unroll", "pipeline")
# a Group's kernels: the pipe's set-up (once per run: every task's pipe is a fresh one, and the sweep's
# tasks share one run) and the lane's index (the same in every task), besides the pushes and pops
_PIPE_SETUP = frozenset({"system.reserve_buffer", "system.import_peer_buffer", "system.aic_initialize_pipe", "system.aiv_initialize_pipe"})
_LANE = "tile.get_subblock_idx"
_ADDS = frozenset({"tile.add", "tensor.add"})
# a window read: the positions of its buffer, its offsets and its shape
_LOADS = {"tile.load": (0, 1, 2), "tensor.slice": (0, 2, 1)}
MAX_KERNEL_ITERATIONS = 4096  # the kernel's own loop nest, walked to check an ordered sum's windows
MAX_SUM_WINDOWS = 512


@dataclass(frozen=True, slots=True)
class TaskSweep:
    """One orchestrator loop run as a task sweep."""

    kernel: str  # the InCore kernel or the Group every task runs
    trips: range
    call: FuncCall  # the task call in the loop's body
    reads: tuple[str, ...]  # the orchestrator's names of the buffers the tasks only read (inputs)
    writes: tuple[str, ...]  # ... of those they write (their own windows and the ordered sums)
    sums: tuple[str, ...] = ()  # ... of the ordered sums (read too)
    # a Group: (its AIC kernel, its AIV kernel, its AIV lanes: 1, or 2 with dual dispatch, whether
    # lane 1 of two is idle: see _lane1_idle); both kernels get a ``__tasks`` variant, and one
    # cross-core run carries every task's tiles
    group: tuple[str, str, int, bool] | None = None
    # the memory model places tiles: the first task runs as written (followed in the arenas, or run by
    # a proof), and the others as one sweep only when no hazard was met meanwhile (exec.codegen_loops)
    first_apart: bool = False
    # the sanitizer keeps the tasks' records (the call has ``arg_directions``): the first
    # WATCHED_FIRST tasks and the last run as written, watched (exec.task_watch learns and checks the
    # step of their records), the middle ones as one sweep, each then submitted with the records
    # moved by its index (as its unwatched run would get them: exec.task_watch.LoopWatch.take)
    watched: bool = False

    def swept_trips(self) -> range:
        """The trips the sweep runs (the others run as written)."""
        ahead = WATCHED_FIRST if self.watched else 1 if self.first_apart else 0
        return self.trips[ahead : len(self.trips) - 1 if self.watched else len(self.trips)]


@dataclass(frozen=True, slots=True)
class TaskSweeps:
    """A program's task sweeps: by ``id`` of the orchestrator ``for``, and per kernel that needs a
    ``__tasks`` variant its ordered adds (printed as ``Sweep.ordered_add``): ``id`` of the add's
    statement -> whether the window's value is its first operand."""

    loops: dict[int, TaskSweep]
    kernels: dict[str, dict[int, bool]]


NONE = TaskSweeps({}, {})


def plan_task_sweeps(program: Program, directions: dict[int, bool] | None = None, placed: frozenset[str] | None = None) -> TaskSweeps:
    """The loops of ``program`` whose tasks run as one sweep. ``directions``: with the sanitizer on,
    ``id`` of each task call -> whether its site carries ``arg_directions`` (the sanitizer then keeps
    each task's records: such a loop's sweep is :attr:`TaskSweep.watched`); None with the sanitizer off. ``placed``: the memory model places tiles; the
    kernels that may run in a sweep (a kernel it follows in the arenas is proven after one clean call:
    its memory plan's same-path kernels, and those it places nothing of). Each such loop runs its
    first task as written (:attr:`TaskSweep.first_apart`)."""
    plans = [p for p in plan_task_loops(program) if p.declined is None and not p.scalar_uses and p.trips >= 2]
    if not plans:
        return NONE
    by_line = {p.line: p for p in plans}
    groups = group_metadata(program)
    loops: dict[int, TaskSweep] = {}
    kernels: dict[str, dict[int, bool]] = {}
    for fn in program.functions:
        if fn.kind != "Orchestration":
            continue
        for s in fn.statements():
            p = by_line.get(s.span.line) if isinstance(s, For) else None
            if p is None or not isinstance(s, For):
                continue
            found = _loop(program, s, p, directions, groups, placed)
            if found is None:
                continue
            sweep, variants = found
            if any(k in kernels and kernels[k] != adds for k, adds in variants.items()):
                continue
            kernels.update(variants)
            loops[id(s)] = sweep
    return TaskSweeps(loops, kernels) if loops else NONE


def _loop(
    program: Program,
    loop: For,
    p: TaskLoopPlan,
    directions: dict[int, bool] | None,
    groups: dict[str, tuple[str, str, int, bool]],
    placed: frozenset[str] | None,
) -> tuple[TaskSweep, dict[str, dict[int, bool]]] | None:
    """The loop's sweep and its kernels' ``__tasks`` variants (name -> ordered adds), or None."""
    if loop.kind not in _LOOPS:
        return None
    callee = program.function(p.callee)
    if callee is None:
        return None
    group: tuple[str, str, int, bool] | None = None
    if callee.kind == "Group":
        found = _group(groups.get(callee.name), callee)
        if found is None or p.kernels != found[:2]:
            return None
        group = (*found, False)
        sides = {found[1]: "aiv" if found[2] == 1 else "aiv2", found[0]: "aic"}  # (the vector side declines most often)
    elif p.kernels == (p.callee,) and (callee.kind == "InCore" or _plain_vector(callee)):
        sides = {callee.name: ""}
    else:
        return None
    if placed is not None and any(name not in placed for name in sides):
        return None  # a kernel the memory model may follow on every call
    if any(a.role not in (SCALAR, INPUT, OWN_WINDOW, ORDERED_SUM, SCRATCH) for a in p.args):
        return None
    body = task_body(loop)
    if body is None:
        return None
    call = None
    for s in body:
        for e in (s.value,) if isinstance(s, Assign | ExprStmt) else ():
            if isinstance(e, FuncCall):
                call = e
    if call is None or call.func != p.callee or call.submit is not None:
        return None
    if set(call.kwargs) - {"attrs"} or _has_core_num(call):
        return None
    if directions is not None and id(call) not in directions:
        return None
    watched = directions is not None and directions[id(call)]
    rng = loop_trips(loop)
    if rng is None or (watched and len(rng) < WATCHED_FIRST + 2):
        return None  # (watched: no middle task to sweep)
    if not _scratch_made_here(body, call, p):
        return None
    role_of = {a.index: a.role for a in p.args}
    kernel_args = dict(p.kernel_args)
    variants: dict[str, dict[int, bool]] = {}
    trips: list[tuple[int, int]] = []  # a two-lane kernel's round trips (both lanes write a sum: _kernel)
    for name, side in sides.items():
        kernel = program.function(name)
        if kernel is None:
            return None
        params = kernel_args.get(name, ())
        roles = {prm.name: role_of.get(arg, "") for prm, arg in zip(kernel.params, params, strict=False) if arg is not None}
        names: set[str] = set()
        adds = _kernel(kernel, roles, side, names, trips if side == "aiv2" else None)
        if adds is None:
            return None
        variants[name] = adds
        if side == "aiv2" and group is not None and _lane1_idle(kernel, names):
            group = (*group[:3], True)
    if trips:
        assert group is not None
        aic_fn, aiv_fn = program.function(group[0]), program.function(group[1])
        if aic_fn is None or aiv_fn is None or not round_trips_hold(aiv_fn, aic_fn, trips):
            return None
    reads = tuple(a.name for a in p.args if a.name and a.role == INPUT)
    writes = tuple(a.name for a in p.args if a.name and a.role in (OWN_WINDOW, ORDERED_SUM))
    sums = tuple(a.name for a in p.args if a.name and a.role == ORDERED_SUM)
    return TaskSweep(callee.name, rng, call, reads, writes, sums, group, placed is not None, watched), variants


def _plain_vector(fn: Function) -> bool:
    """An AIV kernel that runs as an InCore one when a task calls it (ExpandMixedKernel leaves the
    vector-only kernels so): one lane, no function attribute (no dual dispatch), no split region."""
    return fn.kind == "AIV" and split_aiv_function(fn) is None and not any(isinstance(s, FuncAttr) for s in fn.body)


def task_body(loop: For) -> list[Stmt] | None:
    """The statements of ``loop``'s body a task sweep prints: the body, or the body of its one plain
    ``with pl.scope():`` (MaterializeRuntimeScopes wraps each trip in one: no task id, no fence, no
    mode; transparent to the run, ``exec.codegen``); None: another scope in it (a scope of the
    runtime with its task ids or fences, so the body is flat)."""
    body = loop.body
    if len(body) == 1 and isinstance(body[0], Scope):
        sc = body[0]
        if sc.kind != "scope" or sc.kwargs or sc.args or sc.as_name is not None:
            return None
        body = sc.body
    return None if any(isinstance(s, Scope) for s in body) else body


def _group(meta: tuple[str, str, int, bool] | None, g: Function) -> tuple[str, str, int] | None:
    """A Group a sweep can run: (its AIC kernel, its AIV kernel, its AIV lanes), when its body
    calls the AIC kernel and then the AIV kernel with its own parameters in order (what
    ``exec.crosscore.run_group`` runs), its pipes are no-split and its lanes 1, or 2 by dual dispatch.
    ``meta``: its :func:`.groups.group_metadata`."""
    if meta is None:
        return None
    aic, aiv, split, dual = meta
    if split != 0:
        return None
    names = [prm.name for prm in g.params]
    calls = [s.value for s in g.body if isinstance(s, ExprStmt | Assign) and isinstance(s.value, FuncCall)]
    if [c.func for c in calls] != [aic, aiv]:
        return None
    for c in calls:
        # (an inner call's ``attrs``, e.g. DeriveCallDirections' arg_directions, change nothing run_group
        # does: the sanitizer reads the directions of the orchestration's task calls only)
        if set(c.kwargs) - {"attrs"} or _has_core_num(c) or [a.id if isinstance(a, Name) else None for a in c.args] != names:
            return None
    return aic, aiv, 2 if dual else 1


def _scratch_made_here(body: list[Stmt], call: FuncCall, p: TaskLoopPlan) -> bool:
    """Every scratch argument of the task (a buffer made per task, e.g. InjectGMPipeBuffer's GM pipe
    buffer) is a ``tensor.create`` of the loop's body (``body``: :func:`task_body`), used by nothing but the call: the sweep makes
    one for all tasks, which no kernel touches (``_kernel`` requires it)."""
    scratch = {a.name for a in p.args if a.role == SCRATCH}
    if not scratch:
        return True
    if None in scratch:
        return False
    made = {s.target.name for s in body if isinstance(s, Assign) and isinstance(s.value, OpCall) and s.value.op == "tensor.create"}
    if not scratch <= made:
        return False
    for s in body:
        if isinstance(s, Assign | ExprStmt) and s.value is call:
            continue
        for e in (s.value,) if isinstance(s, Assign | ExprStmt) else getattr(s, "values", ()):
            if any(isinstance(x, Name) and x.id in scratch for x in walk_expr(e)):
                return False
    return True


def _has_core_num(call: FuncCall) -> bool:
    attrs = call.kwargs.get("attrs")
    return attrs is not None and any(isinstance(k, Const) and k.value == "core_num" for k in getattr(attrs, "keys", ()))


def _kernel(
    k: Function, roles: dict[str, str], side: str = "", buffers: set[str] | None = None, trips: list[tuple[int, int]] | None = None
) -> dict[int, bool] | None:
    """``k``'s ordered adds (see :class:`TaskSweeps`) when a sweep over tasks can run its body whole,
    else None. ``side``: ``""`` an InCore kernel; a Group's ``"aic"``, ``"aiv"`` (one lane) or
    ``"aiv2"`` (two lanes by dual dispatch: a global buffer is written only where the lane's index
    says lane 0, else the lanes would race on it, and their order is the scheduler's). ``buffers``:
    filled with the names the kernel gives its buffers (parameters, loop-carried, yielded).

    Two lanes may both write (``"aiv2"``, ``trips`` given) when they run the same code (no branch on
    the lane's index): the same values from the same inputs and the same popped tiles (the cube
    pushes a copy to each lane). An own window is then written twice with the same values; an
    ordered sum's window is loaded, sent to the cube and answered (a push to the cube, then a pop
    from it, between the load and the store in one block) before it is stored: ``trips`` gets each
    such (push, pop) statement pair, whose messages :func:`.pipe_order.round_trips_hold` checks against the
    cube's order (both lanes' loads of a window then come before either lane's store of it)."""
    group = bool(side)
    vector = side.startswith("aiv")
    buffer: dict[str, str] = {name: name for name, role in roles.items() if role in (INPUT, OWN_WINDOW, ORDERED_SUM)}
    defs: dict[str, Assign] = {}
    uses: dict[str, int] = {}
    stores: list[tuple[Assign | ExprStmt, OpCall]] = []  # writes into an ordered-sum buffer
    lanes: set[str] = set()  # names holding the lane's index (tile.get_subblock_idx)
    both: list[tuple[Assign | ExprStmt, OpCall]] = []  # writes both lanes make (no lane-0 branch around them)
    branched = False
    where: dict[int, tuple[list[Stmt], int]] = {}  # id(statement) -> (its block, its index there): asked only with trips

    def count(e: Expr) -> None:
        for x in walk_expr(e):
            if isinstance(x, Name):
                uses[x.id] = uses.get(x.id, 0) + 1

    def op_ok(e: Expr, top: Assign | ExprStmt, lane0: bool) -> bool:
        for x in walk_expr(e):
            if isinstance(x, FuncCall):
                return False
            if not isinstance(x, OpCall):
                continue
            if group and (x.op in _PIPE_SETUP or x.op in PUSHES or x.op in POPS or x.op in FREES):
                if x is not e or not _no_split(x):
                    return False  # (a pipe op inside an expression, or a split one: lane halves)
                continue
            if x.op.startswith(_NEVER) or (x.op in _NOT_SWEPT and not (group and x.op == "tile.create")):
                return False  # (a Group's tile.create: a value, never a write's destination, see below)
            if x.op in PUSHES or x.op in POPS or x.op in FREES:
                return False
            if x.op.endswith((".write", ".read", "scatter_update")):
                return False
            if x.op in WRITES:
                pos = WRITES[x.op]
                if x is not e or len(x.args) != 3:
                    return False  # a write nested in an expression, or of another form
                dst = x.args[pos]
                if not isinstance(dst, Name) or roles.get(buffer.get(dst.id, ""), "") not in (OWN_WINDOW, ORDERED_SUM):
                    return False  # only the task's own windows and ordered sums are written
                if side == "aiv2" and not lane0:
                    if trips is None:
                        return False  # both lanes would write it
                    both.append((top, x))
                if roles[buffer[dst.id]] == ORDERED_SUM:
                    stores.append((top, x))
        return True

    def walk(body: list[Stmt], top: bool, lane0: bool) -> bool:
        nonlocal branched
        for i, s in enumerate(body):
            if trips is not None:
                where[id(s)] = (body, i)
            if isinstance(s, FuncAttr | Pass):
                continue
            if isinstance(s, For):
                if s.kind not in _LOOPS or loop_trips(s) is None:
                    return False
                for t, init in zip(s.iter_args, s.init_values, strict=False):
                    count(init)
                    if isinstance(init, Name) and init.id in buffer:
                        buffer[t.name] = buffer[init.id]
                if not walk(s.body, False, lane0):
                    return False
                continue
            if isinstance(s, Assign):
                count(s.value)
                defs[s.target.name] = s
                v = s.value
                if isinstance(v, Name) and v.id in buffer:
                    buffer[s.target.name] = buffer[v.id]
                elif vector and top and isinstance(v, OpCall) and v.op == _LANE and not v.args and not v.kwargs:
                    lanes.add(s.target.name)  # the same in every task of a lane
                elif isinstance(v, OpCall):
                    if not op_ok(v, s, lane0):
                        return False
                    if v.op in WRITES:
                        dst = v.args[WRITES[v.op]]
                        assert isinstance(dst, Name)
                        buffer[s.target.name] = buffer[dst.id]
                elif not _scalar_expr(v):
                    return False
                continue
            if isinstance(s, ExprStmt):
                count(s.value)
                if not isinstance(s.value, OpCall) or not op_ok(s.value, s, lane0):
                    return False
                continue
            if isinstance(s, Yield):
                for v in s.values:
                    count(v)
                for t, v in zip(s.targets, s.values, strict=False):
                    if isinstance(v, Name) and v.id in buffer:
                        buffer[t.name] = buffer[v.id]
                continue
            if isinstance(s, Return) and top:
                for v in s.values:
                    count(v)
                continue
            if isinstance(s, If) and top and vector:
                # a branch on the lane's index: the same path in every task of a lane
                then_lane0 = _lane_test(s.cond, lanes)
                if then_lane0 is None or any(isinstance(b, Yield) for b in (*s.then, *s.orelse)):
                    return False
                branched = True
                count(s.cond)
                if not walk(s.then, True, lane0 or then_lane0) or not walk(s.orelse, True, lane0 or not then_lane0):
                    return False
                continue
            return False  # a branch, a while, a scope, a tuple unpacking, a break
        return True

    if not walk(k.body, True, side != "aiv2"):  # (two lanes: lane 0 alone only where a branch says so)
        return None
    if any(uses.get(name) for name, role in roles.items() if role == SCRATCH):
        return None  # a buffer of each task's own, read or written: not one for all tasks
    if buffers is not None:
        buffers.update(buffer)
    adds: dict[int, bool] = {}
    shapes: set[tuple[int, ...]] = set()
    for _top, store in stores:
        found = _ordered_add(store, defs, uses, buffer)
        if found is None:
            return None
        adds[id(found[0])] = found[1]
        shapes.add(found[2])
    # (one window shape for all of a kernel's ordered sums keeps the check of their windows simple)
    if stores and (len(shapes) != 1 or not _sum_windows_apart(k, {id(st) for _, st in stores}, next(iter(shapes)))):
        return None
    if both:
        if branched or lanes:
            return None  # (the lanes may run different code: their writes race)
        assert trips is not None
        for top, store in both:
            if roles[buffer[store.args[WRITES[store.op]].id]] != ORDERED_SUM:  # type: ignore[union-attr]
                continue  # an own window: the same values from both lanes, read by no task
            pair = _round_trip(top, store, defs, uses, buffer, where)
            if pair is None:
                return None
            trips.append(pair)
    return adds


def _round_trip(
    top: Assign | ExprStmt,
    store: OpCall,
    defs: dict[str, Assign],
    uses: dict[str, int],
    buffer: dict[str, str],
    where: dict[int, tuple[list[Stmt], int]],
) -> tuple[int, int] | None:
    """``(id(push), id(pop))``: an ordered sum's store ``top`` whose window's load, a push to the cube
    and then a pop from it come before it in its own block, in that order; else None."""
    found = _ordered_add(store, defs, uses, buffer)
    if found is None:
        return None
    add = found[0].value
    assert isinstance(add, OpCall)
    loaded = add.args[0 if found[1] else 1]
    load = defs.get(loaded.id) if isinstance(loaded, Name) else None
    if load is None or id(top) not in where or id(load) not in where:
        return None
    block, at_store = where[id(top)]
    other, at_load = where[id(load)]
    if other is not block or at_load >= at_store:
        return None
    pipe = [(i, pipe_op(s)) for i, s in enumerate(block) if at_load < i < at_store]
    push = next((i for i, op in pipe if op == "tile.tpush_to_aic"), None)
    pop = next((i for i, op in reversed(pipe) if op == "tile.tpop_from_aic"), None)
    if push is None or pop is None or pop < push:
        return None
    return id(block[push]), id(block[pop])


def _lane1_idle(k: Function, buffers: set[str]) -> bool:
    """Lane 1 of a dual-dispatch AIV kernel can be left out of the run (``exec.crosscore``'s
    ``lane1_absent``, as ``exec.task_watch`` leaves it out of a watched loop's middle tasks): what it
    runs (every statement outside a branch the lane's index gives to lane 0) touches no buffer
    (no op takes one), meets no other lane and pushes only to the cube, whose no-split pop of a
    dual-dispatch pair keeps lane 0's tile."""
    lanes: set[str] = set()

    def quiet(e: Expr) -> bool:
        for x in walk_expr(e):
            if not isinstance(x, OpCall):
                continue
            if x.op in PUSHES and x.op != "tile.tpush_to_aic":
                return False
            if x.op.startswith(("tile.aic_gather", "tile.aiv_shard", "tensor.aic_gather", "tensor.aiv_shard")):
                return False
            for a in (*x.args, *x.kwargs.values()):
                if any(isinstance(y, Name) and y.id in buffers for y in walk_expr(a)):
                    return False
        return True

    def walk(body: list[Stmt]) -> bool:
        for s in body:
            if isinstance(s, If):
                then_lane0 = _lane_test(s.cond, lanes)
                if then_lane0 is None:
                    return False
                if not walk(s.orelse if then_lane0 else s.then):
                    return False
                continue
            if isinstance(s, Assign) and isinstance(s.value, OpCall) and s.value.op == _LANE:
                lanes.add(s.target.name)
                continue
            if isinstance(s, For):
                if not all(quiet(v) for v in s.init_values) or not walk(s.body):
                    return False
                continue
            for e in (s.value,) if isinstance(s, Assign | ExprStmt) else getattr(s, "values", ()):
                if not quiet(e):
                    return False
        return True

    return walk(k.body)


def _no_split(op: OpCall) -> bool:
    """A pipe op of no lane split (``split=0`` or none) on a fixed pipe (``id=`` a constant or none)."""
    split = op.kwargs.get("split")
    pid = op.kwargs.get("id")
    return (split is None or (isinstance(split, Const) and split.value == 0)) and (pid is None or isinstance(pid, Const))


def _lane_test(cond: Expr, lanes: set[str]) -> bool | None:
    """Whether ``lane == 0`` (or ``!= 1``, ...) holds on the branch's ``then`` side for lane 0, when the
    condition compares a lane's index with 0 or 1; else None."""
    if not isinstance(cond, BinOp) or cond.op not in ("==", "!="):
        return None
    lane, other = (cond.left, cond.right) if isinstance(cond.left, Name) else (cond.right, cond.left)
    if not isinstance(lane, Name) or lane.id not in lanes or not isinstance(other, Const) or other.value not in (0, 1):
        return None
    if type(other.value) is not int:
        return None
    return (other.value == 0) == (cond.op == "==")


def _scalar_expr(e: Expr) -> bool:
    """A scalar computed from names and constants (no op, no call)."""
    return all(isinstance(x, Name | Const | BinOp | UnaryOp) for x in walk_expr(e))


def _ordered_add(
    store: OpCall, defs: dict[str, Assign], uses: dict[str, int], buffer: dict[str, str]
) -> tuple[Assign, bool, tuple[int, ...]] | None:
    """The add whose value ``store`` writes back, whether the load is its first operand and the
    window's shape, when it adds a term to a load of the same window of the same buffer and both
    values go nowhere else; else None."""
    value, offsets, dst = store.args if store.op == "tile.store" else (store.args[1], store.args[2], store.args[0])
    if not isinstance(value, Name) or not isinstance(dst, Name) or uses.get(value.id) != 1:
        return None
    add = defs.get(value.id)
    if add is None or not isinstance(add.value, OpCall) or add.value.op not in _ADDS or len(add.value.args) != 2 or add.value.kwargs:
        return None
    a, b = add.value.args
    if isinstance(a, Name) and isinstance(b, Name) and a.id == b.id:
        return None
    for first, loaded in ((True, a), (False, b)):
        if not isinstance(loaded, Name):
            continue  # (the term: any expression, a nested product before FlattenCallExpr)
        ld = defs.get(loaded.id)
        if ld is None or not isinstance(ld.value, OpCall) or ld.value.op not in _LOADS or uses.get(loaded.id) != 1:
            continue
        at_src, at_offs, at_shape = _LOADS[ld.value.op]
        if len(ld.value.args) < 3:
            continue
        src = ld.value.args[at_src]
        if not isinstance(src, Name) or buffer.get(src.id) != buffer.get(dst.id):
            continue
        shape = _ints(ld.value.args[at_shape])
        if not _same_expr(ld.value.args[at_offs], offsets) or shape is None:
            continue
        return add, first, tuple(shape)
    return None


def _same_expr(a: Expr, b: Expr) -> bool:
    """Two offset lists that are the same expressions (names and constants)."""
    if isinstance(a, ListExpr | TupleExpr) and isinstance(b, ListExpr | TupleExpr):
        return len(a.items) == len(b.items) and all(_same_expr(x, y) for x, y in zip(a.items, b.items, strict=True))
    if isinstance(a, Name) and isinstance(b, Name):
        return a.id == b.id
    if isinstance(a, Const) and isinstance(b, Const):
        return a.value == b.value and type(a.value) is type(b.value)
    if isinstance(a, BinOp) and isinstance(b, BinOp):
        return a.op == b.op and _same_expr(a.left, b.left) and _same_expr(a.right, b.right)
    return False


def _ints(e: Expr) -> list[int] | None:
    return fold_ints(e.items) if isinstance(e, ListExpr | TupleExpr) else None


def _sum_windows_apart(k: Function, store_ids: set[int], ext: tuple[int, ...]) -> bool:
    """No two windows the kernel's ordered-sum stores write in one task meet (walking its loops, a
    scalar the kernel does not compute taken as 0: the same in every window of a task)."""
    boxes: list[tuple[tuple[int, int], ...]] = []
    budget = [MAX_KERNEL_ITERATIONS]

    def value(e: Expr, env: dict[str, int]) -> int | None:
        if isinstance(e, Const):
            return e.value if type(e.value) is int else None
        if isinstance(e, Name):
            return env.get(e.id, 0)
        if isinstance(e, UnaryOp) and e.op in ("-", "USub"):
            v = value(e.operand, env)
            return None if v is None else -v
        if isinstance(e, BinOp) and e.op in ("+", "-", "*", "//"):
            x, y = value(e.left, env), value(e.right, env)
            if x is None or y is None or (e.op == "//" and y == 0):
                return None
            return x + y if e.op == "+" else x - y if e.op == "-" else x * y if e.op == "*" else x // y
        return None

    def walk(body: list[Stmt], env: dict[str, int]) -> bool:
        for s in body:
            if isinstance(s, For):
                rng = loop_trips(s)
                assert rng is not None
                for v in rng:
                    budget[0] -= 1
                    if budget[0] < 0:
                        return False
                    inner = dict(env)
                    if s.var is not None:
                        inner[s.var.name] = v
                    if not walk(s.body, inner):
                        return False
                continue
            if isinstance(s, Assign) and not isinstance(s.value, OpCall) and _scalar_expr(s.value):
                got = value(s.value, env)
                if got is not None:
                    env[s.target.name] = got
                else:
                    env.pop(s.target.name, None)
                continue
            if isinstance(s, If):
                if not walk(s.then, dict(env)) or not walk(s.orelse, dict(env)):
                    return False
                continue
            op = s.value if isinstance(s, Assign | ExprStmt) else None
            if isinstance(op, OpCall) and id(op) in store_ids:
                offsets, value_name = (op.args[1], op.args[0]) if op.op == "tile.store" else (op.args[2], op.args[1])
                if not isinstance(offsets, ListExpr | TupleExpr) or not isinstance(value_name, Name):
                    return False
                offs = [value(o, env) for o in offsets.items]
                if any(o is None for o in offs):
                    return False
                boxes.append(tuple((o, o) for o in offs if o is not None))  # extents added below
                if len(boxes) > MAX_SUM_WINDOWS:
                    return False
        return True

    if not walk(k.body, {}):
        return False
    # every ordered-sum store writes the tile its add made, as big as the load's window (``ext``)
    spans = [tuple((lo, lo + n) for (lo, _), n in zip(b, ext, strict=False)) for b in boxes]
    if any(len(sp) != len(ext) for sp in spans):
        return False
    for x, y in itertools.combinations(spans, 2):
        if all(a0 < b1 and b0 < a1 for (a0, a1), (b0, b1) in zip(x, y, strict=True)):
            return False
    return True
