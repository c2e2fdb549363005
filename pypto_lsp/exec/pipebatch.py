"""Pipe loops run as bulk transfers: the run-time half (the plans: :mod:`pypto_lsp.analysis.pipebatch_plan`)."""

from __future__ import annotations

from typing import Any

import torch

from . import context, crosscore, sanitizer
from .batching import add_each_in_order, add_in_order, chunk_products, chunk_window
from .crosscore import parts_view
from .definedness import fit
from .lane_tiles import fit_shape
from .runtime import check_value, kernel
from .values import as_f32, get_valid

__all__ = ["Peel", "pop_accumulate", "push_loop"]


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
    if sanitizer.undefined_in([s[0] for s in specs] + [s[4] for s in specs]):
        return False  # undefined elements are followed push by push (exec.definedness), not in bulk
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
        products.append(chunk_products(as_f32(lhs), as_f32(rhs), chunks))  # [chunks, M, P]: chunk i's product at [i]
    rt = crosscore.get_runtime()
    if paced:  # the consumers race (exec.sweep.racy_peer): each push hands them the turn as the loop's would
        for i in range(chunks):
            for j in order:
                rt.push_to_aiv(products[j][i], 0, 0, 0)
        return True
    # every push of the loop in its order, at once (FIFOs are unbounded: the consumers see the same
    # sequence); each lane's FIFO gets its own copy of the products. ``stacked`` is made here and held
    # by nobody else, so the first FIFO takes it as it is and only a second lane's gets a clone; its
    # tiles stay views of it (the pop side reads them back as one: crosscore.parts_view)
    if len(order) > 1:
        m, p = products[0].shape[1:]
        stacked = torch.empty((chunks * len(order), m, p), dtype=products[0].dtype)
        rows = stacked.view(chunks, len(order), m, p)
        for k, j in enumerate(order):
            rows[:, k].copy_(products[j])  # iteration i's k-th push at i * len(order) + k
    else:
        stacked = products[order[0]]
    fresh = [stacked]
    rt.push_many_to_aiv(lambda: list((fresh.pop() if fresh else stacked.clone()).unbind(0)), 0, 0)
    return True


def _uniform(inits: list[Any], items: list[Any], steps: tuple[tuple[Any, ...], ...], view: Any) -> bool:
    """Whether every accumulator and popped tile already has its site's annotated shape and dtype
    (the popped tiles without a valid region), and every step its own accumulator. ``view``: the
    popped tiles as one view (:func:`.crosscore.parts_view`: one shape and dtype, no valid region), or None."""
    slots = [s[0] for s in steps]
    if len(set(slots)) != len(slots):
        return False
    n = len(steps)
    for j, (slot, p_shape, p_dt, _pv, _pn, _op, a_shape, a_dt, _av, _an, _first, _line) in enumerate(steps):
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
    add op, add shape, add dtype, add valid, add name, accumulator first, the add's IR line)``.
    """
    if not all(isinstance(v, torch.Tensor) for v in inits):
        return None
    if sanitizer.undefined_in(inits):
        return None  # an undefined accumulator is followed add by add (exec.definedness)
    items = crosscore.get_runtime().pop_many_from_aic(split, context.lane(), pid, chunks * len(steps))
    acc = list(inits)
    adds = [kernel(s[5]) for s in steps]
    view = parts_view(items)
    if _uniform(acc, items, steps, view):
        # every pop and every sum has the annotated shape and dtype already: each site is checked
        # once (the checks would change nothing in between); each accumulator adds its tiles one
        # by one in the loop's order, in one call (batching.add_in_order: the loop's bits)
        n = len(steps)
        popped = view if view is not None else torch.stack(items)
        totals: list[Any] = [None] * n
        if all(s[7] == torch.float32 for s in steps) and len({s[6] for s in steps}) == 1:
            totals = add_each_in_order([acc[s[0]] for s in steps], popped)  # x + y == y + x: ``first`` changes no bit
        for j, ((slot, p_shape, p_dt, p_valid, p_name, _op, a_shape, a_dt, a_valid, a_name, first, _line), add) in enumerate(
            zip(steps, adds, strict=True)
        ):
            check_value(items[j], p_shape, p_dt, p_valid, p_name)
            total = totals[j]
            if total is None and a_dt.is_floating_point:
                total = add_in_order(acc[slot], popped[j::n])
            elif total is None:  # integers: any order, the same sum (the add kernel's wrap-around kept)
                part = popped[j::n].sum(0)
                total = add(acc[slot], part) if first else add(part, acc[slot])
            acc[slot] = check_value(total, a_shape, a_dt, a_valid, a_name)
        _undefined_sums(inits, items, steps, acc)
        return tuple(acc)
    k = 0
    for _ in range(chunks):
        for (slot, p_shape, p_dt, p_valid, p_name, _op, a_shape, a_dt, a_valid, a_name, first, _line), add in zip(steps, adds, strict=True):
            t = items[k]
            t = check_value(t if t.shape == p_shape else fit_shape(t, p_shape), p_shape, p_dt, p_valid, p_name)
            k += 1
            v = add(acc[slot], t) if first else add(t, acc[slot])
            acc[slot] = check_value(v, a_shape, a_dt, a_valid, a_name)
    _undefined_sums(inits, items, steps, acc)
    return tuple(acc)


def _undefined_sums(inits: tuple[Any, ...], items: list[Any], steps: tuple[tuple[Any, ...], ...], acc: list[Any]) -> None:
    """Under the sanitizer: each accumulator is undefined where its initial value or any tile added
    to it was (the adds ran outside the kernels that carry shadows, :mod:`.definedness`), the add's
    line on its path as the loop run add by add would put it."""
    san = sanitizer.active()
    if san is None or not san.defined.shadows:
        return
    d, n = san.defined, len(steps)
    for j, step in enumerate(steps):
        slot = step[0]
        undefined = [(t, sh) for t in (inits[slot], *items[j::n]) if (sh := d.shadow(t)) is not None and bool(sh.any())]
        if not undefined:
            continue
        shape = tuple(acc[slot].shape)
        total = torch.zeros(shape, dtype=torch.bool)
        for _t, sh in undefined:
            total |= fit(sh, shape)
        origin = d.entry(undefined[0][0])
        if origin is not None:
            d.adopt(acc[slot], origin, total, line=step[-1])
