"""The allocation budget, checked statically: every allocation of a known size, before anything runs.

Most shapes are static in the IR, so most allocations a program would make are known before it
runs: each typed value (``x: pl.Tensor[[M, N], pl.FP32] = ...``, tiles, arrays, loop-carried
and unpacked values) and each creation call (``pl.tensor.create([M, N], ...)``, ``full``) whose
shape is a list of constants. :func:`over_budget` sizes them all and answers the first one over
the budget, with its line, before anything is allocated: a dump creating a [100000, 100000] FP32
tensor is an error on that line, not a 40 GB allocation that takes the machine down.

An op's allocation is its result plus the temporaries its kernel makes (the catalogue's
``temp_bytes`` per result element): a [M, N] matmul result that fits may still need an FP32
product of the same shape first. The budget itself (per allocation; default a quarter of the
machine's memory; ``PYPTO_LSP_MAX_ALLOC``, ``--max-alloc``, ``max_alloc``) lives in
:mod:`pypto_lsp.ir.alloc_budget`, which also checks, at run time, the allocations whose shape
depends on a runtime value (dynamic dims): those are not known here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .alloc_budget import (
    ENV,
    KIND,
    budget,
    env_problem,
    fmt_bytes,
    itemsize,
    machine_memory,
    message,
    parse_size,
)
from .catalogue import lookup
from .model import (
    ArrayType,
    Assign,
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
    Unpack,
    While,
    Yield,
    fold_int,
    stmt_subexprs,
)

__all__ = [
    "ENV",
    "KIND",
    "Allocation",
    "allocations",
    "budget",
    "env_problem",
    "fmt_bytes",
    "machine_memory",
    "over_budget",
    "parse_size",
]

_memo: dict[tuple[int, str | None, int], tuple[Program, Allocation | None]] = {}
_memo_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Allocation:
    span: Span
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    what: str  # "x: pl.Tensor" / "pl.tensor.create"
    temp_bytes: int = 0  # the kernel's temporaries per result element (counted in ``bytes``)

    def message(self, limit: int) -> str:
        return message(self.bytes, self.what, list(self.shape), self.dtype, self.temp_bytes, limit)


def _size(shape: list[Expr], dtype: str, temps: int = 0) -> tuple[tuple[int, ...], int] | None:
    dims = [fold_int(d) for d in shape]
    if any(d is None for d in dims):
        return None
    n = 1
    for d in dims:
        assert d is not None
        n *= max(d, 0)
    return tuple(d for d in dims if d is not None), n * (itemsize(dtype) + temps)


def _typed(t: Any, span: Span, temps: int = 0) -> Iterator[Allocation]:
    if isinstance(t, TupleType):
        for item in t.items:
            yield from _typed(item, span)
    elif isinstance(t, TensorType | TileType | ArrayType):
        s = _size(t.shape, t.dtype, temps)
        if s is not None:
            what = {TensorType: "pl.Tensor", TileType: "pl.Tile", ArrayType: "pl.Array"}[type(t)]
            yield Allocation(span, s[0], t.dtype, s[1], what, temps)


def temp_bytes(value: Expr | None) -> int:
    """The temporaries per result element of the op computing ``value`` (the catalogue's fact)."""
    if isinstance(value, OpCall):
        spec = lookup(value.op)
        return spec.temp_bytes if spec is not None else 0
    return 0


# id(statement) -> (the statement, its allocations): a statement is never changed after a parse, and
# the parser hands the dumps of a folder the same statement objects for their unchanged lines
# (ir.line_reuse), so a line sized in one dump is not sized again in the next
_by_stmt: dict[int, tuple[Any, tuple[Allocation, ...]]] = {}
_MAX_STMTS = 50_000


def allocations(program: Program) -> Iterator[Allocation]:
    """Every allocation of a statically known size in ``program``, in source order per function."""
    memo = _by_stmt
    for fn in program.functions:
        for s in fn.statements():
            hit = memo.get(id(s))
            if hit is None or hit[0] is not s:
                found = tuple(_of_statement(s))
                if len(memo) >= _MAX_STMTS:
                    memo.clear()
                memo[id(s)] = (s, found)
            else:
                found = hit[1]
            yield from found


def _of_statement(s: Any) -> Iterator[Allocation]:
    """The allocations ``s`` makes itself (not those of the statements nested in it)."""
    targets = []
    if isinstance(s, Assign):
        targets = [s.target]
    elif isinstance(s, Unpack | Yield):
        targets = list(s.targets)
    elif isinstance(s, For | While):
        targets = list(s.iter_args)
    temps = temp_bytes(s.value) if isinstance(s, Assign) else 0
    for tg in targets:
        if tg.type is not None:
            yield from _typed(tg.type, s.span, temps)
    for x in stmt_subexprs(s):
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
