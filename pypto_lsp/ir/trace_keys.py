"""What traced code tells the localisation hooks about a statement (no torch here).

:mod:`pypto_lsp.exec.codegen` (``trace=True``) passes each traced value its operands (the
IR names its expression reads), marks a tensor carried by a loop (its state depends on how
writes into it are cut, so only what it depends on is passed on), and names each loop and
``if`` so that a pass's copy can be paired with the previous pass's.
"""

from __future__ import annotations

from .model import Expr, For, Function, If, Name, TensorType, Type, While, trailing_yield, walk_expr

__all__ = ["operands", "carried_types", "branch_key", "is_tensor"]


def operands(defined: set[str], *exprs: Expr | None) -> list[str]:
    """The names of ``defined`` that ``exprs`` read, in order, once each."""
    seen: list[str] = []
    for e in exprs:
        if e is None:
            continue
        for x in walk_expr(e):
            if isinstance(x, Name) and x.id in defined and x.id not in seen:
                seen.append(x.id)
    return seen


def carried_types(fn: Function, types: dict[str, Type]) -> dict[str, Type]:
    """Types of ``fn``'s unannotated iter_args: their loop result's, else their init value's."""
    out: dict[str, Type] = {}
    for s in fn.statements():
        if not isinstance(s, For | While):
            continue
        tail = trailing_yield(s.body)
        for i, a in enumerate(s.iter_args):
            if a.type is not None:
                continue
            t = tail.targets[i].type if tail is not None and i < len(tail.targets) else None
            if t is not None:
                out[a.name] = t
                continue
            init = s.init_values[i] if i < len(s.init_values) else None
            if isinstance(init, Name) and init.id in types:
                out[a.name] = types[init.id]
    return out


def is_tensor(t: Type | None) -> bool:
    return isinstance(t, TensorType)


def branch_key(s: If) -> str | None:
    """An if's name across passes: its first result, else the first name its condition reads."""
    y = trailing_yield(s.then)
    if y is not None and y.targets:
        return y.targets[0].name
    for x in walk_expr(s.cond):
        if isinstance(x, Name):
            return "if " + x.id
    return None
