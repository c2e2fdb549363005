"""The runtime tasks of a program, read from its orchestration IR (no torch).

Each call an Orchestration function makes to a function that is not itself an Orchestration
function (a kernel, a Group, an SPMD wrapper) is one task of the device runtime; calls inside a
Group or SPMD wrapper are not (PyPTO's orchestration codegen submits one task per orchestration
call, hw-native-sys/simpler runs it). A :class:`TaskSite` is one such call in the text: its line,
the callee, the runtime tag of each argument (``attrs={"arg_directions": [...]}``, written from
``DeriveCallDirections`` on; None before it), whether it sits in a MANUAL scope and which of the
callee's parameters it returns (a task can only be run later than written when its result is one of
its arguments). :mod:`pypto_lsp.exec.sanitizer` turns them into the runtime's dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Const, DictExpr, EnumRef, FuncCall, Function, ListExpr, Name, Program, Return, Scope, Stmt

__all__ = ["TaskSite", "task_sites", "INPUT", "OUTPUT", "INOUT", "OUTPUT_EXISTING", "NO_DEP", "SCALAR", "is_task_call"]

INPUT = "input"
OUTPUT = "output"
INOUT = "inout"
OUTPUT_EXISTING = "output_existing"
NO_DEP = "no_dep"
SCALAR = "scalar"
DIRECTIONS = (INPUT, OUTPUT, INOUT, OUTPUT_EXISTING, NO_DEP, SCALAR)


@dataclass(slots=True, frozen=True)
class TaskSite:
    index: int
    line: int  # 1-based
    callee: str
    caller: str
    directions: tuple[str, ...] | None  # per argument; None: no arg_directions on the call
    arg_names: tuple[str | None, ...]  # the IR name of each argument (None: not a name)
    returns: tuple[int, ...] | None  # the callee's parameters it returns (None: something else)
    manual: bool = False  # inside ``with pl.scope(mode=pl.ScopeMode.MANUAL)``


def is_task_call(program: Program, caller: Function, call: FuncCall) -> bool:
    callee = program.function(call.func)
    return caller.kind == "Orchestration" and callee is not None and callee.kind != "Orchestration"


def directions_of(call: FuncCall) -> tuple[str, ...] | None:
    attrs = call.kwargs.get("attrs")
    if not isinstance(attrs, DictExpr):
        return None
    for k, v in zip(attrs.keys, attrs.values, strict=False):
        if isinstance(k, Const) and k.value == "arg_directions" and isinstance(v, ListExpr):
            return tuple(x.member if isinstance(x, EnumRef) else "?" for x in v.items)
    return None


def returned_params(fn: Function) -> tuple[int, ...] | None:
    """Which parameters ``fn`` returns, when every return statement returns parameters."""
    names = [p.name for p in fn.params]
    found: tuple[int, ...] | None = None
    for s in fn.statements():
        if isinstance(s, Return):
            idx: list[int] = []
            for v in s.values:
                if not (isinstance(v, Name) and v.id in names):
                    return None
                idx.append(names.index(v.id))
            if found is not None and tuple(idx) != found:
                return None
            found = tuple(idx)
    return found


def _manual(scope: Scope) -> bool:
    mode = scope.kwargs.get("mode")
    return isinstance(mode, EnumRef) and mode.member.upper() == "MANUAL"


def task_sites(program: Program) -> list[TaskSite]:
    """Every task call of the program's Orchestration functions, in text order; ``index`` is the position."""
    return [site for _call, site in _visit(program)]


def sites_by_call(program: Program) -> dict[int, TaskSite]:
    """``id(call)`` of each task call -> its site (what codegen looks up)."""
    return {id(call): site for call, site in _visit(program)}


# the last program's task calls: the lowering, the code generator and the sanitizer's readings ask
# for the same program's one after the other (the IR is never changed once parsed; sites are frozen)
_LAST: tuple[Program, list[tuple[FuncCall, TaskSite]]] | None = None


def _visit(program: Program) -> list[tuple[FuncCall, TaskSite]]:
    global _LAST
    last = _LAST
    if last is not None and last[0] is program:
        return last[1]
    out = _walk(program)
    _LAST = (program, out)
    return out


def _walk(program: Program) -> list[tuple[FuncCall, TaskSite]]:
    out: list[tuple[FuncCall, TaskSite]] = []
    returns: dict[str, tuple[int, ...] | None] = {}

    def visit(fn: Function, body: list[Stmt], manual: bool) -> None:
        from .model import For, If, While, stmt_subexprs

        for s in body:
            if isinstance(s, Scope):
                visit(fn, s.body, manual or _manual(s))
                continue
            for sub in stmt_subexprs(s):
                if isinstance(sub, FuncCall) and is_task_call(program, fn, sub):
                    callee = program.function(sub.func)
                    assert callee is not None
                    if sub.func not in returns:
                        returns[sub.func] = returned_params(callee)
                    out.append(
                        (
                            sub,
                            TaskSite(
                                len(out),
                                sub.span.line,
                                sub.func,
                                fn.name,
                                directions_of(sub),
                                tuple(a.id if isinstance(a, Name) else None for a in sub.args),
                                returns[sub.func],
                                manual,
                            ),
                        )
                    )
            if isinstance(s, For | While):
                visit(fn, s.body, manual)
            elif isinstance(s, If):
                visit(fn, s.then, manual)
                visit(fn, s.orelse, manual)

    for fn in program.functions:
        if fn.kind == "Orchestration":
            visit(fn, fn.body, False)
    return out


def skipped_results(fn: Function) -> tuple[int, ...]:
    """The arguments a launch of ``fn`` leaves as its results when it is not dispatched (a false
    ``predicate=``: pypto ``docs/en/dev/language/02-manual_dependencies.md``, "retired inline"): the
    parameters it returns when it returns parameters, else its ``Out``/``InOut`` parameters in order
    (a kernel's results are the global tensors it writes into)."""
    ret = returned_params(fn)
    if ret is not None:
        return ret
    outs = tuple(i for i, p in enumerate(fn.params) if p.direction in ("out", "inout"))
    return outs[: max(1, len(fn.returns))] if fn.returns else outs


def reaches_syncall(program: Program) -> frozenset[str]:
    """The functions whose run can meet ``system.syncall`` (directly or through the functions they
    call): an SPMD launch of one runs its blocks so that they meet at the barrier (exec.spmd)."""
    from .model import OpCall, stmt_subexprs

    if program.source and "syncall" not in program.source:
        return frozenset()  # no barrier anywhere: the walk below would find none
    calls: dict[str, set[str]] = {}
    found: set[str] = set()
    for fn in program.functions:
        callees: set[str] = set()
        for s in fn.statements():
            for e in stmt_subexprs(s):
                if isinstance(e, OpCall) and e.op == "system.syncall":
                    found.add(fn.name)
                elif isinstance(e, FuncCall):
                    callees.add(e.func)
        calls[fn.name] = callees
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            if name not in found and callees & found:
                found.add(name)
                changed = True
    return frozenset(found)
