"""Pipe loops run as bulk transfers: the run-time half (the plans: :mod:`pypto_lsp.analysis.pipebatch_plan`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import context, crosscore, sanitizer
from .batching import add_each_in_order, add_in_order, chunk_products, chunk_window
from .crosscore import parts_view
from .definedness import fit
from .lane_tiles import fit_shape
from .runtime import check_value, kernel
from .side_threads import side_by_side, spans
from .values import as_f32, get_valid, version_of

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


def push_loop(
    specs: tuple[tuple[Any, ...], ...],
    order: tuple[int, ...],
    chunks: int,
    paced: bool = False,
    first: int = 0,
    across: tuple[tuple[int, int, int, int] | None, ...] = (),
) -> bool:
    """Every push of the loop, or False (nothing pushed) when the loop must run as written.

    ``specs``: per product ``(A, a_offsets, a_shape, a_dtype, B, b_offsets, b_shape, b_dtype)`` at the
    loop's first chunk; ``order``: the products one iteration pushes; ``first``: the chunk to start
    from (a :class:`Peel`'s middle); ``across``: per product ``(step, start, tasks, loop chunks)`` when
    ``B``'s columns are this task's stripe of a loop whose tasks could run as one batch and ``A``'s
    window is the same in every task (:func:`pypto_lsp.analysis.task_batch_plan.task_scalars`): the
    products of every task's stripe are made at the first task and the others take theirs
    (:func:`_across_tasks`).
    """
    if sanitizer.undefined_in([s[0] for s in specs] + [s[4] for s in specs]):
        return False  # undefined elements are followed push by push (exec.definedness), not in bulk
    products = []
    kept: set[int] = set()
    for j, (a, a_off0, a_shape, a_dt, b, b_off0, b_shape, b_dt) in enumerate(specs):
        a_off, b_off = a_off0, b_off0
        if first:  # the windows move along K by one extent a chunk
            a_off = (a_off[0], a_off[1] + first * a_shape[1])
            b_off = (b_off[0] + first * b_shape[0], b_off[1])
        lhs = chunk_window(a, a_off, a_shape, 1, chunks)
        rhs = chunk_window(b, b_off, b_shape, 0, chunks)  # (the sanitizer sees this task's read either way)
        if lhs is None or rhs is None or lhs.dtype != a_dt or rhs.dtype != b_dt:
            return False
        if not (lhs.dtype.is_floating_point and rhs.dtype.is_floating_point):
            return False
        stripe = across[j] if j < len(across) else None
        got = _across_tasks(lhs, rhs, (a, a_off0, a_shape), (b, b_off0, b_shape), first, chunks, stripe) if stripe is not None else None
        if got is not None:
            kept.add(j)  # a view of the products the run keeps: the pushes get copies
        products.append(
            got if got is not None else chunk_products(as_f32(lhs), as_f32(rhs), chunks)
        )  # [chunks, M, P]: chunk i's product at [i]
    rt = crosscore.get_runtime()
    if paced:  # the consumers race (exec.sweep.racy_peer): each push hands them the turn as the loop's would
        products = [x.clone() if j in kept else x for j, x in enumerate(products)]
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
        stacked = products[order[0]].clone() if order[0] in kept else products[order[0]]
    fresh = [stacked]
    rt.push_many_to_aiv(lambda: fresh.pop() if fresh else stacked.clone(), 0, 0)  # one run of tiles per FIFO
    return True


# (M, C, P, stripes, chunks, dtypes) -> whether a stripe of the products over every task's columns is
# that task's own products bit for bit (found on the first task of each layout)
_STRIPES_EXACT: dict[tuple[Any, ...], bool] = {}


def _across_tasks(
    lhs: torch.Tensor,
    rhs: torch.Tensor,
    a_spec: tuple[Any, Any, tuple[int, int]],
    b_spec: tuple[Any, Any, tuple[int, int]],
    first: int,
    chunks: int,
    stripe: tuple[int, int, int, int],
) -> torch.Tensor | None:
    """This task's K-chunk products ``[chunks, M, P]`` (chunks ``first`` on of its loop), taken from the
    products of every task's stripe of the weight's columns over every chunk of the loop, made once a
    run (None: made as the loop makes them).

    ``stripe``: ``(step, start, tasks, loop_chunks)``: task ``i`` of a loop of ``tasks`` multiplies one
    left window (the post-norm activations) by the columns ``[step * i + start, + P)`` of the weight,
    in ``loop_chunks`` K chunks (qwen3's MLP and output projection: 128 and 64 stripes of 64 columns at
    hidden 4096). Made one task at a time, each stripe's windows are converted to FP32 on their own
    (4 096 rows 16 KB apart) and multiplied; made for every stripe at once, each chunk's rows of the
    weight are converted as one contiguous block and multiplied by one wider matmul. The products are
    kept for the run, keyed by both operands' windows and their storages' versions (a write to either
    makes them again); a task whose loop peels its first and last chunks (the memory model) takes the
    middle ones from the same products. Each is a matmul of the chunk, as the loop's; that a column
    of the wider matmul is bit for bit the narrow one's is BLAS's behaviour, not a promise: the first
    task of each layout compares its stripe and the last one with their own products, made as the
    loop makes them, and a layout where they differ is made task by task from then on."""
    step, start, tasks, loop_chunks = stripe
    a, a_off0, a_shape = a_spec
    b, b_off0, b_shape = b_spec
    m, c = a_shape
    p = b_shape[1]
    r0, ka = (int(x) for x in a_off0)
    kb, col = (int(x) for x in b_off0)
    task = (col - start) // step if step else -1
    if step != p or b_shape[0] != c or (col - start) % step or not 0 <= task < tasks or first + chunks > loop_chunks:
        return None
    if m == 1 or p == 1 or a.dim() != 2 or b.dim() != 2 or start < 0 or start + step * tasks > b.shape[1]:
        return None  # vectors: chunk_products multiplies them one by one (another order of sums)
    if r0 < 0 or r0 + m > a.shape[0] or ka < 0 or ka + c * loop_chunks > a.shape[1] or kb < 0 or kb + c * loop_chunks > b.shape[0]:
        return None
    layout = (m, c, p, tasks, loop_chunks, a.dtype, b.dtype)
    if _STRIPES_EXACT.get(layout) is False:
        return None
    va, vb = version_of(a), version_of(b)
    if va is None or vb is None:
        return None  # a buffer made in the run without a counter: a write to it could not be seen
    memo = context.run_memo()
    left = (a.untyped_storage().data_ptr(), a.storage_offset(), tuple(a.stride()), va, r0, ka)
    right = (b.untyped_storage().data_ptr(), b.storage_offset(), tuple(b.stride()), vb, kb)
    key = ("products across tasks", left, right, m, c, loop_chunks, start, step, tasks)
    kept = memo.get(key)
    if kept is None:
        lhs32 = as_f32(a[r0 : r0 + m, ka : ka + c * loop_chunks])
        weight = b[kb : kb + c * loop_chunks, start : start + step * tasks]
        # chunk by chunk into one buffer: a chunk's rows of the weight converted (4 MB of FP32 at
        # hidden 4096, still in cache for its matmul) and multiplied; 26 ms a weight there, against
        # 48 ms for the same products made as separate tensors and stacked, 40 ms with 32 MB slabs
        wide = torch.empty((loop_chunks, m, step * tasks), dtype=torch.float32)

        def columns(lo: int, hi: int) -> Callable[[], None]:
            def make() -> None:
                for i in range(loop_chunks):
                    torch.matmul(lhs32[:, i * c : (i + 1) * c], as_f32(weight[i * c : (i + 1) * c, lo:hi]), out=wide[i, :, lo:hi])

            return make

        # a big weight's stripes in parts, side by side (exec.side_threads): each part a run of
        # whole stripes, each chunk's product a one-thread matmul of those columns as the narrow
        # one is (checked below, as for the wider matmul); 45-54 ms -> 27-32 ms for hidden 4096's
        # gate and up weights on two cores
        side_by_side([columns(lo * step, hi * step) for lo, hi in spans(tasks, loop_chunks * c * step * tasks)])
        # the operands are held with their products: their storages cannot be freed and their
        # addresses reused by other tensors while the key names them
        memo[key] = kept = (a, b, wide)
    wide = kept[2]
    mine = wide[first : first + chunks, :, task * p : (task + 1) * p]  # a view: push_loop copies it for the pushes
    if layout not in _STRIPES_EXACT:  # this task's stripe and the last one (the edge of the wider matmul's blocks)
        own = chunk_products(as_f32(lhs), as_f32(rhs), chunks)
        last_cols = slice(start + step * (tasks - 1), start + step * tasks)
        rows = slice(kb + first * c, kb + (first + chunks) * c)
        last = chunk_products(as_f32(lhs), as_f32(b[rows, last_cols]), chunks)
        if len(_STRIPES_EXACT) > 1024:
            _STRIPES_EXACT.clear()
        _STRIPES_EXACT[layout] = torch.equal(mine, own) and torch.equal(wide[first : first + chunks, :, (tasks - 1) * p :], last)
        return own
    return mine


def _uniform(inits: list[Any], items: Sequence[Any], steps: tuple[tuple[Any, ...], ...], view: Any) -> bool:
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
        popped = view if view is not None else torch.stack(list(items))
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


def _undefined_sums(inits: tuple[Any, ...], items: Sequence[Any], steps: tuple[tuple[Any, ...], ...], acc: list[Any]) -> None:
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
