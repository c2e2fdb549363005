"""The allocation budget: no run may ask for more memory in one allocation than the budget allows.

Shapes are static in the IR, so every allocation a program would make is known before it
runs: each typed value (``x: pl.Tensor[[M, N], pl.FP32] = ...``, tiles, arrays, loop-carried
and unpacked values) and each creation call (``pl.tensor.create([M, N], ...)``, ``full``) whose
shape is a list of constants. :func:`check` sizes them all and answers the first one over the
budget, with its line, before anything is allocated: a dump creating a [100000, 100000] FP32
tensor is an error on that line, not a 40 GB allocation that takes the machine down.

The budget is per allocation: by default a quarter of the machine's memory (the smaller of
physical memory and a cgroup limit); ``PYPTO_LSP_MAX_ALLOC`` (bytes, or ``512M``, ``4G`` ...)
or :func:`set_budget` (the CLI's ``--max-alloc``) change it. Dimensions that are not constants
(dynamic dims) are not known before the run and are not checked here.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..ir.catalogue import lookup
from ..ir.model import (
    ArrayType,
    Assign,
    BinOp,
    Const,
    DTypeRef,
    Expr,
    For,
    ListExpr,
    OpCall,
    Program,
    Span,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    UnaryOp,
    Unpack,
    While,
    Yield,
    stmt_exprs,
    walk_expr,
    walk_stmts,
)

ENV = "PYPTO_LSP_MAX_ALLOC"
KIND = "alloc-budget"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
# bytes per element of each IR dtype as the executor stores it (see exec/values.DTYPES: widened
# unsigned types, float32 for the types torch lacks)
_ITEMSIZE = {
    "BOOL": 1,
    "INT8": 1,
    "UINT8": 1,
    "INT16": 2,
    "FP16": 2,
    "BF16": 2,
    "INT32": 4,
    "UINT16": 4,
    "FP32": 4,
    "INT64": 8,
    "UINT32": 8,
    "UINT64": 8,
    "INDEX": 8,
}
_DEFAULT_ITEMSIZE = 4  # float32: the fallback of the dtypes torch has no equivalent of

_override: int | None = None
_memo: dict[tuple[int, str | None, int], tuple[Program, Allocation | None]] = {}
_memo_lock = threading.Lock()


def parse_size(text: str) -> int:
    """``"4G"`` -> 4294967296; plain digits are bytes. ValueError for anything else."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (bytes, or a number with K, M, G or T)")
    n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n <= 0:
        raise ValueError(f"a size must be > 0, got {text!r}")
    return n


def machine_memory() -> int | None:
    """Physical memory, or the cgroup's limit when that is smaller (containers)."""
    sizes = []
    try:
        sizes.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as fh:
                v = fh.read().strip()
        except OSError:
            continue
        if v.isdigit() and 0 < int(v) < 1 << 60:
            sizes.append(int(v))
    return min(sizes) if sizes else None


def set_budget(n: int | None) -> None:
    """Bytes allowed per allocation (None: back to the environment / the default)."""
    global _override
    _override = n


def budget() -> int:
    """Bytes allowed per allocation: :func:`set_budget`, else ``PYPTO_LSP_MAX_ALLOC``, else a
    quarter of the machine's memory (4 GiB when that is unknown)."""
    if _override is not None:
        return _override
    env = os.environ.get(ENV)
    if env:
        try:
            return parse_size(env)
        except ValueError:
            pass
    mem = machine_memory()
    return mem // 4 if mem else 4 << 30


def fmt_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


@dataclass(frozen=True, slots=True)
class Allocation:
    span: Span
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    what: str  # "x: pl.Tensor" / "pl.tensor.create"

    def message(self, limit: int) -> str:
        return (
            f"allocation of {fmt_bytes(self.bytes)} ({self.what} {list(self.shape)} {self.dtype}) exceeds the "
            f"allocation budget of {fmt_bytes(limit)}; not run (raise it with --max-alloc or {ENV})"
        )


def _const_int(e: Expr, depth: int = 0) -> int | None:
    """The value of a constant integer expression (literals, + - * // of literals), else None."""
    if depth > 32:
        return None
    if isinstance(e, Const):
        v = e.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(e, UnaryOp) and e.op == "-":
        v = _const_int(e.operand, depth + 1)
        return -v if v is not None else None
    if isinstance(e, BinOp) and e.op in ("+", "-", "*", "//"):
        a, b = _const_int(e.left, depth + 1), _const_int(e.right, depth + 1)
        if a is None or b is None or abs(a) > 1 << 64 or abs(b) > 1 << 64:
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        return a // b if b else None
    return None


def _size(shape: list[Expr], dtype: str) -> tuple[tuple[int, ...], int] | None:
    dims = [_const_int(d) for d in shape]
    if any(d is None for d in dims):
        return None
    n = 1
    for d in dims:
        assert d is not None
        n *= max(d, 0)
    key = dtype.rsplit(".", 1)[-1].upper()
    return tuple(d for d in dims if d is not None), n * _ITEMSIZE.get(key, _DEFAULT_ITEMSIZE)


def _typed(t: Any, span: Span) -> Iterator[Allocation]:
    if isinstance(t, TupleType):
        for item in t.items:
            yield from _typed(item, span)
    elif isinstance(t, TensorType | TileType | ArrayType):
        s = _size(t.shape, t.dtype)
        if s is not None:
            what = {TensorType: "pl.Tensor", TileType: "pl.Tile", ArrayType: "pl.Array"}[type(t)]
            yield Allocation(span, s[0], t.dtype, s[1], what)


def allocations(program: Program) -> Iterator[Allocation]:
    """Every allocation of a statically known size in ``program``, in source order per function."""
    for fn in program.functions:
        for s in walk_stmts(fn.body):
            targets = []
            if isinstance(s, Assign):
                targets = [s.target]
            elif isinstance(s, Unpack | Yield):
                targets = list(s.targets)
            elif isinstance(s, For | While):
                targets = list(s.iter_args)
            for tg in targets:
                if tg.type is not None:
                    yield from _typed(tg.type, s.span)
            for e in stmt_exprs(s):
                for x in walk_expr(e):
                    if isinstance(x, OpCall) and x.args and isinstance(x.args[0], ListExpr | TupleExpr):
                        spec = lookup(x.op)
                        if spec is None or spec.result != "create":
                            continue
                        dt = x.kwargs.get("dtype")
                        dtype = dt.name if isinstance(dt, DTypeRef) else "FP32"
                        sz = _size(list(x.args[0].items), dtype)
                        if sz is not None:
                            yield Allocation(x.span, sz[0], dtype, sz[1], x.printed)


def over_budget(program: Program, limit: int | None = None) -> Allocation | None:
    """The first allocation of ``program`` larger than the budget, or None."""
    lim = budget() if limit is None else limit
    key = (id(program), program.filename, lim)
    with _memo_lock:
        hit = _memo.get(key)
    if hit is not None and hit[0] is program:
        return hit[1]
    found = next((a for a in allocations(program) if a.bytes > lim), None)
    with _memo_lock:
        if len(_memo) > 256:
            _memo.clear()
        _memo[key] = (program, found)
    return found
