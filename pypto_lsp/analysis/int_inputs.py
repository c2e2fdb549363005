"""Values an integer or index input of the entry can take, read from how the program uses them.

Differential mode (``validate/differential.py``) has no goldens: it synthesizes the entry's
inputs. Floating-point data is drawn from a normal distribution, but an integer input (a row
index, a length, a block table) is only meaningful where the program uses it. This follows each
integer parameter of the entry through the program (through calls into kernels, loads of the
tensor into tiles, slices and views, element reads, casts, plain assignments, loop-carried
values, on-core arrays, and arithmetic with a constant: ``v * c``, ``v + c``, ``v - c``,
``v // c``) to the places that bound it:

* an offset of a window (``tile.load``/``tile.store``/``tensor.slice``/``*.assemble``) on a
  dimension of extent E with a window of size S: ``0 <= v <= E - S``;
* an index of ``tensor.read``/``tile.read``/``*.write`` on a dimension of extent E: ``0 <= v < E``;
* the index operand of ``tensor.gather`` along ``dim`` of extent E: ``0 <= v < E``;
* a bound of a loop: ``1 <= v <= 8`` (a loop that runs a few times).

Each bound is carried back through the arithmetic to the parameter (``row * 64`` at offsets
``0..960`` gives ``row`` in ``0..15``); the intersection of a parameter's bounds is its range
(:class:`IntRange`, inclusive). A parameter that only takes part in computation (added, compared,
cast, carried as a sort payload) is data: any small integers do (:data:`DATA_RANGE`). A parameter
that reaches an index-like place no bound is read for (through arithmetic with another variable,
an index operand of another gather/scatter op, a dimension of a new tensor, a window on a
dimension of unknown extent), or whose bounds exclude each other, has no range: differential mode
then names the ``[cases.generate]`` key to add. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.model import (
    Assign,
    BinOp,
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
    UnaryOp,
    Unpack,
    While,
    stmt_exprs,
    stmt_targets,
    walk_expr,
)

__all__ = ["IntRange", "integer_ranges", "invert", "LOOP_TRIPS", "DATA_RANGE"]

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
# (source position, index position) of ops that index their source along ``dim=``
# (a scatter's indices must also be distinct, or the order of the writes decides: no range says that)
_GATHER_DIM: dict[str, tuple[int, int]] = {"tensor.gather": (0, 1)}
# gather/scatter-named ops without an index operand (a mask pattern, a compare value)
_NOT_INDEXED = frozenset({"tile.gather_mask", "tensor.gather_mask", "tile.gather_compare", "tensor.gather_compare"})
# ops whose first operand is the shape of what they create
_SHAPED = frozenset({"tensor.create", "tile.create", "tensor.full", "tile.full"})


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


# one way a value derives from an entry parameter: the parameter and the arithmetic applied to it in
# order: ("mul", c), ("add", c), ("div", c) (floor division), or ("opaque", 0) (not followed)
Step = tuple[str, int]
Derived = frozenset[tuple[str, tuple[Step, ...]]]
_NONE: Derived = frozenset()
_MAX_STEPS = 4


def _then(d: Derived, step: Step) -> Derived:
    return frozenset((p, (ch + (step,))[-_MAX_STEPS:] if step[0] != "opaque" else (("opaque", 0),)) for p, ch in d)


def invert(chain: tuple[Step, ...], lo: int, hi: int) -> tuple[int, int] | None:
    """The parameter's values whose image through ``chain`` lies in ``[lo, hi]`` (None: not followed)."""
    for op, c in reversed(chain):
        if op == "add":
            lo, hi = lo - c, hi - c
        elif op == "mul" and c > 0:
            lo, hi = -(-lo // c), hi // c
        elif op == "div" and c > 0:
            lo, hi = lo * c, hi * c + c - 1
        else:
            return None
    return lo, hi


class _Flow:
    def __init__(self, program: Program) -> None:
        self.program = program
        self.taint: dict[tuple[str, str], Derived] = {}  # (function, name) -> what it derives from
        self.types: dict[str, dict[str, Type]] = {}
        for fn in program.functions:
            types: dict[str, Type] = {p.name: p.type for p in fn.params if p.type is not None}
            for s in fn.statements():
                for t in stmt_targets(s):
                    if t.type is not None:
                        types.setdefault(t.name, t.type)
            self.types[fn.name] = types

    def of(self, fn: Function, e: Expr) -> Derived:
        if isinstance(e, Name):
            return self.taint.get((fn.name, e.id), _NONE)
        if isinstance(e, Intrinsic) and e.name == "cast" and e.args:
            return self.of(fn, e.args[0])
        if isinstance(e, BinOp):
            return self._arith(fn, e)
        if isinstance(e, OpCall):
            if e.op in _CARRY_FIRST and e.args:
                return self.of(fn, e.args[0])
            if e.op == "array.update_element" and len(e.args) >= 3:
                return self.of(fn, e.args[0]) | self.of(fn, e.args[2])
        return _NONE

    def _arith(self, fn: Function, e: BinOp) -> Derived:
        left, right = self.of(fn, e.left), self.of(fn, e.right)
        lc, rc = _const(e.left), _const(e.right)
        if left and rc is not None:
            step = {"*": ("mul", rc), "+": ("add", rc), "-": ("add", -rc), "//": ("div", rc)}.get(e.op)
            if step is not None:
                return _then(left, step)
        if right and lc is not None:
            step = {"*": ("mul", lc), "+": ("add", lc)}.get(e.op)
            if step is not None:
                return _then(right, step)
        if e.op in ("==", "!=", "<", "<=", ">", ">=", "and", "or"):
            return _NONE  # a comparison: the parameter's values do not flow on
        return _then(left | right, ("opaque", 0))

    def mark(self, fn: str, name: str, src: Derived) -> bool:
        if not src:
            return False
        have = self.taint.get((fn, name), _NONE)
        if src <= have:
            return False
        self.taint[(fn, name)] = have | src
        return True

    def step(self) -> bool:
        changed = False
        for fn in self.program.functions:
            for s in fn.statements():
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


# what an integer input only computed with (added, compared, cast, sorted as a payload) is drawn from
DATA_RANGE = (-16, 16)
UNSIGNED_DATA_RANGE = (0, 32)


class _Uses:
    """The bounds each parameter's uses set, and the uses that need a bound none can be read for."""

    def __init__(self, params: list[str]) -> None:
        self.bounds: dict[str, list[tuple[int, int, str]]] = {p: [] for p in params}
        self.unbounded: dict[str, list[str]] = {p: [] for p in params}

    def bound(self, d: Derived, lo: int, hi: int, why: str) -> None:
        for p, chain in d:
            if p not in self.bounds:
                continue
            r = invert(chain, lo, hi)
            if r is None:
                self.unbounded[p].append(f"{why} through arithmetic not followed")
            else:
                self.bounds[p].append((r[0], r[1], why if not chain else f"{why} as {_chain_text(chain)}"))

    def index(self, d: Derived, why: str) -> None:
        for p, _chain in d:
            if p in self.unbounded:
                self.unbounded[p].append(why)


def _chain_text(chain: tuple[Step, ...]) -> str:
    text = "v"
    for op, c in chain:
        text = {"mul": f"{text} * {c}", "add": f"{text} + {c}" if c >= 0 else f"{text} - {-c}", "div": f"{text} // {c}"}.get(op, text)
    return text


def integer_ranges(program: Program, entry: str) -> dict[str, IntRange | str]:
    """For each integer/index parameter of ``entry`` (not ``pl.Out``): its range, or why there is none.

    A parameter whose values only take part in computation (never an offset, index, loop bound or
    index operand) is data: any small integers do (:data:`DATA_RANGE`)."""
    fn = program.function(entry)
    if fn is None:
        return {}
    ints = {
        p.name: p.type.dtype
        for p in fn.params
        if p.direction != "out" and isinstance(p.type, ScalarType | TensorType | TileType) and _is_int(p.type.dtype)
    }
    if not ints:
        return {}
    flow = _Flow(program)
    for p in ints:
        flow.taint[(fn.name, p)] = frozenset({(p, ())})
    for _ in range(64):  # a fixpoint: each round only adds
        if not flow.step():
            break
    uses = _Uses(list(ints))
    for f in program.functions:
        types = flow.types[f.name]
        for s in f.statements():
            if isinstance(s, For) and s.kind in ("range", "parallel", "pipeline", "unroll"):
                for bound_expr in (s.stop, s.start, s.step):
                    d = flow.of(f, bound_expr) if bound_expr is not None else _NONE
                    if d:
                        uses.bound(d, LOOP_TRIPS[0], LOOP_TRIPS[1], f"loop bound at line {s.span.line}")
            for top in stmt_exprs(s):
                for e in walk_expr(top):
                    if isinstance(e, OpCall):
                        _op_uses(f, e, types, flow, uses)
    out: dict[str, IntRange | str] = {}
    for p, bs in uses.bounds.items():
        if uses.unbounded[p]:
            out[p] = "no bound can be read for its use as " + "; ".join(dict.fromkeys(uses.unbounded[p]))
            continue
        if not bs:
            unsigned = (ints[p] or "").rsplit(".", 1)[-1].upper().startswith("UINT")
            lo, hi = UNSIGNED_DATA_RANGE if unsigned else DATA_RANGE
            out[p] = IntRange(lo, hi, ("only computed with",))
            continue
        lo, hi = max(b[0] for b in bs), min(b[1] for b in bs)
        if lo > hi:
            out[p] = "its uses bound it to ranges with nothing in common: " + "; ".join(f"[{b[0]}, {b[1]}] ({b[2]})" for b in bs)
            continue
        out[p] = IntRange(lo, hi, tuple(b[2] for b in bs))
    return out


def _extent(types: dict[str, Type], e: Expr | None) -> list[int | None] | None:
    return _shape(types.get(e.id)) if isinstance(e, Name) else None


def _dim_kw(e: OpCall, rank: int) -> int | None:
    d = e.kwargs.get("dim")
    v = _const(d) if d is not None else None
    if v is None and isinstance(d, UnaryOp) and d.op == "-" and _const(d.operand) is not None:
        v = -int(_const(d.operand) or 0)
    if v is None:
        return None
    return v + rank if v < 0 else v


def _op_uses(f: Function, e: OpCall, types: dict[str, Type], flow: _Flow, uses: _Uses) -> None:
    where = f"{e.op} at line {e.span.line}"
    win = _WINDOWS.get(e.op)
    if win is not None:
        t_pos, o_pos, s_pos, v_pos = win
        if max(t_pos, o_pos) >= len(e.args):
            return
        extent = _extent(types, e.args[t_pos])
        if s_pos is not None:
            sizes = [_const(x) for x in _items(e.args[s_pos])] if s_pos < len(e.args) else []
        else:
            value = e.args[v_pos] if v_pos is not None and v_pos < len(e.args) else None
            sizes = _extent(types, value) or []
        for k, off in enumerate(_items(e.args[o_pos])):
            d = flow.of(f, off)
            if not d:
                continue
            ext = extent[k] if extent is not None and k < len(extent) else None
            if ext is None:
                uses.index(d, f"offset {k} of {where} (on a dimension of unknown extent)")
                continue
            size = sizes[k] if k < len(sizes) else None
            uses.bound(d, 0, max(0, ext - (size if size is not None else 1)), f"offset {k} of {where}")
        return
    el = _ELEMENTS.get(e.op)
    if el is not None and max(el) < len(e.args):
        extent = _extent(types, e.args[el[0]])
        for k, ix in enumerate(_items(e.args[el[1]])):
            d = flow.of(f, ix)
            if not d:
                continue
            ext = extent[k] if extent is not None and k < len(extent) else None
            if ext is None:
                uses.index(d, f"index {k} of {where} (on a dimension of unknown extent)")
            else:
                uses.bound(d, 0, ext - 1, f"index {k} of {where}")
        return
    if e.op in _GATHER_DIM and len(e.args) >= 2:
        # pypto tensor.gather: out[..., i, ...] = src[..., idx[..., i, ...], ...] along dim
        src_pos, idx_pos = _GATHER_DIM[e.op]
        d = flow.of(f, e.args[idx_pos])
        extent = _extent(types, e.args[src_pos])
        dim = _dim_kw(e, len(extent)) if extent is not None else None
        if d and extent is not None and dim is not None and 0 <= dim < len(extent) and extent[dim] is not None:
            ext = extent[dim]
            assert ext is not None
            uses.bound(d, 0, ext - 1, f"index of {where} along dim {dim}")
        elif d:
            uses.index(d, f"an index of {where}")
        return
    if ("gather" in e.op or "scatter" in e.op) and e.op not in _NOT_INDEXED:
        # the index operand follows the source (a paged gather's block table follows the index)
        for a in e.args[1 : 3 if "paged" in e.op else 2]:
            d = flow.of(f, a)
            if d:
                uses.index(d, f"an index operand of {where}")
    if e.op in _SHAPED:  # a dimension of a new tensor or tile: any positive size would do, but which?
        for a in e.args[:1]:
            for x in _items(a):
                d = flow.of(f, x)
                if d:
                    uses.index(d, f"a dimension of {where}")
