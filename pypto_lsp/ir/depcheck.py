"""Task dependencies, from the IR alone (no torch): ``deps=[...]`` entries that are no task id, and a
task that depends on itself.

``pl.submit(self.k, ..., deps=[t1, ...])`` and ``pl.system.task_dummy(deps=[...])`` name task ids:
what an earlier ``pl.submit`` returned beside its result (a ``pl.Scalar[pl.TASK_ID]``) or what an
earlier ``task_dummy`` returned (PyPTO ``docs/en/dev/language/02-manual_dependencies.md``; the
runtime waits for each id's task, simpler ``runtime/pto_orchestrator.cpp``). An entry that is a
literal (``-1``, ``'t1'``), a tensor or a tile names no task: the runtime would wait on garbage. An
entry defined by the very statement that submits (``c1, t2 = pl.submit(..., deps=[t2])``,
``f1 = pl.system.task_dummy(deps=[f1])``) asks the task to wait for itself: it never starts (and
the simulator has no value for the name yet). Each is an error on its line (code ``task-deps``).
"""

from __future__ import annotations

from . import diagnostics as D
from .model import (
    Assign,
    Const,
    Expr,
    FuncCall,
    ListExpr,
    Name,
    OpCall,
    Program,
    TensorType,
    TileType,
    TupleExpr,
    UnaryOp,
    Unpack,
)

__all__ = ["check_deps"]


def check_deps(program: Program) -> list[D.Diagnostic]:
    out: list[D.Diagnostic] = []
    for fn in program.functions:
        kinds: dict[str, str] = {p.name: _kind(p.type) for p in fn.params}
        for s in fn.statements():
            if isinstance(s, Assign | Unpack):
                targets = [s.target] if isinstance(s, Assign) else s.targets
                deps = _deps_of(s.value)
                if deps is not None:
                    out.extend(_check(deps, {t.name for t in targets}, kinds))
                for t in targets:
                    kinds[t.name] = _kind(t.type)
            else:
                from .model import stmt_subexprs

                for x in stmt_subexprs(s):
                    deps = _deps_of(x)
                    if deps is not None:
                        out.extend(_check(deps, set(), kinds))
    return out


def _kind(t: object) -> str:
    if isinstance(t, TensorType):
        return "tensor"
    if isinstance(t, TileType):
        return "tile"
    return ""


def _deps_of(e: Expr) -> Expr | None:
    if isinstance(e, FuncCall) and e.submit is not None:
        return e.kwargs.get("deps")
    if isinstance(e, OpCall) and e.op == "system.task_dummy":
        return e.kwargs.get("deps")
    return None


def _check(deps: Expr, defined_here: set[str], kinds: dict[str, str]) -> list[D.Diagnostic]:
    items = deps.items if isinstance(deps, ListExpr | TupleExpr) else [deps]
    out: list[D.Diagnostic] = []
    for it in items:
        why = None
        if isinstance(it, Const) or (isinstance(it, UnaryOp) and isinstance(it.operand, Const)):
            text = repr(it.value) if isinstance(it, Const) else f"-{it.operand.value!r}"  # type: ignore[union-attr]
            why = f"{text} is a literal, not a task id"
        elif isinstance(it, Name) and it.id in defined_here:
            why = f"'{it.id}' is the id of this very task: it would wait for itself and never start"
        elif isinstance(it, Name) and kinds.get(it.id) in ("tensor", "tile"):
            why = f"'{it.id}' is a {kinds[it.id]}, not a task id"
        if why is not None:
            out.append(
                D.error(
                    it.span,
                    "task-deps",
                    f"deps entry {why}",
                    "deps=[...] names task ids: what an earlier pl.submit returned beside its result, or an earlier system.task_dummy",
                )
            )
    return out
