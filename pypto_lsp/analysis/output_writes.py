"""Which statements write each output of the entry, from the IR alone (no torch): where a failing
output's diagnostic goes."""

from __future__ import annotations

from ..ir.catalogue import WRITES_INTO
from ..ir.model import (
    Assign,
    For,
    FuncCall,
    Function,
    Name,
    OpCall,
    Program,
    Return,
    Span,
    While,
    Yield,
    stmt_subexprs,
)

__all__ = ["output_writes"]


def output_writes(program: Program, entry: Function | None) -> dict[str, list[Span]]:
    """For each output parameter of the entry, the statements that write it.

    A numeric mismatch is reported there: the store/assemble into the parameter
    (followed through SSA names and through calls that pass it on), else the
    entry's return.
    """
    out: dict[str, list[Span]] = {}
    if entry is None:
        return out
    writers = tuple(sorted(WRITES_INTO))
    for p in entry.params:
        if p.direction == "in":
            continue
        spans: list[Span] = []
        _collect_writes(program, entry, p.name, spans, writers, depth=0, seen=set())
        if not spans:
            for s in entry.statements():
                if isinstance(s, Return):
                    spans.append(s.span)
        out[p.name] = spans
    return out


def _collect_writes(
    program: Program, fn: Function, name: str, spans: list[Span], writers: tuple[str, ...], depth: int, seen: set[tuple[str, str]]
) -> None:
    if depth > 8 or (fn.name, name) in seen:
        return
    seen.add((fn.name, name))
    aliases = {name}
    changed = True
    stmts = list(fn.statements())
    # names that hold (a view of) the parameter: SSA renames, iter_args, yields
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, For | While):
                for t, v in zip(s.iter_args, s.init_values, strict=False):
                    if isinstance(v, Name) and v.id in aliases and t.name not in aliases:
                        aliases.add(t.name)
                        changed = True
            if isinstance(s, Assign):
                v = s.value
                if (
                    (isinstance(v, Name) and v.id in aliases)
                    or (isinstance(v, OpCall) and v.op in writers and _written_name(v) in aliases)
                    or (isinstance(v, FuncCall) and any(isinstance(a, Name) and a.id in aliases for a in v.args))
                ):
                    if s.target.name not in aliases:
                        aliases.add(s.target.name)
                        changed = True
            if isinstance(s, Yield):
                for t, v in zip(s.targets, s.values, strict=False):
                    if isinstance(v, Name) and v.id in aliases and t.name not in aliases:
                        aliases.add(t.name)
                        changed = True
    for s in stmts:
        for sub in stmt_subexprs(s):
            if isinstance(sub, OpCall) and sub.op in writers and _written_name(sub) in aliases:
                spans.append(s.span)
            elif isinstance(sub, FuncCall):
                callee = program.function(sub.func)
                if callee is None:
                    continue
                targets = [callee]
                for suffix in ("_aic", "_aiv"):
                    member = program.function(sub.func + suffix)
                    if member is not None and callee.kind == "Group":
                        targets.append(member)
                for i, a in enumerate(sub.args):
                    if isinstance(a, Name) and a.id in aliases:
                        for c in targets:
                            if i < len(c.params):
                                _collect_writes(program, c, c.params[i].name, spans, writers, depth + 1, seen)


def _written_name(op: OpCall) -> str | None:
    idx = 2 if op.op == "tile.store" else 0
    if len(op.args) > idx and isinstance(op.args[idx], Name):
        a = op.args[idx]
        assert isinstance(a, Name)
        return a.id
    return None
