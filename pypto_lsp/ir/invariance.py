"""Whether every call of a function runs the same statements in the same order.

A kernel called many times (the SPMD blocks of an orchestration loop, one group invocation per
output chunk) usually differs between calls only in the offsets of its windows: its branches test
constants, loop variables and the AIV lane, and its loops have constant bounds. Then every call on
one core runs the same sequence of statements, so it writes and reads the same placed tiles in the
same order — what the memory model's hazard checks depend on (placements are static).
:class:`pypto_lsp.exec.memory.Session` uses this to check such a kernel's placements on its first
call only (a clean first call proves the others clean).

Conservative: a condition or bound that reads a parameter, a value an op computed (other than the
lane), a loop-carried value or an unpacked result makes the answer False, as does a ``while``.
"""

from __future__ import annotations

from .model import (
    Assign,
    BinOp,
    Const,
    DTypeRef,
    EnumRef,
    Expr,
    For,
    Function,
    If,
    Intrinsic,
    ListExpr,
    Name,
    OpCall,
    Scope,
    TupleExpr,
    UnaryOp,
    Unpack,
    While,
    Yield,
    walk_expr,
)

__all__ = ["same_path_every_call"]

# ops whose value is the same on every call on one core
_PER_CORE_OPS = frozenset({"tile.get_subblock_idx"})
_VARIANT = object()  # a binding whose value may differ between calls


def _invariant(e: Expr | None, names: set[str]) -> bool:
    if e is None:
        return True
    for x in walk_expr(e):
        t = type(x)
        if t is Name:
            if x.id not in names:  # type: ignore[union-attr]
                return False
        elif t is OpCall:
            if x.op not in _PER_CORE_OPS:  # type: ignore[union-attr]
                return False
        elif t not in (Const, DTypeRef, EnumRef, BinOp, UnaryOp, Intrinsic, ListExpr, TupleExpr):
            return False
    return True


def same_path_every_call(fn: Function) -> bool:
    """True when every branch condition and loop bound of ``fn`` depends only on constants, the
    AIV lane and the variables of such loops (so every call on one core takes the same path)."""
    bindings: dict[str, list[object]] = {}
    tests: list[Expr | None] = []
    for s in fn.statements():
        if isinstance(s, While):
            return False
        if isinstance(s, Assign):
            bindings.setdefault(s.target.name, []).append(s.value)
        elif isinstance(s, For):
            bounds = [s.start, s.stop, s.step]
            tests += bounds
            if s.var is not None:
                bindings.setdefault(s.var.name, []).extend(bounds)
            for t in s.iter_args:
                bindings.setdefault(t.name, []).append(_VARIANT)
        elif isinstance(s, If):
            tests.append(s.cond)
        elif isinstance(s, Yield):
            for t, v in zip(s.targets, s.values, strict=False):
                bindings.setdefault(t.name, []).append(v)
        elif isinstance(s, Unpack):
            for t in s.targets:
                bindings.setdefault(t.name, []).append(_VARIANT)
        elif isinstance(s, Scope):
            tests += s.args
            tests += s.kwargs.values()
            if s.as_name is not None:
                bindings.setdefault(s.as_name.name, []).append(_VARIANT)
    names = {n for n, srcs in bindings.items() if _VARIANT not in srcs}
    changed = True
    while changed:  # drop the names bound from a variant value until none is left
        changed = False
        for n in list(names):
            if not all(_invariant(e, names) for e in bindings[n]):  # type: ignore[arg-type]
                names.discard(n)
                changed = True
    return all(_invariant(e, names) for e in tests)
