"""Values an integer or index input of the entry can take, read from how the program uses them.

Differential mode (``validate/differential.py``) has no goldens: it synthesizes the entry's
inputs. Floating-point data is drawn from a normal distribution, but an integer input (a row
index, a length, a block table) is only meaningful where the program uses it. This follows each
integer parameter of the entry through the program (through calls into kernels, loads of the
tensor into tiles, slices and views, element reads, casts, plain assignments, loop-carried
values and on-core arrays) to the places that bound it:

* an offset of a window (``tile.load``/``tile.store``/``tensor.slice``/``*.assemble``) on a
  dimension of extent E with a window of size S: ``0 <= v <= E - S``;
* an index of ``tensor.read``/``tile.read``/``*.write`` on a dimension of extent E: ``0 <= v < E``;
* the stop of a loop: ``1 <= v <= 8`` (a loop that runs a few times).

Every use bounds the parameter; the intersection is its range (:class:`IntRange`, inclusive). A
value that passes through arithmetic (``row * 64``) is not followed: what bounds the result does
not bound the operand in a way read off the IR without solving it. A parameter with no bound, or
with bounds that exclude each other, has no range; differential mode then names the
``[cases.generate]`` key to add. No torch here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ir.model import (
    Assign,
    Const,
    Expr,
    For,
    FuncCall,
    Function,
    Intrinsic,
    ListExpr,
    Name,
    OpCall,
    Program,
    ScalarType,
    TensorType,
    TileType,
    TupleExpr,
    Type,
    Unpack,
    While,
    stmt_exprs,
    stmt_targets,
    walk_expr,
    walk_stmts,
)

__all__ = ["IntRange", "integer_ranges", "LOOP_TRIPS"]

LOOP_TRIPS = (1, 8)  # a loop bound drawn from here runs a few times

# ops whose result holds (some of) the values of their first operand
_CARRY_FIRST = frozenset(
    {
        "tile.load",
        "tile.read",
        "tensor.read",
        "tensor.slice",
        "tile.slice",
        "tensor.view",
        "tile.reshape",
        "tensor.reshape",
        "tile.move",
        "tile.cast",
        "tensor.cast",
        "array.get_element",
        "tile.fillpad",
        "tensor.fillpad",
    }
)
# window ops: (position of the windowed tensor, of the offsets, of the window's sizes or None: the
# value's shape, position of the value whose shape it is)
_WINDOWS: dict[str, tuple[int, int, int | None, int | None]] = {
    "tile.load": (0, 1, 2, None),
    "tensor.slice": (0, 2, 1, None),
    "tile.slice": (0, 2, 1, None),
    "tile.store": (2, 1, None, 0),
    "tensor.assemble": (0, 2, None, 1),
    "tile.assemble": (0, 2, None, 1),
}
_ELEMENTS: dict[str, tuple[int, int]] = {  # (tensor position, indices position)
    "tensor.read": (0, 1),
    "tile.read": (0, 1),
    "tensor.write": (0, 1),
    "tile.write": (0, 1),
}
_INT_PREFIXES = ("INT", "UINT", "INDEX")


@dataclass(frozen=True, slots=True)
class IntRange:
    """Inclusive bounds ``[low, high]`` of an integer input and the uses that set them."""

    low: int
    high: int
    why: tuple[str, ...]


def _is_int(dtype: str | None) -> bool:
    name = (dtype or "").rsplit(".", 1)[-1].upper()
    return name.startswith(_INT_PREFIXES)


def _const(e: Expr | None) -> int | None:
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _items(e: Expr | None) -> list[Expr]:
    return list(e.items) if isinstance(e, ListExpr | TupleExpr) else []


def _shape(t: Type | None) -> list[int | None] | None:
    if isinstance(t, TensorType | TileType):
        return [_const(d) for d in t.shape]
    return None


class _Flow:
    def __init__(self, program: Program) -> None:
        self.program = program
        self.taint: dict[tuple[str, str], set[str]] = {}  # (function, name) -> entry parameters
        self.types: dict[str, dict[str, Type]] = {}
        for fn in program.functions:
            types: dict[str, Type] = {p.name: p.type for p in fn.params if p.type is not None}
            for s in walk_stmts(fn.body):
                for t in stmt_targets(s):
                    if t.type is not None:
                        types.setdefault(t.name, t.type)
            self.types[fn.name] = types

    def of(self, fn: Function, e: Expr) -> set[str]:
        if isinstance(e, Name):
            return self.taint.get((fn.name, e.id), set())
        if isinstance(e, Intrinsic) and e.name == "cast" and e.args:
            return self.of(fn, e.args[0])
        if isinstance(e, OpCall):
            if e.op in _CARRY_FIRST and e.args:
                return self.of(fn, e.args[0])
            if e.op == "array.update_element" and len(e.args) >= 3:
                return self.of(fn, e.args[0]) | self.of(fn, e.args[2])
        return set()

    def mark(self, fn: str, name: str, src: set[str]) -> bool:
        if not src:
            return False
        have = self.taint.setdefault((fn, name), set())
        if src <= have:
            return False
        have |= src
        return True

    def step(self) -> bool:
        changed = False
        for fn in self.program.functions:
            for s in walk_stmts(fn.body):
                if isinstance(s, Assign):
                    changed |= self.mark(fn.name, s.target.name, self.of(fn, s.value))
                elif isinstance(s, Unpack):
                    src = self.of(fn, s.value)
                    for t in s.targets:
                        changed |= self.mark(fn.name, t.name, src)
                if isinstance(s, For | While):
                    for ia, iv in zip(s.iter_args, s.init_values, strict=False):
                        changed |= self.mark(fn.name, ia.name, self.of(fn, iv))
                for top in stmt_exprs(s):
                    for e in walk_expr(top):
                        if isinstance(e, FuncCall):
                            callee = self.program.function(e.func)
                            if callee is None:
                                continue
                            for p, a in zip(callee.params, e.args, strict=False):
                                changed |= self.mark(callee.name, p.name, self.of(fn, a))
        return changed


def integer_ranges(program: Program, entry: str) -> dict[str, IntRange | str]:
    """For each integer/index parameter of ``entry`` (not ``pl.Out``): its range, or why there is none."""
    fn = program.function(entry)
    if fn is None:
        return {}
    params = [
        p.name
        for p in fn.params
        if p.direction != "out" and isinstance(p.type, ScalarType | TensorType | TileType) and _is_int(p.type.dtype)
    ]
    if not params:
        return {}
    flow = _Flow(program)
    for p in params:
        flow.taint[(fn.name, p)] = {p}
    for _ in range(64):  # a fixpoint: each round only adds
        if not flow.step():
            break
    bounds: dict[str, list[tuple[int, int, str]]] = {p: [] for p in params}

    def bound(srcs: set[str], lo: int, hi: int, why: str) -> None:
        for p in srcs:
            if p in bounds:
                bounds[p].append((lo, hi, why))

    for f in program.functions:
        types = flow.types[f.name]
        for s in walk_stmts(f.body):
            if isinstance(s, For) and s.kind in ("range", "parallel", "pipeline", "unroll"):
                srcs = flow.of(f, s.stop)
                if srcs:
                    bound(srcs, LOOP_TRIPS[0], LOOP_TRIPS[1], f"loop bound at line {s.span.line}")
            for top in stmt_exprs(s):
                for e in walk_expr(top):
                    if not isinstance(e, OpCall):
                        continue
                    _window_bounds(f, e, types, flow, bound)
    out: dict[str, IntRange | str] = {}
    for p, bs in bounds.items():
        if not bs:
            out[p] = "no use of it bounds its values (a window offset, an index, a loop bound)"
            continue
        lo, hi = max(b[0] for b in bs), min(b[1] for b in bs)
        if lo > hi:
            out[p] = "its uses bound it to ranges with nothing in common: " + "; ".join(f"[{b[0]}, {b[1]}] ({b[2]})" for b in bs)
            continue
        out[p] = IntRange(lo, hi, tuple(b[2] for b in bs))
    return out


_Bound = Callable[[set[str], int, int, str], None]


def _window_bounds(f: Function, e: OpCall, types: dict[str, Type], flow: _Flow, add: _Bound) -> None:
    where = f"{e.op} at line {e.span.line}"
    win = _WINDOWS.get(e.op)
    if win is not None:
        t_pos, o_pos, s_pos, v_pos = win
        if max(t_pos, o_pos) >= len(e.args):
            return
        target = e.args[t_pos]
        extent = _shape(types.get(target.id)) if isinstance(target, Name) else None
        if s_pos is not None:
            sizes = [_const(x) for x in _items(e.args[s_pos])] if s_pos < len(e.args) else []
        else:
            value = e.args[v_pos] if v_pos is not None and v_pos < len(e.args) else None
            sizes = (_shape(types.get(value.id)) or []) if isinstance(value, Name) else []
        for k, off in enumerate(_items(e.args[o_pos])):
            srcs = flow.of(f, off)
            if not srcs or extent is None or k >= len(extent) or extent[k] is None:
                continue
            size = sizes[k] if k < len(sizes) else None
            ext = extent[k]
            assert ext is not None
            add(srcs, 0, max(0, ext - (size if size is not None else 1)), f"offset {k} of {where}")
        return
    el = _ELEMENTS.get(e.op)
    if el is not None and max(el) < len(e.args):
        target = e.args[el[0]]
        extent = _shape(types.get(target.id)) if isinstance(target, Name) else None
        for k, ix in enumerate(_items(e.args[el[1]])):
            srcs = flow.of(f, ix)
            if srcs and extent is not None and k < len(extent) and extent[k] is not None:
                ext = extent[k]
                assert ext is not None
                add(srcs, 0, ext - 1, f"index {k} of {where}")
