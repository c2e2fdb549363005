"""The memory map: each core's on-chip memory over statement order, as plain JSON data.

One *strip* per function (a core's kernel) and memory space; in it one *bar* per placed
value (:class:`pypto_lsp.ir.memory.Site`): x from the line that writes it to the last line
that reads it (its live range), y its bytes. Pipe rings (``reserve_buffer``) are bars over
the whole kernel, popped tiles bars over their ring. Two values whose bytes overlap while
both are live are an *overlap* (red in the picture): the earlier value (the *victim*) is
still to be read when the later one (the *writer*) is written on its bytes.

Live ranges are the usual linear intervals of SSA code: from the defining statement to the
last use, a use inside a loop that does not contain the definition counting as a use at the
loop's end. Loop-carried values are followed through their phis: an ``init_values`` entry
lives on as the iter_arg, a yielded value as the iter_arg of the next iteration and as the
loop's result. A value written on the statement where the other is last read (an in-place
op, the hand-over of a loop-carried accumulator) is not an overlap; neither is a view op
(reshape, ...) placed inside its operand's bytes.

Findings from a run (``FileResult.memory``'s hazards) are attached to the strip of their
line, so the picture shows what the sanitizer saw next to what the placement implies. No
torch here: the server builds this from the parsed text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .memory import VIEW_OPS, Finding, MemoryPlan, plan_program
from .model import (
    Assign,
    For,
    Function,
    If,
    Name,
    OpCall,
    Program,
    Scope,
    Stmt,
    Unpack,
    While,
    Yield,
    stmt_subexprs,
    trailing_yield,
)

__all__ = ["memory_map", "memory_map_text"]


@dataclass(slots=True)
class _Loop:
    start: int
    end: int


# where a statement sits: the loops around it and the if-branches it is in ((id(If), 0|1), ...)
_Where = tuple[tuple[int, ...], tuple[tuple[int, int], ...]]


@dataclass(slots=True)
class _Name:
    """A name of a function: where it is defined and used."""

    line: int
    where: _Where
    uses: list[tuple[int, _Where]] = field(default_factory=list)
    end: int = 0


def _exclusive(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    """In the two branches of one ``if``: no path from one to the other without a loop's back edge."""
    if not a or not b:
        return False
    da = dict(a)
    return any(k in da and da[k] != v for k, v in b)


def _walk(
    body: list[Stmt], where: _Where, out: list[tuple[Stmt, _Where, Stmt | None]], spans: dict[int, _Loop], parent: Stmt | None
) -> None:
    loops, branches = where
    for s in body:
        out.append((s, where, parent))
        if isinstance(s, For | While):
            last = _last_line(s.body, s.span.line)
            spans[id(s)] = _Loop(s.span.line, max(last, s.span.end_line if s.span.end_line >= s.span.line else last))
            _walk(s.body, ((*loops, id(s)), branches), out, spans, s)
        elif isinstance(s, Scope):
            _walk(s.body, where, out, spans, parent)
        elif isinstance(s, If):
            _walk(s.then, (loops, (*branches, (id(s), 0))), out, spans, s)
            _walk(s.orelse, (loops, (*branches, (id(s), 1))), out, spans, s)


def _last_line(body: list[Stmt], default: int) -> int:
    last = default
    for s in body:
        last = max(last, s.span.line, s.span.end_line)
    return last


class _Function:
    """Def-use of one function's names, with the loops and if-branches around each."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.order: list[tuple[Stmt, _Where, Stmt | None]] = []
        self.loops: dict[int, _Loop] = {}
        _walk(fn.body, ((), ()), self.order, self.loops, None)
        self.names: dict[str, _Name] = {}
        # phi edges: name -> names that carry its value on (iter_arg of an init, iter_arg and result of a yield)
        self.flows: dict[str, list[str]] = {}
        self.iter_arg_of: dict[str, int] = {}  # iter_arg -> id of its loop
        for s, where, parent in self.order:
            line = s.span.line
            loops, branches = where
            if isinstance(s, Assign):
                self._define(s.target.name, line, where)
            elif isinstance(s, Unpack):
                for t in s.targets:
                    self._define(t.name, line, where)
            elif isinstance(s, For | While):
                inner = ((*loops, id(s)), branches)
                if isinstance(s, For) and s.var is not None:
                    self._define(s.var.name, line, inner)
                for ia in s.iter_args:
                    self._define(ia.name, line, inner)
                    self.iter_arg_of[ia.name] = id(s)
                for ia, iv in zip(s.iter_args, s.init_values, strict=False):
                    if isinstance(iv, Name):
                        self.flows.setdefault(iv.id, []).append(ia.name)
                y = trailing_yield(s.body)
                if y is not None:
                    for k, v in enumerate(y.values):
                        if isinstance(v, Name) and k < len(s.iter_args):
                            self.flows.setdefault(v.id, []).append(s.iter_args[k].name)
            elif isinstance(s, Yield):
                # the results of the loop / if around it: defined where that statement is
                # (at the end of that statement: the merge point of its branches / after its last trip)
                rline = line
                if isinstance(parent, For | While):
                    outer: _Where = (loops[:-1], branches)
                    rline = self.loops[id(parent)].end
                elif isinstance(parent, If):
                    outer = (loops, branches[:-1])
                    rline = _last_line(parent.orelse, _last_line(parent.then, line))
                else:
                    outer = where
                for t in s.targets:
                    self._define(t.name, rline, outer)
                for k, v in enumerate(s.values):
                    if isinstance(v, Name) and k < len(s.targets):
                        self.flows.setdefault(v.id, []).append(s.targets[k].name)
            for x in stmt_subexprs(s):
                if isinstance(x, Name):
                    n = self.names.get(x.id)
                    if n is not None:
                        n.uses.append((line, where))
        for n in self.names.values():
            end = n.line
            for line, (loops, _b) in n.uses:
                u = line
                for lid in loops:
                    if lid not in n.where[0]:
                        u = max(u, self.loops[lid].end)
                end = max(end, u)
            n.end = end

    def _define(self, name: str, line: int, where: _Where) -> None:
        if name not in self.names:
            self.names[name] = _Name(line, where)

    def live_across(self, name: str, line: int, where: _Where) -> bool:
        """``name`` holds a value that is read again after a write at ``line``/``where``.

        Its definition reaches the write, and some use is reached from it: later in the text
        and not in the other branch of an ``if``, or around the back edge of a loop that holds
        both but not the definition. A read on the writing line itself is the write's own
        operand (in place)."""
        n = self.names.get(name)
        if n is None or not n.line < line or _exclusive(n.where[1], where[1]):
            return False
        wloops = set(where[0]) - set(n.where[0])
        for u, (uloops, ubr) in n.uses:
            if u > line and not _exclusive(ubr, where[1]):
                return True
            if wloops and wloops.intersection(uloops):
                return True
        return False

    def reaches(self, owner: str, name: str, where: _Where) -> bool:
        """The value defined as ``owner`` can be what ``name`` holds at ``where``: not in the other
        branch of an ``if``, unless ``name`` carries it around a loop that holds ``where``."""
        o = self.names.get(owner)
        if o is None or not _exclusive(o.where[1], where[1]):
            return True
        loop = self.iter_arg_of.get(name)
        return loop is not None and loop in where[0]

    def carried(self, name: str) -> list[str]:
        """``name`` and every name its value flows on to through phis (transitively)."""
        out, todo = [name], [name]
        while todo:
            for m in self.flows.get(todo.pop(), ()):
                if m not in out:
                    out.append(m)
                    todo.append(m)
        return out


def _site_json(s: Any, end: int, kind: str = "tile") -> dict[str, Any]:
    return {
        "kind": kind,
        "name": s.name,
        "line": s.line,
        "end": end,
        "start": s.start,
        "stop": s.start + s.nbytes,
        "nbytes": s.nbytes,
        "dtype": s.dtype,
        "shape": list(s.shape),
        "memref": s.memref() if hasattr(s, "memref") else "",
        "base": getattr(s, "base", ""),
    }


def memory_map(
    program: Program,
    findings: Iterable[Finding | Mapping[str, Any]] = (),
    *,
    backend: str | None = None,
    plan: MemoryPlan | None = None,
    file: str | None = None,
) -> dict[str, Any]:
    """The memory map of ``program`` (see the module docstring) as JSON-able data.

    ``{"file", "addressed", "placed", "strips": [{"function", "core", "space", "capacity",
    "lines": [first, last], "bars": [...], "overlaps": [...], "findings": [...]}], "counts"}``.
    A bar: ``{"kind": "tile"|"pop"|"pipe", "name", "line", "end", "start", "stop", ...}``
    (lines 1-based and inclusive, bytes ``[start, stop)``). An overlap: ``{"name", "line",
    "end"}`` of the victim, ``{"other_name", "other_line"}`` of its first writer, ``writers``
    (every value written on those bytes while the victim is live, with its line), ``x0``/``x1``
    (lines: from the first writer to the victim's last read) and ``start``/``stop`` (bytes).
    """
    plan = plan if plan is not None else plan_program(program, backend)
    fds = [f if isinstance(f, Finding) else Finding.from_json(dict(f)) for f in findings]
    seen = {(f.kind, f.line, f.name) for f in fds}
    fds += [f for f in plan.findings if (f.kind, f.line, f.name) not in seen]  # the static ones, if not given
    strips: list[dict[str, Any]] = []
    spans: list[tuple[int, int, str]] = []
    for fn in program.functions:
        fp = plan.functions.get(fn.name)
        spans.append((fn.span.line, fn.span.end_line, fn.name))
        if fp is None or (fp.empty and not fp.reserves):
            continue
        strips.extend(_strips(fn, fp, plan))
    by_key = {(s["function"], s["space"]): s for s in strips}
    for f in fds:
        fn_name = next((n for a, b, n in spans if a <= f.line <= b), None)
        st = by_key.get((fn_name, f.space)) if fn_name is not None else None
        if st is not None:
            st["findings"].append(f.to_json())
    bars = sum(len(s["bars"]) for s in strips)
    overlaps = sum(len(s["overlaps"]) for s in strips)
    return {
        "file": file if file is not None else program.filename,
        "addressed": plan.addressed,
        "placed": plan.placed,
        "strips": strips,
        "findings": [f.to_json() for f in fds],
        "counts": {"strips": len(strips), "bars": bars, "overlaps": overlaps, "findings": len(fds)},
    }


def _strips(fn: Function, fp: Any, plan: MemoryPlan) -> Iterator[dict[str, Any]]:
    info = _Function(fn)
    stmts = {id(s): (s, w) for s, w, _p in info.order}
    first, last = fn.span.line, max(fn.span.end_line, _last_line(fn.body, fn.span.line))
    by_space: dict[str, dict[str, Any]] = {}

    def strip(space: str) -> dict[str, Any]:
        st = by_space.get(space)
        if st is None:
            st = by_space[space] = {
                "function": fn.name,
                "core": fp.core,
                "space": space,
                "capacity": plan.capacities.get(space),
                "lines": [first, last],
                "bars": [],
                "overlaps": [],
                "findings": [],
            }
        return st

    # each placed name: its bytes; every name carrying a site's value: that site's bytes too
    sites = sorted(fp.sites.items(), key=lambda kv: (kv[1].line, kv[1].start))
    bytes_of: dict[str, list[tuple[str, int, int, str]]] = {}  # name -> [(space, start, stop, site name)]
    site_end: dict[str, int] = {}
    for _sid, s in sites:
        carried = info.carried(s.name)
        end = max((info.names[m].end for m in carried if m in info.names), default=s.line)
        site_end[s.name] = end
        for m in carried:
            bytes_of.setdefault(m, []).append((s.space, s.start, s.start + s.nbytes, s.name))
    # view ops inside their operand's bytes are that operand seen another way
    group: dict[str, str] = {}

    def root(n: str) -> str:
        while n in group:
            n = group[n]
        return n

    for sid, s in sites:
        st_obj = stmts.get(sid)
        v = st_obj[0].value if st_obj is not None and isinstance(st_obj[0], Assign) else None
        if isinstance(v, OpCall) and v.op in VIEW_OPS and v.args and isinstance(v.args[0], Name):
            for sp, a, b, owner in bytes_of.get(v.args[0].id, ()):
                if sp == s.space and a <= s.start and s.start + s.nbytes <= b and root(owner) != root(s.name):
                    group[root(s.name)] = root(owner)
    for _sid, s in sites:
        strip(s.space)["bars"].append(_site_json(s, site_end[s.name]))
    for r in fp.reserves:
        st = strip(r.space)
        st["bars"].append(
            {
                "kind": "pipe",
                "name": r.name,
                "line": r.line,
                "end": last,
                "start": r.start,
                "stop": r.start + r.size,
                "nbytes": r.size,
                "slots": r.slot_num,
                "slot_size": r.slot_size,
                "direction": r.direction,
                "placed": r.placed,
            }
        )
    for _sid, p in sorted(fp.pops.items(), key=lambda kv: kv[1].line):
        r = fp.reserves[p.reserve]
        n = info.names.get(p.name)
        bar = {
            "kind": "pop",
            "name": p.name,
            "line": p.line,
            "end": n.end if n is not None else p.line,
            "start": r.start,
            "stop": r.start + r.size,
            "nbytes": p.nbytes,
            "dtype": p.dtype,
            "shape": list(p.shape),
            "ring": r.name,
        }
        strip(p.space)["bars"].append(bar)
    # overlaps: a name live across the write of another site on its bytes
    merged: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    for sid, w in sites:
        wl = w.line
        wwhere = stmts[sid][1]
        for m, ranges in bytes_of.items():
            n = info.names.get(m)
            if n is None or not info.live_across(m, wl, wwhere):
                continue
            for sp, a, b, owner in ranges:
                if sp != w.space or owner == w.name or root(owner) == root(w.name) or not info.reaches(owner, m, wwhere):
                    continue
                lo, hi = max(a, w.start), min(b, w.start + w.nbytes)
                if lo >= hi:
                    continue
                # the victim is the site whose value ``m`` holds; reported once per victim and bytes
                key = (w.space, owner, lo, hi)
                o = merged.get(key)
                if o is None:
                    merged[key] = {
                        "name": owner,
                        "line": next(x.line for _i, x in sites if x.name == owner),
                        "via": m if m != owner else None,
                        "end": n.end,
                        "other_name": w.name,
                        "other_line": wl,
                        "writers": [{"name": w.name, "line": wl}],
                        "space": w.space,
                        "start": lo,
                        "stop": hi,
                        "x0": wl,
                        "x1": n.end,
                    }
                else:
                    if all(x["name"] != w.name for x in o["writers"]):
                        o["writers"].append({"name": w.name, "line": wl})
                    o["x1"] = max(o["x1"], n.end)
                    o["end"] = max(o["end"], n.end)
    # a tile placed inside a placed pipe ring: a pushed tile lands on it
    for _sid, w in sites:
        for r in fp.reserves:
            lo, hi = max(w.start, r.start), min(w.start + w.nbytes, r.start + r.size)
            if r.placed and r.space == w.space and lo < hi:
                merged[(w.space, "<pipe>" + w.name, lo, hi)] = {
                    "kind": "pipe-slot",
                    "name": w.name,
                    "line": w.line,
                    "via": None,
                    "end": site_end[w.name],
                    "other_name": r.name,
                    "other_line": r.line,
                    "writers": [{"name": r.name, "line": r.line}],
                    "space": w.space,
                    "start": lo,
                    "stop": hi,
                    "x0": w.line,
                    "x1": site_end[w.name],
                }
    for o in sorted(merged.values(), key=lambda o: (o["x0"], o["start"])):
        o.setdefault("kind", "overwrite")
        o["writers"].sort(key=lambda x: x["line"])
        strip(o["space"])["overlaps"].append(o)
    order = {"Vec": 0, "Mat": 1, "Left": 2, "Right": 3, "Acc": 4, "Bias": 5}
    yield from sorted(by_space.values(), key=lambda st: order.get(st["space"], 9))


def memory_map_text(
    text: str, findings: Iterable[Finding | Mapping[str, Any]] = (), *, filename: str | None = None, backend: str | None = None
) -> dict[str, Any]:
    """Parse ``text`` and map it; a text that does not parse has no strips and its ``error``."""
    from .parser import parse_text

    res = parse_text(text, filename)
    if res.program is None:
        first = res.errors[0] if res.errors else None
        return {
            "file": filename,
            "addressed": False,
            "placed": False,
            "strips": [],
            "findings": [],
            "counts": {"strips": 0, "bars": 0, "overlaps": 0, "findings": 0},
            "error": f"line {first.span.line}: {first.message}" if first is not None else "does not parse",
        }
    return memory_map(res.program, findings, backend=backend, file=filename)
