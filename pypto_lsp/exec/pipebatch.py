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
  the chunks) and queues them in the loop's order all at once (the pushes are the loop's only
  effects, and FIFOs are unbounded: the consumers pop the same sequence), or one at a time when
  the consumer lanes race (``paced``: each push hands them the turn as the loop's would);
* :func:`pop_accumulate` pops as the loop would (blocking whenever the FIFO is empty, so the
  scheduling is unchanged), checks each site once and adds to each accumulator the sum of its
  popped tiles (one reduction, over a view of the buffer the pushes queued when they came in
  one bulk push); tiles of mixed shapes or with a valid region take the loop's adds one by one.

The chunk products are each the same FP32 matmul as the loop's; ``bmm`` may order a product's
sum differently from ``matmul``, and the reduction sums the chunks in another order than the
loop's adds (FP32 rounding only, as a K-chunk accumulation run as one matmul; the both-paths
test in ``tests/conformance/test_batching.py`` covers it). A window out of bounds, a source with a valid
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
from .batching import Window, affine_in, const_int, const_ints, loop_invariant, loop_range, used_after

__all__ = ["PushPlan", "PopPlan", "plan_push_loop", "plan_pop_loop", "push_loop", "pop_accumulate"]

_MOVE_KW = frozenset({"target_memory", "blayout", "slayout"})


@dataclass(slots=True)
class PushPlan:
    products: list[tuple[Window, Window]]  # per distinct matmul: its operand windows
    dtypes: list[tuple[str, str]]  # the annotated dtypes of the two windows
    order: list[int]  # per iteration, the products pushed, in order


@dataclass(slots=True)
class PopPlan:
    # per pop in iteration order: (accumulator index, pop target name, pop type, add op, add
    # target name, add type, accumulator first)
    steps: list[tuple[int, str, TileType | TensorType, str, str, TileType | TensorType, bool]]
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
    steps: list[tuple[int, str, Any, str, str, Any, bool]] = []
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
            steps.append((carried[acc], pop_name, pop_type, "tile.add", s.target.name, s.target.type, acc_first))
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


# ---------------------------------------------------------------------- run time


class Peel:
    """A pipe loop on placed tiles (memory model on): iterates the loop's range, the first ``S + 1``
    and the last iterations one by one in the arenas (``S``: the least common multiple of the
    ring sizes of its pops, 1 without); at the first middle iteration ``batch`` is set and the
    body's batched call runs the ``count`` middle ones at once (``take``), unless the first ones
    met a hazard or the call declines: then every iteration runs as written. Why the findings are
    the loop's: :meth:`.sweep.Sweep.peeled` (an
    accumulator carried through its bytes is read each iteration from the one before: the same
    check every iteration from the second on; the tail's first reads the batched sum, unplaced)."""

    def __init__(self, items: range, session: Any, frame: Any, pops: tuple[int, ...]) -> None:
        self.items, self.session, self.frame, self.pops = items, session, frame, pops
        self.batch = False
        self.first = self.count = 0
        self.taken = False

    def take(self) -> None:
        self.taken = True

    def __iter__(self) -> Any:
        items = self.items
        for step in self.frame.peeled(self.session, len(items), self.pops):
            if not isinstance(step, range):
                yield items[step]
                continue
            self.batch, self.first, self.count = True, step.start, len(step)
            yield items[step.start]
            self.batch = False
            if self.taken:
                self.frame.skip_pops(self.pops, len(step))
            else:  # declined: that iteration ran as written, so do the others
                yield from (items[k] for k in step[1:])


def push_loop(specs: tuple[tuple[Any, ...], ...], order: tuple[int, ...], chunks: int, paced: bool = False, first: int = 0) -> bool:
    """Every push of the loop, or False (nothing pushed) when the loop must run as written.

    ``specs``: per product ``(A, a_offsets, a_shape, a_dtype, B, b_offsets, b_shape, b_dtype)`` at the
    loop's first chunk; ``order``: the products one iteration pushes; ``first``: the chunk to start
    from (a :class:`Peel`'s middle).
    """
    import torch

    from . import crosscore
    from .batching import chunk_window
    from .values import as_f32

    products = []
    for a, a_off, a_shape, a_dt, b, b_off, b_shape, b_dt in specs:
        if first:  # the windows move along K by one extent a chunk
            a_off = (a_off[0], a_off[1] + first * a_shape[1])
            b_off = (b_off[0] + first * b_shape[0], b_off[1])
        lhs = chunk_window(a, a_off, a_shape, 1, chunks)
        rhs = chunk_window(b, b_off, b_shape, 0, chunks)
        if lhs is None or rhs is None or lhs.dtype != a_dt or rhs.dtype != b_dt:
            return False
        if not (lhs.dtype.is_floating_point and rhs.dtype.is_floating_point):
            return False
        m, c = a_shape
        p = b_shape[1]
        left = as_f32(lhs).reshape(m, chunks, c).permute(1, 0, 2)
        right = as_f32(rhs).reshape(chunks, c, p)
        products.append(torch.bmm(left, right))  # [chunks, M, P]: chunk i's product at [i]
    rt = crosscore.get_runtime()
    if paced:  # the consumers race (exec.sweep.racy_peer): each push hands them the turn as the loop's would
        for i in range(chunks):
            for j in order:
                rt.push_to_aiv(products[j][i], 0, 0, 0)
        return True
    # every push of the loop in its order, at once (FIFOs are unbounded: the consumers see the same
    # sequence); each lane's FIFO gets its own copy of the products
    stacked = torch.stack([products[j][i] for i in range(chunks) for j in order]) if len(order) > 1 else products[order[0]]
    rt.push_many_to_aiv(lambda: list(stacked.clone().unbind(0)), 0, 0)
    return True


def _uniform(inits: list[Any], items: list[Any], steps: tuple[tuple[Any, ...], ...], view: Any) -> bool:
    """Whether every accumulator and popped tile already has its site's annotated shape and dtype
    (the popped tiles without a valid region), and every step its own accumulator. ``view``: the
    popped tiles as one view (:func:`.crosscore.parts_view`: one shape and dtype, no valid region), or None."""
    import torch

    from .values import get_valid

    slots = [s[0] for s in steps]
    if len(set(slots)) != len(slots):
        return False
    n = len(steps)
    for j, (slot, p_shape, p_dt, _pv, _pn, _op, a_shape, a_dt, _av, _an, _first) in enumerate(steps):
        init = inits[slot]
        if p_shape != a_shape or p_dt != a_dt or init.dtype != a_dt or tuple(init.shape) != tuple(a_shape):
            return False
        if view is not None:
            if view.shape[1:] != p_shape or view.dtype != p_dt:
                return False
            continue
        for t in items[j::n]:
            if type(t) is not torch.Tensor or t.dtype != p_dt or t.shape != p_shape or get_valid(t) is not None:
                return False
    return True


def pop_accumulate(inits: tuple[Any, ...], chunks: int, steps: tuple[tuple[Any, ...], ...], split: int, pid: int) -> tuple[Any, ...] | None:
    """The accumulators after the loop: its pops, then its checks and adds (None,
    nothing popped: an accumulator is no tensor, the loop runs as written).

    ``steps``: per pop of one iteration ``(accumulator, pop shape, pop dtype, pop valid, pop name,
    add op, add shape, add dtype, add valid, add name, accumulator first)``.
    """
    import torch

    from . import context, crosscore
    from .crosscore import fit_shape, parts_view
    from .runtime import check_value, kernel

    if not all(isinstance(v, torch.Tensor) for v in inits):
        return None
    items = crosscore.get_runtime().pop_many_from_aic(split, context.lane(), pid, chunks * len(steps))
    acc = list(inits)
    adds = [kernel(s[5]) for s in steps]
    view = parts_view(items)
    if _uniform(acc, items, steps, view):
        # every pop and every sum has the annotated shape and dtype already: each site is checked
        # once (the checks would change nothing in between); each accumulator adds the sum of its
        # tiles (one reduction over the popped tiles, in place of the loop's one add per tile: FP32
        # rounding only, as a K-chunk matmul run as one)
        n = len(steps)
        popped = view if view is not None else torch.stack(items)
        for j, ((slot, p_shape, p_dt, p_valid, p_name, _op, a_shape, a_dt, a_valid, a_name, first), add) in enumerate(
            zip(steps, adds, strict=True)
        ):
            check_value(items[j], p_shape, p_dt, p_valid, p_name)
            part = popped[j::n].sum(0)
            acc[slot] = check_value(add(acc[slot], part) if first else add(part, acc[slot]), a_shape, a_dt, a_valid, a_name)
        return tuple(acc)
    k = 0
    for _ in range(chunks):
        for (slot, p_shape, p_dt, p_valid, p_name, _op, a_shape, a_dt, a_valid, a_name, first), add in zip(steps, adds, strict=True):
            t = items[k]
            t = check_value(t if t.shape == p_shape else fit_shape(t, p_shape), p_shape, p_dt, p_valid, p_name)
            k += 1
            v = add(acc[slot], t) if first else add(t, acc[slot])
            acc[slot] = check_value(v, a_shape, a_dt, a_valid, a_name)
    return tuple(acc)
