"""The keywords of a ``with pl.at(...)``/``pl.spmd(...)``/``pl.cluster(...)``/``pl.scope(...)``
header against those PyPTO's DSL takes (``python/pypto/language/dsl_api.py``: ``at``, ``spmd``,
``cluster``; ``pl.scope(mode=...)`` as its printer writes a runtime scope), and the value each
takes: a level, a role, a scope mode, a flag, a name.

A scope is transparent to the numbers (an SPMD scope's block count aside, which ``check`` holds
to a positive integer), so a keyword PyPTO would reject at parse, or a value of another kind, does
not change a run: it is a warning, found before anything runs, on the keyword's value.
"""

from __future__ import annotations

from . import diagnostics as D
from .model import BinOp, Const, EnumRef, Expr, FuncCall, Intrinsic, Name, OpCall, Scope, Subscript

_RANKED = ("optimizations", "deps", "no_dep_args", "dumps")  # lists of scope metadata, any items
KEYWORDS: dict[str, frozenset[str]] = {
    "at": frozenset({"level", "role", "allow_early_resolve", "name_hint", "windowize", *_RANKED}),
    "spmd": frozenset({"core_num", "sync_start", "name_hint", "allow_early_resolve", "predicate", *_RANKED}),
    "cluster": frozenset({"name_hint"}),
    "scope": frozenset({"mode"}),
}
# the kind each keyword's value takes: an enum (by its middle segment), "bool" or "string"
_KINDS: dict[str, tuple[str, ...]] = {
    "level": ("Level",),
    "role": ("Role",),
    "mode": ("ScopeMode",),
    "sync_start": ("bool",),
    "allow_early_resolve": ("bool",),
    "windowize": ("bool",),
    "name_hint": ("string",),
}
_WORDS = {
    "Level": "a level (pl.Level.X)",
    "Role": "a role (pl.Role.X)",
    "ScopeMode": "a scope mode (pl.ScopeMode.X)",
    "bool": "True or False",
    "string": "a string",
}


def check_scope(s: Scope) -> list[D.Diagnostic]:
    """Warnings for ``s``'s header: keywords its kind does not take, values of another kind."""
    accepted = KEYWORDS.get(s.kind)
    if accepted is None:  # pl.incore()/pl.auto_incore(): older spellings, taken as they are
        return []
    out: list[D.Diagnostic] = []
    for k, v in s.kwargs.items():
        if k not in accepted:
            out.append(
                D.warning(v.span, "unknown-keyword", f"pl.{s.kind} has no keyword '{k}'", f"accepted: {', '.join(sorted(accepted))}")
            )
            continue
        want = _KINDS.get(k)
        if want is not None and not _fits(want, v):
            out.append(
                D.warning(
                    v.span,
                    "wrong-keyword",
                    f"pl.{s.kind} takes {' or '.join(_WORDS[w] for w in want)} as {k}=",
                    "PyPTO's DSL would not read this header; the run ignores it",
                )
            )
    return out


def _fits(want: tuple[str, ...], v: Expr) -> bool:
    if isinstance(v, Name | BinOp | Subscript | OpCall | FuncCall | Intrinsic):
        return True  # a value only the run knows
    if isinstance(v, EnumRef):
        return v.enum in want
    if isinstance(v, Const):
        if isinstance(v.value, bool) or v.value in (0, 1):
            return "bool" in want
        return isinstance(v.value, str) and "string" in want
    return False
