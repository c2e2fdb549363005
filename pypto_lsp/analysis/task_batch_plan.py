"""Which orchestrator loops could run all their tasks as one batch, from the IR alone (no torch).

An orchestration loop submits one runtime task per iteration (qwen3's scope3: 64 output-projection
blocks, 32 post-norm chunks, 128 MLP blocks, 32 final-residual chunks at hidden 4096)::

    for ob, (acc,) in pl.range(128, init_values=(acc0,)):
        with pl.scope():
            o0 = ob * 64                                        # scalars affine in the loop variable
            pipe = pl.tensor.create([1], ..., manual_dep=True)  # a task's own pipe buffer
            acc1 = self.mlp_block(x, w_gate, w_up, w_down, o0, acc, pipe, attrs={"arg_directions": [...]})
            pl.yield_(acc1)

The engine runs such a loop task by task, each task's kernels on their own greenlets: ~1.5-2.4 ms of
Python a task, most of what separates a cross-core dump's run from its golden
(``docs/speed.md``, eighth pass). Running every task of the loop at once keeps the device's bits only
when the tasks do not see each other's writes, or see them in one known way. This module decides
that, per loop: the first step of the task-batching executor laid out in ``docs/speed.md``; the
run-time half (a task axis in front of the batched helpers' chunk axis) is not built. Used so far by
the lowering: a push loop whose weight's columns step through such a loop's tasks makes every
task's K-chunk products at its first task (:func:`task_scalars`, ``exec.pipebatch.push_loop``).

A loop's tasks can run as one batch (:attr:`TaskLoopPlan.declined` is None) when

* its bounds are constants and its body, through ``with pl.scope()``, is scalar assignments affine in
  the loop variable, ``tensor.create`` buffers, exactly one task call and the yield;
* the callee is a kernel or a Group of kernels, each of which takes the same path on every call
  (:func:`pypto_lsp.ir.invariance.same_path_every_call`);
* every tensor the call passes is one of (:attr:`TaskArg.role`):

  - ``input``: no task writes it;
  - ``own-window``: every task writes its own windows of it, at offsets that move with the task by at
    least the extent one task writes along that dimension (no two tasks write the same element), and
    no task reads it;
  - ``ordered-sum``: every task reads a window, adds a value to it and writes it back to the same
    window (the down projection's ``inout`` accumulator), and touches it no other way: the result is
    the initial value plus each task's term, added in task order;
  - ``scratch``: a buffer the loop body creates afresh for each task (a pipe's GM buffer).

Conservative by construction: an op this module does not know touching a task's buffer, a store with
``atomic``, a window that is not affine in the task's scalars and the kernel's loop variables, a read
of a buffer the tasks write: the loop is declined, with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..ir.invariance import same_path_every_call
from ..ir.model import (
    Assign,
    BinOp,
    Const,
    Expr,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    ListExpr,
    Name,
    OpCall,
    Program,
    Return,
    ScalarType,
    Scope,
    Stmt,
    TensorType,
    TileType,
    TupleExpr,
    UnaryOp,
    Unpack,
    While,
    Yield,
    fold_int,
    fold_ints,
    stmt_subexprs,
    walk_expr,
)
from ..ir.tasks import directions_of, is_task_call, returned_params

__all__ = ["TaskArg", "TaskLoopPlan", "loop_trips", "plan_task_loops", "task_scalars"]

INPUT = "input"
OWN_WINDOW = "own-window"
ORDERED_SUM = "ordered-sum"
SCRATCH = "scratch"
SCALAR = "scalar"

_TASK = "\x00task"  # the task index's symbol in the kernels' affine offsets (no IR name can be it)
# a window read and a window written: per op, the argument positions of (the buffer, the offsets, the
# window's shape; for a write, the value written, whose shape is the window's)
_READS = {"tile.load": (0, 1, 2), "tensor.slice": (0, 2, 1)}
_WRITES = {"tile.store": (2, 1, 0), "tensor.assemble": (0, 2, 1)}
# ops that take a task's tensor argument without reading or writing its elements (the runtime's
# pipe set-up names buffers; a tfree hands a slot back)
_INERT = frozenset({"tensor.dim", "system.reserve_buffer", "system.import_peer_buffer"})
_LANE_OPS = frozenset({"tile.get_subblock_idx"})
# elementwise ops: the result has the shape of their array operands (all of one shape)
_SHAPE_KEEPING = frozenset(
    {"cast", "add", "sub", "mul", "div", "adds", "subs", "muls", "divs", "neg", "exp", "recip", "maximum", "minimum"}
)

Affine = dict[str, int]  # symbol -> coefficient; "" -> the constant
_OUTER = "\x00outer:"  # prefix of a value the loop does not define (an enclosing loop's variable, a parameter)


class _Enclosing(dict[str, Affine]):
    """The orchestrator loop's scalars; a name it does not define is a symbol of its own: the same
    value for every task of one run of the loop (an enclosing loop's variable, a scalar parameter)."""

    def get(self, key: str, default: Affine | None = None) -> Affine | None:  # type: ignore[override]
        return super().get(key) or {_OUTER + key: 1}


@dataclass(frozen=True, slots=True)
class TaskArg:
    """One argument of the loop's task call."""

    index: int
    name: str | None  # the IR name passed (None: a literal)
    role: str  # "scalar" | "input" | "own-window" | "ordered-sum" | "scratch"
    # a scalar's value in task ``i`` of the loop: ``step[0] * i + step[1]``; ``step[1]`` None when it
    # depends on values the loop does not define (the same for every task of one run of the loop)
    step: tuple[int, int | None] | None = None


@dataclass(frozen=True, slots=True)
class TaskLoopPlan:
    """An orchestrator loop that submits a task per iteration, and whether its tasks can run at once."""

    line: int  # the ``for``
    call_line: int  # the task call in its body
    var: str  # the loop variable
    trips: int  # tasks the loop submits (0 when its bounds are not constants)
    callee: str  # the function each task runs
    kernels: tuple[str, ...]  # the kernels that run it (the callee itself, or a Group's AIC and AIV)
    args: tuple[TaskArg, ...]
    declined: str | None  # why its tasks cannot run as one batch; None: they can
    # per kernel: the call argument behind each of its parameters (None: not a parameter of the call)
    kernel_args: tuple[tuple[str, tuple[int | None, ...]], ...] = ()
    # the kernels' lines that use a scalar moving with the task other than as the offset of a window
    # of a task's buffer (a valid shape, a tile op's offset, a value): there one task's checks may
    # differ from another's in more than where its windows are (exec.task_watch follows no such loop)
    scalar_uses: tuple[int, ...] = ()

    def role(self, name: str) -> str | None:
        return next((a.role for a in self.args if a.name == name), None)


# ---------------------------------------------------------------------------- affine arithmetic


def _affine(e: Expr | None, env: dict[str, Affine]) -> Affine | None:
    """``e`` as an affine form over the symbols of ``env`` (None: not affine, or an unknown name)."""
    if e is None:
        return None
    if isinstance(e, Const):
        return {"": e.value} if type(e.value) is int else None
    if isinstance(e, Name):
        return env.get(e.id)
    if isinstance(e, UnaryOp) and e.op in ("-", "USub"):
        inner = _affine(e.operand, env)
        return None if inner is None else {k: -v for k, v in inner.items()}
    if isinstance(e, BinOp) and e.op in ("+", "-", "*"):
        left, right = _affine(e.left, env), _affine(e.right, env)
        if left is None or right is None:
            return None
        if e.op == "*":
            if set(left) <= {""}:
                left, right = right, left
            if not set(right) <= {""}:
                return None  # a product of two symbols
            k = right.get("", 0)
            return {s: c * k for s, c in left.items() if c * k}
        sign = 1 if e.op == "+" else -1
        out = dict(left)
        for s, c in right.items():
            out[s] = out.get(s, 0) + sign * c
        return {s: c for s, c in out.items() if c or s == ""}
    return None


def loop_trips(loop: For) -> range | None:
    """The values of a loop's variable when its bounds fold to constants (any step but 0)."""
    start = 0 if loop.start is None else fold_int(loop.start)
    step = 1 if loop.step is None else fold_int(loop.step)
    stop = fold_int(loop.stop)
    return None if start is None or stop is None or not step else range(start, stop, step)


# ---------------------------------------------------------------------------- the orchestrator side


# the last program planned whole, and its plans (the lowering and the sanitizer's task watch
# ask for the same program's plans one after the other: a program is planned once)
_LAST: tuple[Program, list[TaskLoopPlan]] | None = None


def plan_task_loops(program: Program, calls: set[int] | None = None, min_trips: int = 0) -> list[TaskLoopPlan]:
    """Every loop of the program's Orchestration functions whose body submits a task, in text order;
    with ``calls``, only the loops whose task call is on one of those lines, and with ``min_trips``,
    only those that run at least that many tasks (the others are not planned: a cheap filter)."""
    global _LAST
    last = _LAST
    if last is not None and last[0] is program:
        return [p for p in last[1] if (calls is None or p.call_line in calls) and p.trips >= min_trips]
    plans: list[TaskLoopPlan] = []
    for fn in program.functions:
        if fn.kind != "Orchestration":
            continue
        for s in fn.statements():
            if isinstance(s, For):
                call = _task_call(program, fn, s)
                if call is None or (calls is not None and call.span.line not in calls):
                    continue
                if min_trips and len(loop_trips(s) or ()) < min_trips:
                    continue
                plans.append(_plan_loop(program, fn, s, call))
    if calls is None and not min_trips:
        _LAST = (program, plans)
    return list(plans)


def task_scalars(program: Program) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(kernel, parameter) -> (step, first value, tasks): a kernel parameter that, in the one loop
    whose tasks could run as one batch and that runs the kernel, takes ``step * i + first`` in task
    ``i`` of ``tasks``. What a kernel may compute for every task of its loop at once (the K-chunk
    products of a weight's columns: :func:`pypto_lsp.exec.pipebatch.push_loop`); a parameter whose
    value depends on an enclosing loop, or a kernel run by two loops, is left out."""
    found: dict[tuple[str, str], tuple[int, int, int] | None] = {}
    for plan in plan_task_loops(program):
        by_arg = {a.index: a.step for a in plan.args if a.role == SCALAR}
        for kernel, args in plan.kernel_args:
            fn = program.function(kernel)
            if fn is None:
                continue
            for param, arg in zip(fn.params, args, strict=False):
                step = by_arg.get(arg) if arg is not None else None
                value = None
                if plan.declined is None and plan.trips > 1 and step is not None and step[0] and step[1] is not None:
                    value = (step[0], step[1], plan.trips)
                key = (kernel, param.name)
                found[key] = value if key not in found or found[key] == value else None
    return {k: v for k, v in found.items() if v is not None}


def _flat(body: list[Stmt]) -> Iterator[Stmt]:
    """The statements of ``body`` with ``with pl.scope()`` blocks opened (their bodies in place)."""
    for s in body:
        if isinstance(s, Scope) and s.kind == "scope":
            yield from _flat(s.body)
        else:
            yield s


def _task_call(program: Program, fn: Function, loop: For) -> FuncCall | None:
    """The first task call made directly in ``loop``'s body (not in a nested loop)."""
    for s in _flat(loop.body):
        if isinstance(s, For | While | If):
            continue
        for sub in stmt_subexprs(s):
            if isinstance(sub, FuncCall) and is_task_call(program, fn, sub):
                return sub
    return None


def _scalar_names(fn: Function) -> set[str]:
    """The names ``fn`` declares scalars (its parameters, its assignments)."""
    out = {p.name for p in fn.params if isinstance(p.type, ScalarType)}
    for s in fn.statements():
        if isinstance(s, Assign) and isinstance(s.target.type, ScalarType):
            out.add(s.target.name)
        elif isinstance(s, For) and s.var is not None:
            out.add(s.var.name)
    return out


def _plan_loop(program: Program, orchestrator: Function, loop: For, call: FuncCall) -> TaskLoopPlan:
    var = loop.var.name if loop.var is not None else ""
    rng = loop_trips(loop)
    kernels = _kernels(program, call.func)

    uses: list[int] = []

    def plan(declined: str | None, args: tuple[TaskArg, ...] = ()) -> TaskLoopPlan:
        return TaskLoopPlan(
            loop.span.line,
            call.span.line,
            var,
            len(rng) if rng is not None else 0,
            call.func,
            tuple(k.name for k, _ in kernels or ()),
            args,
            declined,
            tuple((k.name, tuple(ps)) for k, ps in kernels or ()),
            tuple(sorted(set(uses))),
        )

    if rng is None:
        return plan("its bounds are not constants")
    env: dict[str, Affine] = _Enclosing({var: {var: 1}} if var else {})
    scratch: set[str] = set()
    calls = 0
    result: str | None = None  # the name the task call's result is bound to
    yields: list[Expr] = []
    for s in _flat(loop.body):
        if isinstance(s, Assign) and isinstance(s.value, FuncCall):
            calls += 1
            result = s.target.name
        elif isinstance(s, Assign) and isinstance(s.value, OpCall) and s.value.op == "tensor.create":
            scratch.add(s.target.name)
        elif isinstance(s, Assign):
            a = _affine(s.value, env)
            if a is None:
                return plan(
                    f"its body computes '{s.target.name}' (line {s.span.line}), neither a scalar affine in '{var}' nor a new buffer"
                )
            env[s.target.name] = a
        elif isinstance(s, ExprStmt) and isinstance(s.value, FuncCall):
            calls += 1
        elif isinstance(s, Yield):
            yields = s.values
        else:
            return plan(f"its body holds a {type(s).__name__.lower()} (line {s.span.line}) besides the task call")
    if calls != 1:
        return plan(f"its body makes {calls} calls")
    if kernels is None:
        callee = program.function(call.func)
        return plan(f"'{call.func}' is a {callee.kind if callee else 'missing'} function, not a kernel or a Group of kernels")
    # which arguments are scalars: the call's arg_directions (from DeriveCallDirections on), else the types
    dirs = directions_of(call)
    scalars = _scalar_names(orchestrator)
    for k, _ in kernels:
        if not same_path_every_call(k):
            return plan(f"kernel '{k.name}' may take another path on another call (a branch or bound reads its arguments)")

    args: list[TaskArg] = []
    task_scalars: dict[int, Affine] = {}
    for i, passed in enumerate(call.args):
        name = passed.id if isinstance(passed, Name) else None
        d = dirs[i] if dirs is not None and i < len(dirs) else None
        if d == "scalar" or name is None or name in scalars or (name in env and name not in scratch):
            value = _affine(passed, env)
            if value is None:
                return plan(f"argument {i + 1} ('{name or '...'}') is not a scalar affine in '{var}'")
            outer = {k: c for k, c in value.items() if k.startswith(_OUTER)}
            task_scalars[i] = {_TASK: value.get(var, 0), "": value.get("", 0), **outer}
            args.append(TaskArg(i, name, SCALAR, (value.get(var, 0), None if outer else value.get("", 0))))
        elif name in scratch:
            args.append(TaskArg(i, name, SCRATCH))
        else:
            args.append(TaskArg(i, name, ""))  # decided from the kernels' accesses below

    accesses: dict[int, list[_Access]] = {}
    returned: set[int] = set()  # the call arguments a kernel returns (a view of)
    for k, params in kernels:
        found = _kernel_accesses(k, params, task_scalars, accesses, returned, uses)
        if found is not None:
            return plan(found)
    callee = program.function(call.func)
    if callee is not None and callee.kind == "Group":
        returned = set(returned_params(callee) or ())
    handed = _handed_round(loop, call, result, yields, returned)
    if handed:
        return plan(handed)
    final: list[TaskArg] = []
    for arg in args:
        if arg.role:
            final.append(arg)
            continue
        role = _role(arg, accesses.get(arg.index, []))
        if role.startswith("!"):
            return plan(role[1:], tuple(final))
        final.append(TaskArg(arg.index, arg.name, role))
    return plan(None, tuple(final))


def _handed_round(loop: For, call: FuncCall, result: str | None, yields: list[Expr], returned: set[int]) -> str | None:
    """Whether the loop hands its buffers round: each carried buffer must come back as itself (the
    iter_arg, or the task's result when the callee returns (a view of) the argument it was passed), so
    every task sees the same buffers (a ping-pong ``yield (b, a)`` would give the next task the other one)."""
    carried = [t.name for t in loop.iter_args]
    for j, v in enumerate(yields):
        if j >= len(carried) or not isinstance(v, Name):
            return f"its yield (line {loop.span.line}) carries a value that is not one of its buffers"
        if v.id == carried[j]:
            continue
        only = next(iter(returned)) if len(returned) == 1 else None
        passed = call.args[only] if v.id == result and only is not None and only < len(call.args) else None
        if not (isinstance(passed, Name) and passed.id == carried[j]):
            return f"its yield hands '{v.id}' on as '{carried[j]}': the next task would get another buffer"
    return None


def _kernels(program: Program, name: str) -> list[tuple[Function, list[int | None]]] | None:
    """The kernels a task of ``name`` runs, each with the call argument behind each of its parameters."""
    fn = program.function(name)
    if fn is None:
        return None
    if fn.kind in ("AIC", "AIV", "InCore"):
        return [(fn, list(range(len(fn.params))))]
    if fn.kind != "Group":
        return None
    group_params = [p.name for p in fn.params]
    out: list[tuple[Function, list[int | None]]] = []
    for s in fn.body:
        if isinstance(s, ExprStmt) and isinstance(s.value, FuncCall):
            k = program.function(s.value.func)
            if k is None or k.kind not in ("AIC", "AIV"):
                return None
            params: list[int | None] = [
                group_params.index(x.id) if isinstance(x, Name) and x.id in group_params else None for x in s.value.args
            ]
            out.append((k, params))
    return out or None


# ---------------------------------------------------------------------------- the kernels' accesses


@dataclass(slots=True)
class _Access:
    kernel: str
    line: int
    kind: str  # "r" | "w"
    offsets: list[Affine]  # over the task symbol and the kernel's loop variables
    extent: list[int] | None  # the window's static shape
    ranges: dict[str, tuple[int, int]]  # each loop variable's first and last value
    sum_of: int | None = None  # a write: the line of the load it adds a term to (the ordered-sum pattern)


def _kernel_accesses(
    k: Function,
    params: list[int | None],
    task_scalars: dict[int, Affine],
    out: dict[int, list[_Access]],
    returned: set[int],
    uses: list[int],
) -> str | None:
    """Every read and write ``k`` makes of a task argument, appended to ``out`` by argument index, the
    arguments it returns (a view of) added to ``returned``, and the lines using a scalar that moves
    with the task other than as a window's offset to ``uses``. A reason to decline the loop, or None."""
    env: dict[str, Affine] = {}
    movers: set[str] = set()  # the scalars whose value moves with the task
    buffer: dict[str, int] = {}  # kernel name -> the call argument it is (a view of)
    for p, arg in zip(k.params, params, strict=False):
        if arg is None:
            continue
        if arg in task_scalars:
            env[p.name] = task_scalars[arg]
            if task_scalars[arg].get(_TASK, 0):
                movers.add(p.name)
        else:
            buffer[p.name] = arg
    types: dict[str, object] = {}
    loads: dict[str, tuple[int, _Access]] = {}  # the tile a load of a task's buffer made -> (that buffer, the load)
    adds: dict[str, dict[int, int]] = {}  # ``s = tile.add(loaded, x)``: s -> {the loaded buffer: the load's line}
    ranges: dict[str, tuple[int, int]] = {}

    def offsets_of(e: Expr) -> list[Affine] | None:
        items = e.items if isinstance(e, ListExpr | TupleExpr) else None
        if items is None:
            return None
        got: list[Affine] = []
        for x in items:
            a = _affine(x, env)
            if a is None:
                return None
            got.append(a)
        return got

    def shape_of(name: str) -> list[int] | None:
        t = types.get(name)
        return fold_ints(t.shape) if isinstance(t, TileType | TensorType) else None

    def value_shape(e: Expr) -> list[int] | None:
        """The static shape of a value written: a name's declared shape, or an elementwise op's (a
        cast, an add of two tiles of one shape, ...: what the compiler nests before ConvertToSSA)."""
        if isinstance(e, Name):
            return shape_of(e.id)
        if not isinstance(e, OpCall) or e.op.split(".", 1)[-1] not in _SHAPE_KEEPING or not e.args:
            return None
        shapes = [value_shape(a) for a in e.args if isinstance(a, Name | OpCall)]
        if not shapes or any(x is None or x != shapes[0] for x in shapes):
            return None
        return shapes[0]

    def walk(body: list[Stmt]) -> str | None:
        for s in body:
            if isinstance(s, For):
                rng = loop_trips(s)
                if rng is None:
                    return f"a loop of kernel '{k.name}' (line {s.span.line}) has bounds that are not constants"
                if s.var is not None:
                    env[s.var.name] = {s.var.name: 1}
                    ranges[s.var.name] = (rng.start, rng[-1] if rng else rng.start)
                for t, init in zip(s.iter_args, s.init_values, strict=False):
                    if isinstance(init, Name) and init.id in buffer:
                        buffer[t.name] = buffer[init.id]
                why = walk(s.body)
                if why:
                    return why
                continue
            if isinstance(s, If):
                why = walk(s.then) or walk(s.orelse)
                if why:
                    return why
                continue
            if isinstance(s, While):
                return f"kernel '{k.name}' has a while loop (line {s.span.line})"
            if isinstance(s, Scope):
                why = walk(s.body)
                if why:
                    return why
                continue
            why = statement(s)
            if why:
                return why
        return None

    def moving(e: Expr) -> bool:
        """``e`` names a scalar whose value moves with the task."""
        return bool(movers) and any(isinstance(x, Name) and x.id in movers for x in walk_expr(e))

    def statement(s: Stmt) -> str | None:
        if isinstance(s, Assign):
            types[s.target.name] = s.target.type
            v = s.value
            if not isinstance(v, OpCall | FuncCall) and _affine(v, env) is None and moving(v):
                uses.append(s.span.line)  # derived from the task's scalar, not affinely
            if isinstance(v, Name) and v.id in buffer:
                buffer[s.target.name] = buffer[v.id]
                return None
            if isinstance(v, OpCall) and v.op in _LANE_OPS:
                env[s.target.name] = {s.target.name: 1}  # the AIV lane: 0 or 1
                ranges[s.target.name] = (0, 1)
            elif isinstance(v, OpCall) and v.op in ("tile.add", "tensor.add") and len(v.args) == 2:
                adds[s.target.name] = {loads[x.id][0]: loads[x.id][1].line for x in v.args if isinstance(x, Name) and x.id in loads}
            elif not isinstance(v, OpCall | FuncCall):
                a = _affine(v, env)
                if a is not None:
                    env[s.target.name] = a
                    if a.get(_TASK, 0):
                        movers.add(s.target.name)
        if isinstance(s, Return):
            returned.update(buffer[v.id] for v in s.values if isinstance(v, Name) and v.id in buffer)
        if isinstance(s, Yield | Unpack):
            for t in s.targets:
                types[t.name] = t.type
            for t, v in zip(s.targets, s.values if isinstance(s, Yield) else [], strict=False):
                if isinstance(v, Name) and v.id in buffer:
                    buffer[t.name] = buffer[v.id]
        for sub in stmt_subexprs(s):
            if isinstance(sub, FuncCall):
                return f"kernel '{k.name}' calls '{sub.func}' (line {sub.span.line})"
            if not isinstance(sub, OpCall):
                continue
            spec = _READS.get(sub.op) or _WRITES.get(sub.op) if len(sub.args) >= 3 else None
            at = spec[1] if spec is not None else -1  # the offsets: a scalar moving with the task may be one
            # (an op nested as an argument is a subexpression of its own, looked at by itself)
            if any(moving(x) for i, x in enumerate(sub.args) if i != at and not isinstance(x, OpCall)) or any(
                moving(x) for x in sub.kwargs.values() if not isinstance(x, OpCall)
            ):
                uses.append(sub.span.line)
            touched = [x.id for x in sub.args if isinstance(x, Name) and x.id in buffer]
            touched += [x.id for x in sub.kwargs.values() if isinstance(x, Name) and x.id in buffer]
            if not touched or sub.op in _INERT:
                continue
            line = sub.span.line
            rd = _READS.get(sub.op) if len(sub.args) >= 3 else None
            wr = _WRITES.get(sub.op) if len(sub.args) >= 3 else None
            src_name = sub.args[rd[0]] if rd is not None else None
            dst_name = sub.args[wr[0]] if wr is not None else None
            if rd is not None and isinstance(src_name, Name) and src_name.id in buffer:
                offs = offsets_of(sub.args[rd[1]])
                if offs is None:
                    return f"the window of {sub.op} (line {line}) is not affine in the task's scalars and the kernel's loops"
                window = sub.args[rd[2]]
                extent = fold_ints(window.items) if isinstance(window, ListExpr | TupleExpr) else None
                acc = _Access(k.name, line, "r", offs, extent, dict(ranges))
                out.setdefault(buffer[src_name.id], []).append(acc)
                if isinstance(s, Assign) and s.value is sub:
                    loads[s.target.name] = (buffer[src_name.id], acc)
            elif wr is not None and isinstance(dst_name, Name) and dst_name.id in buffer:
                if "atomic" in sub.kwargs:
                    return f"{sub.op} (line {line}) is atomic"
                offs = offsets_of(sub.args[wr[1]])
                if offs is None:
                    return f"the window of {sub.op} (line {line}) is not affine in the task's scalars and the kernel's loops"
                src = sub.args[wr[2]]
                extent = value_shape(src)
                dest = buffer[dst_name.id]
                summed = adds.get(src.id, {}).get(dest) if isinstance(src, Name) else None
                acc = _Access(k.name, line, "w", offs, extent, dict(ranges), summed)
                out.setdefault(dest, []).append(acc)
                if isinstance(s, Assign):
                    buffer[s.target.name] = dest
            else:
                return f"{sub.op} (line {line}) takes '{touched[0]}', a task's buffer, in a way this plan does not follow"
        return None

    return walk(k.body)


def _role(arg: TaskArg, accesses: list[_Access]) -> str:
    """The role of a task's tensor argument from every access its kernels make ("!reason": declined)."""
    writes = [a for a in accesses if a.kind == "w"]
    reads = [a for a in accesses if a.kind == "r"]
    name = arg.name or f"argument {arg.index + 1}"
    if not writes:
        return INPUT
    if any(a.extent is None for a in writes):
        return f"!a write of '{name}' has a window whose shape is not a constant"
    moving = any(a.offsets[d].get(_TASK, 0) for a in writes for d in range(len(a.offsets)))
    if not moving:
        # every task writes the same windows: only the ordered sum (read, add, write back) is known
        loaded = {a.line: a for a in reads}
        for w in writes:
            r = loaded.get(w.sum_of) if w.sum_of is not None else None
            if r is None or r.offsets != w.offsets or r.extent != w.extent:
                return f"!every task writes the same window of '{name}' (line {w.line}), not as an ordered sum"
        if len(reads) != len(writes):
            return f"!the tasks read '{name}' besides adding to it"
        return ORDERED_SUM
    if reads:
        return f"!the tasks read '{name}' (line {reads[0].line}), which they write"
    for d in range(len(writes[0].offsets)):
        steps = {a.offsets[d].get(_TASK, 0) for a in writes}
        if len(steps) != 1 or not next(iter(steps)) or len({_symbolic(a, d) for a in writes}) != 1:
            continue
        step = abs(next(iter(steps)))
        lo = min(_low(a, d) for a in writes)
        hi = max(_high(a, d) for a in writes)
        if hi - lo <= step:
            return OWN_WINDOW
    return f"!the tasks' windows of '{name}' may overlap"


def _symbolic(a: _Access, d: int) -> tuple[tuple[str, int], ...]:
    """The part of a window's offset along ``d`` that is the same in every task and every iteration
    of the kernel's loops but not known here (an enclosing loop's variable): windows are compared
    only where it is the same."""
    return tuple(sorted((v, c) for v, c in a.offsets[d].items() if v.startswith(_OUTER)))


def _low(a: _Access, d: int) -> int:
    return a.offsets[d].get("", 0) + sum(min(c * a.ranges[v][0], c * a.ranges[v][1]) for v, c in a.offsets[d].items() if v in a.ranges)


def _high(a: _Access, d: int) -> int:
    assert a.extent is not None
    top = a.offsets[d].get("", 0) + sum(max(c * a.ranges[v][0], c * a.ranges[v][1]) for v, c in a.offsets[d].items() if v in a.ranges)
    return top + a.extent[d]
