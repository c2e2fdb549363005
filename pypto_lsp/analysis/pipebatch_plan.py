"""Loops on both ends of a cross-core pipe, with the per-tile machinery taken out of the hot path.

After ExpandMixedKernel a K-chunk matmul is split over two kernels: the AIC loop computes one
chunk product per iteration and pushes it, the AIV loop pops it and adds it into an FP32
accumulator::

    for kb in pl.range(N):                                   # AIC: a push loop
        k0 = kb * C
        a = pl.tile.load(A, [r, k0], [M, C], [M, C], ...)     # windows moving along K
        b = pl.tile.load(B, [k0, c], [C, P], [C, P], ...)
        t = pl.tile.matmul(pl.tile.move(a), pl.tile.move(b))  # (moves as their own statements)
        pl.tile.tpush_to_aiv(t, split=0)

    for kb, (acc,) in pl.range(N, init_values=(acc0,)):      # AIV: a pop-accumulate loop
        t = pl.tile.tpop_from_aic(split=0)
        acc2 = pl.tile.add(acc, t)
        pl.system.tfree_to_aic(t, split=0)
        pl.yield_(acc2)

(several products / accumulators per iteration too). Each side runs as one call:

* :func:`push_loop` computes every chunk product with one batched matmul (``torch.bmm`` over
  the chunks: :func:`.batching.chunk_products`) and queues them in the loop's order all at once (the pushes are the loop's only
  effects, and FIFOs are unbounded: the consumers pop the same sequence), or one at a time when
  the consumer lanes race (``paced``: each push hands them the turn as the loop's would);
* :func:`pop_accumulate` pops as the loop would (blocking whenever the FIFO is empty, so the
  scheduling is unchanged), checks each site once and adds its popped tiles to each accumulator
  one by one in the loop's order, in one call (:func:`.batching.add_in_order`, over a view of the
  buffer the pushes queued when they came in one bulk push); tiles of mixed shapes or with a
  valid region take the loop's adds one by one.

The chunk products are each the loop's FP32 matmul bit for bit and the accumulators get the
loop's adds in the loop's order, so both ends give the loop's bits (the both-paths test in
``tests/conformance/test_batching.py`` compares them on every fixture dump). A window out of bounds, a source with a valid
region or an unexpected dtype runs the loop as written (decided before any push).

With the memory model on, a placed program's pipe loops run their first and last iterations
one by one in the arenas and the middle ones batched (:class:`Peel`). Not used for traced runs or
with ``exact``: the codegen emits the loops as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir.model import (
    Assign,
    Expr,
    ExprStmt,
    For,
    Function,
    ListExpr,
    Name,
    OpCall,
    TensorType,
    TileType,
    Yield,
    stmt_targets,
)
from .batching_plan import Window, affine_in, const_int, const_ints, loop_invariant, loop_range, used_after

__all__ = ["PushPlan", "PopPlan", "plan_push_loop", "plan_pop_loop"]

_MOVE_KW = frozenset({"target_memory", "blayout", "slayout"})


@dataclass(slots=True)
class PushPlan:
    products: list[tuple[Window, Window]]  # per distinct matmul: its operand windows
    dtypes: list[tuple[str, str]]  # the annotated dtypes of the two windows
    order: list[int]  # per iteration, the products pushed, in order


@dataclass(slots=True)
class PopPlan:
    # per pop in iteration order: (accumulator index, pop target name, pop type, add op, add
    # target name, add type, accumulator first, the add's line)
    steps: list[tuple[int, str, TileType | TensorType, str, str, TileType | TensorType, bool, int]]
    split: int
    pid: int


def _static(t: Any) -> list[int] | None:
    if not isinstance(t, TensorType | TileType):
        return None
    dims = [const_int(d) for d in t.shape]
    return None if any(d is None for d in dims) else dims  # type: ignore[return-value]


def _split_kwargs(e: OpCall, allowed: frozenset[str]) -> tuple[int, int] | None:
    """``split`` and ``id`` of a pipe op when both are literal (split 0 only), else None."""
    if set(e.kwargs) - allowed:
        return None
    split = const_int(e.kwargs["split"]) if "split" in e.kwargs else 0
    pid = const_int(e.kwargs["id"]) if "id" in e.kwargs else 0
    if split != 0 or pid is None:
        return None
    return split, pid


def plan_push_loop(loop: For, fn: Function) -> PushPlan | None:
    """A :class:`PushPlan` when ``loop`` only pushes chunk products of windows moving along K."""
    trips = loop_range(loop)
    if trips is None or len(trips) < 2 or loop.var is None or loop.iter_args or loop.init_values:
        return None
    start, step = trips.start, trips.step
    body = loop.body
    assigned = {t.name for s in body for t in stmt_targets(s)} | {loop.var.name}
    affine: dict[str, tuple[int, int]] = {loop.var.name: (1, 0)}
    windows: dict[str, tuple[Window, str]] = {}  # name -> window, annotated dtype
    products: dict[str, int] = {}  # name -> product index
    plan = PushPlan([], [], [])

    def invariant(e: Expr) -> bool:
        return loop_invariant(e, assigned)

    def aff(e: Expr) -> tuple[int, int] | None:
        return affine_in(e, affine)

    def window(e: OpCall, target: Any) -> Window | None:
        if e.op != "tile.load" or len(e.args) != 4 or set(e.kwargs) - {"target_memory"}:
            return None
        src, off, shp = e.args[0], e.args[1], e.args[2]
        shape = const_ints(shp)
        if shape is None or const_ints(e.args[3]) != shape or len(shape) != 2 or not isinstance(src, Name) or src.id in assigned:
            return None
        if not isinstance(off, ListExpr) or len(off.items) != 2 or target.valid_shape is not None or _static(target) != shape:
            return None
        moving = [i for i, o in enumerate(off.items) if not invariant(o)]
        if len(moving) != 1:
            return None
        axis = moving[0]
        a = aff(off.items[axis])
        if a is None or a[0] * step != shape[axis]:
            return None
        offsets: list[Expr | int] = list(off.items)
        offsets[axis] = a[0] * start + a[1]
        return Window(src.id, offsets, (shape[0], shape[1]), axis)

    for s in body:
        if isinstance(s, Assign):
            name, v, t = s.target.name, s.value, s.target.type
            if not isinstance(v, OpCall):
                a = aff(v)
                if a is None or isinstance(v, Name):
                    return None
                affine[name] = a
                continue
            if v.op == "tile.load":
                w = window(v, t)
                if w is None or not isinstance(t, TileType | TensorType):
                    return None
                windows[name] = (w, t.dtype)
            elif v.op == "tile.move" and len(v.args) == 1 and set(v.kwargs) <= _MOVE_KW and isinstance(v.args[0], Name):
                src = v.args[0].id
                st = fn_type(body, src)
                if src not in windows or st is None or not _same_type(st, t):
                    return None
                windows[name] = windows[src]
            elif v.op == "tile.matmul" and len(v.args) == 2 and not v.kwargs:
                lhs, rhs = (windows.get(a.id) if isinstance(a, Name) else None for a in v.args)
                if lhs is None or rhs is None or lhs[0].axis != 1 or rhs[0].axis != 0 or lhs[0].shape[1] != rhs[0].shape[0]:
                    return None
                if not isinstance(t, TileType) or t.dtype != "FP32" or t.valid_shape is not None:
                    return None
                if _static(t) != [lhs[0].shape[0], rhs[0].shape[1]]:
                    return None
                products[name] = len(plan.products)
                plan.products.append((lhs[0], rhs[0]))
                plan.dtypes.append((lhs[1], rhs[1]))
            else:
                return None
        elif isinstance(s, ExprStmt) and isinstance(s.value, OpCall) and s.value.op == "tile.tpush_to_aiv":
            e = s.value
            if len(e.args) != 1 or not isinstance(e.args[0], Name) or e.args[0].id not in products:
                return None
            if _split_kwargs(e, frozenset({"split"})) is None:
                return None
            plan.order.append(products[e.args[0].id])
        else:
            return None
    if not plan.order or used_after(loop, fn, assigned - {loop.var.name}):
        return None
    return plan


def fn_type(body: list[Any], name: str) -> Any:
    for s in body:
        if isinstance(s, Assign) and s.target.name == name:
            return s.target.type
    return None


def _same_type(a: Any, b: Any) -> bool:
    return (
        isinstance(a, TileType | TensorType)
        and isinstance(b, TileType | TensorType)
        and a.dtype == b.dtype
        and _static(a) is not None
        and _static(a) == _static(b)
        and a.valid_shape is None
        and b.valid_shape is None
    )


def plan_pop_loop(loop: For, fn: Function) -> PopPlan | None:
    """A :class:`PopPlan` when ``loop`` only pops tiles from the AIC and adds each into an accumulator."""
    trips = loop_range(loop)
    if trips is None or len(trips) < 2 or not loop.iter_args or len(loop.iter_args) != len(loop.init_values):
        return None
    body = loop.body
    if not body or not isinstance(body[-1], Yield):
        return None
    carried = {t.name: i for i, t in enumerate(loop.iter_args)}
    popped: dict[str, tuple[str, Any]] = {}
    updates: dict[str, int] = {}  # add target -> accumulator index
    steps: list[tuple[int, str, Any, str, str, Any, bool, int]] = []
    freed: set[str] = set()
    pipe: tuple[int, int] | None = None
    for s in body[:-1]:
        if isinstance(s, Assign) and isinstance(s.value, OpCall) and s.value.op == "tile.tpop_from_aic":
            e = s.value
            sp = _split_kwargs(e, frozenset({"split", "id"}))
            if e.args or sp is None or (pipe is not None and sp != pipe) or _static(s.target.type) is None:
                return None
            pipe = sp
            popped[s.target.name] = (s.target.name, s.target.type)
        elif isinstance(s, Assign) and isinstance(s.value, OpCall) and s.value.op == "tile.add":
            e = s.value
            if len(e.args) != 2 or e.kwargs or not all(isinstance(a, Name) for a in e.args):
                return None
            x, y = (a.id for a in e.args if isinstance(a, Name))
            acc_first = x in carried
            acc, term = (x, y) if acc_first else (y, x)
            if acc not in carried or term not in popped or carried[acc] in updates.values() or _static(s.target.type) is None:
                return None
            pop_name, pop_type = popped.pop(term)
            updates[s.target.name] = carried[acc]
            steps.append((carried[acc], pop_name, pop_type, "tile.add", s.target.name, s.target.type, acc_first, s.span.line))
        elif isinstance(s, ExprStmt) and isinstance(s.value, OpCall) and s.value.op == "system.tfree_to_aic":
            e = s.value
            if len(e.args) != 1 or not isinstance(e.args[0], Name) or _split_kwargs(e, frozenset({"split", "id"})) is None:
                return None
            freed.add(e.args[0].id)
        else:
            return None
    yld = body[-1]
    assert isinstance(yld, Yield)
    if popped or pipe is None or len(yld.values) != len(loop.iter_args):
        return None  # a tile popped and not accumulated
    for i, v in enumerate(yld.values):
        if not isinstance(v, Name) or updates.get(v.id) != i:
            return None
    body_names = {t.name for s in body[:-1] for t in stmt_targets(s)}
    if used_after(loop, fn, body_names):
        return None
    return PopPlan(steps, pipe[0], pipe[1])  # type: ignore[arg-type]
