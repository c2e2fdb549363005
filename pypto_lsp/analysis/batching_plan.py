"""Batched execution of K-chunk accumulation loops: one matmul over all chunks instead of one per chunk.

The loop this recognises (SSA form, as the compiler prints it from ConvertToSSA on)::

    for kb, (acc,) in pl.range(N, init_values=(acc0,)):
        k0 = kb * C
        a = pl.tensor.slice(A, [M, C], [r, k0])          # or pl.tile.load(A, [r, k0], [M, C], [M, C], ...)
        b = pl.tensor.slice(B, [C, P], [k0, c])          # (pl.tile.move of either: same value)
        acc2 = pl.tensor.add(acc, pl.tensor.matmul(a, b))   # or t = pl.tile.matmul(a, b); acc2 = pl.tile.add(acc, t)
        pl.yield_(acc2)

i.e. every iteration only adds ``A[r:r+M, k:k+C] @ B[k:k+C, c:c+P]`` into an FP32 accumulator,
the chunks tile the contracted axis contiguously, and nothing computed in the body is used
after the loop. It runs as one call instead of ~5 per chunk: every chunk's product in one batched
matmul (each the loop's own product bit for bit: :func:`pypto_lsp.exec.batching.chunk_products`),
rounded to the product's annotated dtype where the IR narrows it (``t: pl.Tensor[[M, P], pl.BF16]
= pl.tensor.matmul(...)``), then added into the accumulator one by one in the loop's order
(:func:`pypto_lsp.exec.batching.add_in_order`): the loop's bits, which
``tests/conformance/test_batching.py`` checks on every fixture dump. At run time, a window out of
bounds, a valid region or an unexpected dtype falls back to the loop as written.

Kept per iteration, always: loops with cross-core pipes, control flow or any other op in the
body (nothing but windows, moves, matmuls and the accumulating adds is batched), traced runs
(:mod:`pypto_lsp.validate.localize` compares values per assignment), and programs whose tiles
the memory model places (its plan, from ``pl.MemRef`` / ``tile.alloc``) while it is on: it writes each
placed tile into its core's arena in program order, which one matmul over all chunks would skip
(their values-only runs, ``--memory off``, batch; the pipe loops and sweeps of placed programs run
their middle iterations batched between ones run in the arenas: ``pipebatch.Peel``,
``sweep.Sweep.peeled``). The two ends of a cross-core pipe: :mod:`.pipebatch`;
loop nests whose iterations are independent (a window swept across a tensor): :mod:`.sweep`.
Before ConvertToSSA the loop has no iter_args and the body rebinds its accumulator
(``acc = pl.tensor.add(acc, pl.tensor.matmul(a, b))``): the same plan, with the accumulator's name.
``exact`` turns batching off: a run setting (the CLI's ``--exact``, the case key ``exact``, the
editor setting ``pypto-lsp.exact``) that travels in ``validate.config.RunSettings`` down to
:func:`pypto_lsp.analysis.lowering.lower_program`; there is no process default.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..ir.model import (
    Assign,
    BinOp,
    Const,
    Expr,
    For,
    Function,
    ListExpr,
    Name,
    OpCall,
    Program,
    TensorType,
    TileType,
    Yield,
    int_literal,
    stmt_reads,
    stmt_subexprs,
    stmt_targets,
    walk_expr,
    walk_stmts,
)

__all__ = ["has_placements", "Window", "Accumulation", "loop_range", "plan_loop", "used_after"]


def has_placements(program: Program) -> bool:
    """Whether any value carries a ``pl.MemRef`` or any statement allocates (``tile.alloc``)."""
    for fn in program.functions:
        for p in fn.params:
            if isinstance(p.type, TensorType | TileType) and p.type.memref is not None:
                return True
        for s in fn.statements():
            for t in stmt_targets(s):
                if isinstance(t.type, TensorType | TileType) and t.type.memref is not None:
                    return True
            for sub in stmt_subexprs(s):
                if isinstance(sub, OpCall) and sub.op in ("tile.alloc", "tensor.alloc"):
                    return True
    return False


@dataclass(slots=True)
class Window:
    """A window of a loop-invariant 2-D tensor that moves along ``axis`` by its extent each iteration."""

    source: str  # IR name
    offsets: list[Expr | int]  # at the first iteration (an int on the moving axis)
    shape: tuple[int, int]
    axis: int


@dataclass(slots=True)
class Accumulation:
    lhs: Window
    rhs: Window
    name: str | None = None  # before ConvertToSSA: the accumulator the body rebinds (no iter_args)
    # the dtype the IR gives each chunk's product when it is narrower than FP32 (a named
    # ``t: pl.Tensor[[M, P], pl.BF16] = pl.tensor.matmul(a, b)``): the loop rounds each product to it
    # before adding, and so does the batched call
    product: str | None = None


_WINDOW_OPS = ("tensor.slice", "tile.load")
_MM_OPS = ("tensor.matmul", "tile.matmul")
_ADD_OPS = ("tensor.add", "tile.add")
_MOVE_KW = frozenset({"target_memory", "blayout", "slayout"})
_PRODUCT_DTYPES = ("FP32", "BF16", "FP16")  # a named product's dtypes the batched call rounds as the loop does


def loop_invariant(e: Expr, assigned: set[str]) -> bool:
    """``e`` has the same value on every trip: no name the loop assigns, no op call."""
    return all(not (isinstance(x, Name) and x.id in assigned) and not isinstance(x, OpCall) for x in walk_expr(e))


def affine_in(e: Expr, affine: dict[str, tuple[int, int]]) -> tuple[int, int] | None:
    """``e`` as ``a * var + b`` over the loop variable, from the names known affine; None when it is not."""
    if isinstance(e, Name):
        return affine.get(e.id)
    if isinstance(e, BinOp) and e.op in ("*", "+"):
        left, right = affine_in(e.left, affine), affine_in(e.right, affine)
        li, ri = const_int(e.left), const_int(e.right)
        if e.op == "*" and left is not None and ri is not None:
            return left[0] * ri, left[1] * ri
        if e.op == "*" and right is not None and li is not None:
            return right[0] * li, right[1] * li
        if e.op == "+" and left is not None and ri is not None:
            return left[0], left[1] + ri
        if e.op == "+" and right is not None and li is not None:
            return right[0], right[1] + li
    return None


def const_int(e: Expr) -> int | None:
    """An integer literal, unsigned (:func:`pypto_lsp.ir.model.int_literal`): what a plan may rely on."""
    return int_literal(e, signed=False)


def const_ints(e: Expr) -> list[int] | None:
    if not isinstance(e, ListExpr):
        return None
    out = [const_int(i) for i in e.items]
    return None if any(v is None for v in out) else out  # type: ignore[return-value]


def _fp32_static(t: Any, shape: list[int]) -> bool:
    if not isinstance(t, TensorType | TileType) or t.dtype != "FP32" or t.valid_shape is not None:
        return False
    return [const_int(d) for d in t.shape] == shape


def loop_range(loop: For) -> range | None:
    """The trip values of a ``pl.range`` loop with literal bounds (None otherwise)."""
    start = 0 if loop.start is None else const_int(loop.start)
    step = 1 if loop.step is None else const_int(loop.step)
    stop = const_int(loop.stop)
    if loop.kind != "range" or start is None or step is None or stop is None or step <= 0:
        return None
    return range(start, stop, step)


def plan_loop(loop: For, fn: Function) -> list[Accumulation] | None:
    """One :class:`Accumulation` per iter_arg when ``loop`` is a K-chunk accumulation, else None."""
    trips = loop_range(loop)
    if trips is None or len(trips) < 2 or loop.var is None or len(loop.iter_args) != len(loop.init_values):
        return None
    start, step = trips.start, trips.step
    body = loop.body
    pre_ssa = not loop.iter_args  # before ConvertToSSA: ``acc = pl.tensor.add(acc, ...)`` rebinds acc
    if pre_ssa:
        if not body or any(isinstance(s, Yield) for s in body):
            return None
        body = [*body, Yield([], [], loop.header_span)]  # what the SSA form yields: see below
    elif not body or not isinstance(body[-1], Yield):
        return None
    yld = body[-1]
    assert isinstance(yld, Yield)
    assigned = {t.name for s in body for t in stmt_targets(s)} | {loop.var.name} | {t.name for t in loop.iter_args}
    var = loop.var.name
    if pre_ssa:
        # the accumulators: names the body assigns once, from an add of themselves, and that exist before the loop
        before = {p.name for p in fn.params}
        for s in fn.statements():
            if s is loop:
                break
            before.update(t.name for t in stmt_targets(s))
        counts: dict[str, int] = {}
        for s in body:
            for t in stmt_targets(s):
                counts[t.name] = counts.get(t.name, 0) + 1
        accs = [
            s.target.name
            for s in body
            if isinstance(s, Assign)
            and isinstance(s.value, OpCall)
            and s.value.op in _ADD_OPS
            and any(isinstance(a, Name) and a.id == s.target.name for a in s.value.args)
            and counts[s.target.name] == 1
            and s.target.name in before
        ]
        if not accs:
            return None
    affine: dict[str, tuple[int, int]] = {var: (1, 0)}  # name -> (a, b): a * var + b
    windows: dict[str, Window] = {}
    matmuls: dict[str, tuple[Window, Window, str | None]] = {}  # name -> (operands, the product's dtype if not FP32)
    updates: dict[str, tuple[str, tuple[Window, Window, str | None]]] = {}  # target -> (iter_arg, matmul)
    carried = {t.name for t in loop.iter_args} if not pre_ssa else set(accs)

    def invariant(e: Expr) -> bool:
        return loop_invariant(e, assigned)

    def aff(e: Expr) -> tuple[int, int] | None:
        return affine_in(e, affine)

    def window(e: OpCall) -> Window | None:
        if e.op == "tensor.slice":
            if len(e.args) != 3 or e.kwargs:
                return None
            src, shp, off = e.args
        else:  # tile.load
            if len(e.args) not in (3, 4) or set(e.kwargs) - {"target_memory"}:
                return None
            src, off, shp = e.args[0], e.args[1], e.args[2]
            if len(e.args) == 4 and const_ints(e.args[3]) != const_ints(shp):
                return None
        shape = const_ints(shp)
        if not isinstance(src, Name) or src.id in assigned or shape is None or len(shape) != 2 or not isinstance(off, ListExpr):
            return None
        if len(off.items) != 2:
            return None
        moving = [i for i, o in enumerate(off.items) if not invariant(o)]
        if len(moving) != 1:
            return None
        axis = moving[0]
        a = aff(off.items[axis])
        if a is None or a[0] * step != shape[axis]:
            return None  # chunks must tile the axis contiguously, in order
        offsets: list[Expr | int] = list(off.items)
        offsets[axis] = a[0] * start + a[1]
        return Window(src.id, offsets, (shape[0], shape[1]), axis)

    def operand(e: Expr) -> Window | None:
        return windows.get(e.id) if isinstance(e, Name) else None

    def matmul(e: Expr) -> tuple[Window, Window, str | None] | None:
        if isinstance(e, Name):
            return matmuls.get(e.id)
        if not isinstance(e, OpCall) or e.op not in _MM_OPS or len(e.args) != 2:
            return None
        for k, v in e.kwargs.items():
            if k in ("a_trans", "b_trans", "c_matrix_nz"):
                if not (isinstance(v, Const) and v.value is False):
                    return None
            elif not (k == "out_dtype" and getattr(v, "name", None) == "FP32"):
                return None
        lhs, rhs = operand(e.args[0]), operand(e.args[1])
        if lhs is None or rhs is None or lhs.axis != 1 or rhs.axis != 0 or lhs.shape[1] != rhs.shape[0]:
            return None
        return lhs, rhs, None  # an inline product: FP32 (exec.kernels.matmul)

    for s in body[:-1]:
        if not isinstance(s, Assign):
            return None
        name, v = s.target.name, s.value
        if aff(v) is not None and not isinstance(v, Name):
            affine[name] = aff(v)  # type: ignore[assignment]
        elif isinstance(v, OpCall) and v.op in _WINDOW_OPS:
            w = window(v)
            if w is None:
                return None
            windows[name] = w
        elif isinstance(v, OpCall) and v.op == "tile.move" and len(v.args) == 1 and set(v.kwargs) <= _MOVE_KW:
            src = v.args[0]
            if isinstance(src, Name) and src.id in windows:
                windows[name] = windows[src.id]
            elif isinstance(src, Name) and src.id in matmuls:
                matmuls[name] = matmuls[src.id]
            else:
                return None
        elif isinstance(v, OpCall) and v.op in _MM_OPS:
            mm = matmul(v)
            # the product's annotation (none: FP32, as the kernel leaves it without a result type)
            product = "FP32" if s.target.type is None else getattr(s.target.type, "dtype", None)
            if mm is None or product not in _PRODUCT_DTYPES or getattr(s.target.type, "valid_shape", None) is not None:
                return None
            matmuls[name] = (mm[0], mm[1], None if product == "FP32" else product)
        elif isinstance(v, OpCall) and v.op in _ADD_OPS and len(v.args) == 2 and not v.kwargs:
            x, y = v.args
            acc, term = (x, y) if isinstance(x, Name) and x.id in carried else (y, x)
            if not (isinstance(acc, Name) and acc.id in carried) or any(a == acc.id for a, _ in updates.values()):
                return None
            mm = matmul(term)
            if mm is None or not _fp32_static(s.target.type, [mm[0].shape[0], mm[1].shape[1]]):
                return None
            updates[name] = (acc.id, mm)
        else:
            return None
    plan: list[Accumulation] = []
    if pre_ssa:
        if set(updates) != carried or any(updates[a][0] != a for a in accs):
            return None
        plan = [Accumulation(*updates[a][1][:2], name=a, product=updates[a][1][2]) for a in accs]
        yld = Yield([], [], loop.header_span)
    # the yield hands each update back to its own iter_arg
    if len(yld.values) != len(loop.iter_args):
        return None
    for it, val in zip(loop.iter_args, yld.values, strict=True):
        if not isinstance(val, Name) or val.id not in updates or updates[val.id][0] != it.name:
            return None
        lhs, rhs, product = updates[val.id][1]
        plan.append(Accumulation(lhs, rhs, product=product))
    # nothing the body computes may be read after the loop (only the yielded accumulators)
    if used_after(loop, fn, assigned - carried - {t.name for t in yld.targets}):
        return None
    return plan


def used_after(loop: For, fn: Function, names: set[str]) -> bool:
    """Whether a statement of ``fn`` outside ``loop`` reads any of ``names``."""
    if not names:
        return False
    inside = {id(s) for s in walk_stmts(loop.body)}
    inside.add(id(loop))
    return any(not names.isdisjoint(read) for sid, read in statement_reads(fn) if sid not in inside)


class _Reads(threading.local):
    """Per thread, while one program is lowered: each function's statements and the names each reads."""

    by_fn: dict[int, tuple[Function, list[tuple[int, frozenset[str]]]]] | None = None


_READS = _Reads()


@contextmanager
def reads_kept() -> Iterator[None]:
    """Within: :func:`statement_reads` walks each function's expressions once, not once per loop it
    is asked about (``analysis.lowering.lower_program`` asks for every loop of a function). The IR
    is not changed meanwhile."""
    outer = _READS.by_fn
    _READS.by_fn = {}
    try:
        yield
    finally:
        _READS.by_fn = outer


def statement_reads(fn: Function) -> list[tuple[int, frozenset[str]]]:
    """``(id(statement), the names its own expressions read)`` for every statement of ``fn``, in order."""
    kept = _READS.by_fn
    if kept is not None:
        hit = kept.get(id(fn))
        if hit is not None and hit[0] is fn:
            return hit[1]
    out = [(id(s), stmt_reads(s)) for s in fn.statements()]
    if kept is not None:
        kept[id(fn)] = (fn, out)
    return out
