"""Integer inputs a program can use, read from how it uses them: the indices of its gathers and
scatters, the block table of a paged gather, the data those ops only compare or move.

Differential mode (validate/differential.py) synthesizes inputs when there are no goldens; random
floats do for data, but an integer tensor may be an index, whose values must lie inside the
tensor it indexes (and, for a scatter, not collide: two writes to one cell are ordered differently
by different passes). This module follows each integer parameter of the entry through the calls
that pass it on and the loads, slices, reshapes and reads that carry it, to the ops that use it,
and gives its range:

- the index of ``tensor.gather``/``tensor.scatter``: ``[0, input.shape[dim])`` (a scatter's
  distinct along each row);
- the row index of ``*.scatter_update``: ``[0, rows)``, the input read as rows as wide as its last
  dimension (a 4-D ``[blocks, block_size, 1, d]`` input: ``blocks * block_size`` rows), all distinct;
- the flat index of ``tile.gather``/``tile.scatter``/``tile.mscatter`` and of ``tile.mgather`` in
  element mode: ``[0, numel)`` (scatters' all distinct); ``tile.mgather``'s row index: ``[0, rows)``;
- ``tensor.paged_gather``: logical indices ``[0, len(block_table) * block_size)``, the block table
  ``[0, src rows // block_size)`` (distinct, a page table);
- data (a gather's source, a scatter's base and values, what ``gather_compare`` compares and the
  value it compares with): small integers ``[0, 16)``.

No torch (the plan is made from the IR).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir.model import Assign, Const, Expr, FuncCall, Function, Name, OpCall, Program, TensorType, TileType, walk_expr

__all__ = ["IndexRange", "input_ranges"]

DATA_HIGH = 16


@dataclass(frozen=True, slots=True)
class IndexRange:
    """Values ``[low, high)`` for an integer input; ``distinct``: None, ``"rows"`` (no repeat along
    the last dim of a row) or ``"all"`` (no repeat at all); ``why``: the use that says so."""

    low: int
    high: int
    distinct: str | None
    why: str


# ops whose result carries its first operand's values (an index loaded, sliced, reshaped, read)
_CARRIERS = frozenset("tile.load tensor.slice tile.slice tile.reshape tensor.reshape tensor.view tile.move tensor.read tile.read".split())


def _static(t: Any) -> list[int] | None:
    if not isinstance(t, TensorType | TileType):
        return None
    dims = [d.value for d in t.shape if isinstance(d, Const) and isinstance(d.value, int)]
    return dims if len(dims) == len(t.shape) else None


def _numel(dims: list[int] | None) -> int | None:
    if dims is None:
        return None
    n = 1
    for d in dims:
        n *= d
    return n


def _int(e: Expr | None, default: int) -> int:
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if e is not None and type(e).__name__ == "UnaryOp" and getattr(e, "op", "") == "-":
        return -_int(getattr(e, "operand", None), -default)
    return default


class _Function:
    """One function's names: their types and where their values come from (a parameter, or none)."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.types: dict[str, Any] = {p.name: p.type for p in fn.params}
        self.source: dict[str, str] = {}  # name -> the name whose values it carries
        for s in fn.statements():
            if isinstance(s, Assign):
                if s.target.type is not None:
                    self.types.setdefault(s.target.name, s.target.type)
                v = s.value
                if isinstance(v, Name):
                    self.source[s.target.name] = v.id
                elif isinstance(v, OpCall) and v.op in _CARRIERS and v.args and isinstance(v.args[0], Name):
                    self.source[s.target.name] = v.args[0].id

    def root(self, name: str) -> str:
        seen = set()
        while name in self.source and name not in seen:
            seen.add(name)
            name = self.source[name]
        return name

    def dims(self, e: Expr) -> list[int] | None:
        return _static(self.types.get(e.id)) if isinstance(e, Name) else None


def _uses(fx: _Function, call: OpCall) -> list[tuple[Expr, int, int | None, str | None]]:
    """(operand, low, high, distinct) for every integer operand of ``call`` whose range its op says."""
    a, kw, op = call.args, call.kwargs, call.op

    def arg(i: int) -> Expr | None:
        return a[i] if len(a) > i else None

    out: list[tuple[Expr, int, int | None, str | None]] = []

    def along(src: Expr | None, dim: Expr | None) -> int | None:
        dims = fx.dims(src) if src is not None else None
        if not dims:
            return None
        return dims[_int(dim, -1) % len(dims)]

    if op == "tensor.gather" and len(a) >= 2:
        out += [(a[1], 0, along(a[0], kw.get("dim")), None), (a[0], 0, DATA_HIGH, None)]
    elif op == "tensor.scatter" and len(a) >= 3:
        last = _int(kw.get("dim"), -1) in (-1, len(fx.dims(a[0]) or [0, 0]) - 1)
        out += [(a[1], 0, along(a[0], kw.get("dim")), "rows" if last else None), (a[0], 0, DATA_HIGH, None), (a[2], 0, DATA_HIGH, None)]
    elif op in ("tensor.scatter_update", "tile.scatter_update") and len(a) >= 3:
        dims = fx.dims(a[0])
        rows = _numel(dims[:-1]) if dims else None
        out += [(a[1], 0, rows, "all"), (a[0], 0, DATA_HIGH, None), (a[2], 0, DATA_HIGH, None)]
    elif op == "tile.gather" and len(a) >= 2:
        out += [(a[1], 0, _numel(fx.dims(a[0])), None), (a[0], 0, DATA_HIGH, None)]
    elif op == "tile.scatter" and len(a) >= 3:
        out += [(a[2], 0, _numel(fx.dims(a[0])), "all"), (a[0], 0, DATA_HIGH, None), (a[1], 0, DATA_HIGH, None)]
    elif op == "tile.mscatter" and len(a) >= 3:
        out += [(a[1], 0, _numel(fx.dims(a[2])), "all"), (a[0], 0, DATA_HIGH, None)]
    elif op == "tile.mgather" and len(a) >= 2:
        dims = fx.dims(a[0])
        elem = _int(kw.get("coalesce"), 0) == 1
        high = _numel(dims) if elem else (_numel(dims[:-1]) if dims else None)
        out += [(a[1], 0, high, None), (a[0], 0, DATA_HIGH, None)]
    elif op == "tensor.paged_gather" and len(a) >= 3:
        block = _int(kw.get("block_size"), 0)
        src, table = fx.dims(a[0]), _numel(fx.dims(a[2]))
        if block > 0 and src and table:
            pages = src[0] // block
            out.append((a[2], 0, pages, "all" if table <= pages else None))
            out.append((a[1], 0, table * block, None))
        out.append((a[0], 0, DATA_HIGH, None))
    elif op in ("tile.gather_compare", "tensor.gather_compare", "tile.gather_mask", "tensor.gather_mask"):
        out += [(x, 0, DATA_HIGH, None) for x in (arg(0), arg(1)) if x is not None]
    return out


def input_ranges(program: Program, entry: str) -> dict[str, IndexRange]:
    """Entry parameter name -> the range its uses give (parameters with no such use are absent)."""
    fns = {f.name: _Function(f) for f in program.functions}
    if entry not in fns:
        return {}
    # origin[function][parameter] = the entry parameters whose values it may receive (a kernel called
    # from two sites with two inputs receives both; the sets only grow, so the fixed point is reached)
    origin: dict[str, dict[str, set[str]]] = {entry: {p.name: {p.name} for p in fns[entry].fn.params}}
    changed = True
    while changed:
        changed = False
        for caller, fx in fns.items():
            known = origin.get(caller)
            if not known:
                continue
            for s in fx.fn.statements():
                for e in _exprs(s):
                    if not isinstance(e, FuncCall):
                        continue
                    callee = fns.get(e.func.rsplit(".", 1)[-1])
                    if callee is None:
                        continue
                    mine = origin.setdefault(callee.fn.name, {})
                    for p, arg in zip(callee.fn.params, e.args, strict=False):
                        if isinstance(arg, Name):
                            src = known.get(fx.root(arg.id))
                            have = mine.setdefault(p.name, set())
                            if src and not src <= have:
                                have |= src
                                changed = True
    out: dict[str, IndexRange] = {}
    for name, fx in fns.items():
        known = origin.get(name)
        if not known:
            continue
        for s in fx.fn.statements():
            for e in _exprs(s):
                if not isinstance(e, OpCall):
                    continue
                for operand, low, high, distinct in _uses(fx, e):
                    if not isinstance(operand, Name) or high is None or high <= low:
                        continue
                    why = f"{e.op} at line {e.span.line}"
                    for param in sorted(known.get(fx.root(operand.id), ())):
                        prev = out.get(param)
                        if prev is None:
                            out[param] = IndexRange(low, high, distinct, why)
                        elif high < prev.high or (distinct and not prev.distinct):
                            keep = prev.why if high >= prev.high else why
                            out[param] = IndexRange(low, min(high, prev.high), distinct or prev.distinct, keep)
    return out


def _exprs(s: Any) -> list[Expr]:
    """Every expression a statement holds directly (its value, call arguments, loop bounds)."""
    roots: list[Expr] = []
    for attr in ("value", "cond", "stop", "start", "step"):
        v = getattr(s, attr, None)
        if v is not None and not isinstance(v, list):
            roots.append(v)
    for attr in ("values", "init_values", "args"):
        roots.extend(getattr(s, attr, None) or [])
    return [x for r in roots for x in walk_expr(r)]
