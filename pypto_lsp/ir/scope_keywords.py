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
from .keyword_values import KEYWORD_WORDS, fits
from .model import SCOPE_METADATA, Scope

KEYWORDS: dict[str, frozenset[str]] = {
    "at": frozenset({"level", "role", "allow_early_resolve", "name_hint", "windowize", *SCOPE_METADATA}),
    "spmd": frozenset({"core_num", "sync_start", "name_hint", "allow_early_resolve", "predicate", *SCOPE_METADATA}),
    "cluster": frozenset({"name_hint"}),
    "scope": frozenset({"mode"}),
}
# the kind of each keyword's value (:mod:`.keyword_values`); the metadata lists take any items
_KINDS: dict[str, str] = {
    "level": "level",
    "role": "role",
    "mode": "scope_mode",
    "sync_start": "bool",
    "allow_early_resolve": "bool",
    "windowize": "bool",
    "name_hint": "string",
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
        if want is not None and fits(want, v) is False:
            out.append(
                D.warning(
                    v.span,
                    "wrong-keyword",
                    f"pl.{s.kind} takes {KEYWORD_WORDS[want]} as {k}=",
                    "PyPTO's DSL would not read this header; the run ignores it",
                )
            )
    return out
