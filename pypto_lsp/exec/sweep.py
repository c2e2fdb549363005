"""Sweeps (loop nests with independent iterations) over all iterations at once: the run-time half.

What a sweep is and why its results are the loop's: :mod:`pypto_lsp.analysis.sweep_plan` (the plan, torch-free)."""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Callable, Iterable
from typing import Any

import torch

from ..analysis.sweep_plan import FREES, MAX_BATCH_BYTES, POPS, PUSHES, WINDOWS, WRITES
from . import context, sanitizer
from .batching import add_in_order
from .crosscore import get_runtime, parts_view, run_group
from .lane_tiles import fit_shape, split_code
from .ranks import current_rank
from .runtime import check_value
from .values import get_valid, with_valid

__all__ = ["FAILED", "Batch", "Ix", "Sweep"]


class Ix:
    """One int per iteration (a loop variable or a scalar affine in the loop variables)."""

    __slots__ = ("v",)

    def __init__(self, v: tuple[int, ...]) -> None:
        self.v = v

    def _map(self, other: Any, f: Callable[[int, int], int]) -> Ix:
        # map() over operator functions: a sweep's index arithmetic runs per op, thousands of times
        if isinstance(other, Ix):
            if len(other.v) != len(self.v):
                raise ValueError(f"Ix of {len(self.v)} and {len(other.v)} iterations")
            return Ix(tuple(map(f, self.v, other.v)))
        return Ix(tuple(map(f, self.v, itertools.repeat(int(other), len(self.v)))))

    def __add__(self, o: Any) -> Ix:
        return self._map(o, operator.add)

    __radd__ = __add__

    def __mul__(self, o: Any) -> Ix:
        return self._map(o, operator.mul)

    __rmul__ = __mul__

    def __sub__(self, o: Any) -> Ix:
        return self._map(o, operator.sub)

    def __rsub__(self, o: Any) -> Ix:
        return self._map(o, lambda a, b: b - a)

    def __repr__(self) -> str:
        return f"Ix{self.v[:4]}{'...' if len(self.v) > 4 else ''}"


class Batch:
    """One tile per iteration of the current chunk: stacked along a new first axis, or a list.

    Stacked tiles may share one valid region (``valid``: e.g. an idle lane's ``[0, 0]`` tiles); the
    items then carry it, and :meth:`stacked` is None (the batched forms take whole tiles only).

    ``undefined``: an item may hold undefined elements (a pop of tiles the peer made from a buffer
    created without init_value). The items are kept apart, never stacked, and every op on them runs
    item by item through the run's kernels, so :mod:`.definedness` follows each element (a stacked
    copy would have no shadow: the undefined values would reach the output unseen).
    """

    __slots__ = ("t", "items", "valid", "undefined")

    def __init__(
        self, t: Any = None, items: list[Any] | None = None, valid: tuple[int, ...] | None = None, undefined: bool = False
    ) -> None:
        self.t = t
        self.items = items
        self.valid = valid
        self.undefined = undefined

    def __len__(self) -> int:
        return int(self.t.shape[0]) if self.items is None else len(self.items)

    def item(self, i: int) -> Any:
        if self.items is not None:
            return self.items[i]
        if self.valid is None:
            return self.t[i]
        return with_valid(self.t[i], self.valid)

    def all(self) -> list[Any]:
        if self.items is not None:
            return self.items
        if self.valid is None:
            return list(self.t.unbind(0))
        return [with_valid(x, self.valid) for x in self.t.unbind(0)]

    def stacked(self) -> Any:
        """The items as one tensor (None when they differ in shape, dtype or valid region, or carry one,
        or may hold undefined elements)."""
        if self.valid is not None or self.undefined:
            return None
        if self.t is None and self.items:
            first = self.items[0]
            if all(
                isinstance(x, torch.Tensor) and x.shape == first.shape and x.dtype == first.dtype and get_valid(x) is None
                for x in self.items
            ):
                self.t = torch.stack(self.items)
                self.items = None
        return self.t


def _counted(fn: Any) -> None:
    """A left-out lane's call, counted by the task sweep's loop instead (exec.codegen_loops)."""


def _undefined(args: Iterable[Any]) -> bool:
    """Any of ``args`` is a :class:`Batch` whose items may hold undefined elements."""
    return any(isinstance(a, Batch) and a.undefined for a in args)


_VARYING = (Batch, Ix)  # a tuple, not ``Batch | Ix``: isinstance of a tensor against a union is ~10x slower


def _varies(a: Any) -> bool:
    if isinstance(a, _VARYING):
        return True
    if type(a) is list or type(a) is tuple:
        return any(_varies(x) for x in a)
    return False


@functools.lru_cache(maxsize=256)
def _layout(ranges: tuple[tuple[int, int, int], ...]) -> tuple[int, list[tuple[int, ...]], list[int]]:
    """Iteration count, per level its variable's value at each iteration (the outermost level
    varies slowest), and the variables' last values of a nest of ``ranges``."""
    trips = [range(*r) for r in ranges]
    n = math.prod(len(t) for t in trips)
    values: list[tuple[int, ...]] = []
    inner = n
    for t in trips:
        inner //= len(t)
        values.append(tuple(v for _ in range(n // (len(t) * inner)) for v in t for _ in range(inner)))
    return n, values, [t[-1] for t in trips]


FAILED = object()  # Sweep.run_tasks: the task sweep raised and left its buffers as they were


class Sweep:
    """The run of one sweep: its iterations, the current chunk and the batched ops."""

    def __init__(self, ranges: tuple[tuple[int, int, int], ...], pop_first: tuple[str, int, int] | None, paced: bool = False) -> None:
        self.n, self.values, self.last = _layout(ranges)
        self.pop_first = pop_first
        self.paced = paced
        self.lo = self.hi = 0
        self.end = self.n  # the batched chunks stop here (the iterations after it run one by one)
        self.written: tuple[Any, ...] = ()  # a task sweep: the buffers its tasks write (tasks_ready)

    def var(self, level: int) -> Ix:
        return Ix(self.values[level])

    # -- go / no go -------------------------------------------------------------

    def ready(self, reads: tuple[Any, ...], writes: tuple[tuple[Any, list[Any], tuple[int, ...]], ...]) -> bool:
        """True when the writes of different iterations never overlap and no tensor the body
        reads shares storage with one it writes (else the caller runs the loop as written)."""
        if sanitizer.undefined_in(reads):
            return False  # undefined elements are followed kernel by kernel (exec.definedness)
        targets = []
        for dst, offs, shape in writes:
            if not isinstance(dst, torch.Tensor) or dst.dim() != len(offs) or len(shape) != len(offs):
                return False
            if math.prod(shape) * self.n * max(dst.element_size(), 4) > MAX_BATCH_BYTES:
                return False
            if _strides_apart(offs, shape):
                targets.append(dst)
                continue
            boxes = []
            for i in range(self.n):
                box = []
                for o, ext, size in zip(offs, shape, dst.shape, strict=True):
                    start = o.v[i] if isinstance(o, Ix) else int(o)
                    box.append((max(start, 0), max(min(start + ext, size), max(start, 0))))
                boxes.append(box)
            if not _disjoint(boxes):
                return False
            targets.append(dst)
        ptrs = {t.untyped_storage().data_ptr() for t in targets}
        if len(ptrs) != len(targets):
            return False  # two carried tensors on one buffer
        for r in reads:
            if isinstance(r, torch.Tensor) and r.untyped_storage().data_ptr() in ptrs:
                return False
        return True

    # -- a task sweep: every task of an orchestrator loop at once (analysis.task_sweep_plan) ------

    def tasks_ready(self, reads: tuple[Any, ...], writes: tuple[Any, ...], sums: tuple[Any, ...] = ()) -> bool:
        """The loop's tasks may run as one sweep now (else the caller runs them one by one): no
        buffer the tasks read (``reads``, the inputs, and ``sums``, the ordered sums, which are among
        ``writes`` too) holds an undefined element (the sanitizer follows those kernel by kernel), no
        buffer they write shares storage with another one they touch, and the run is not the
        sanitizer's other-order run, a multi-rank run or inside a cross-core lane."""
        san = sanitizer.active()
        if san is not None and san.reorder is not None:
            return False
        if context.lane_count() > 1 or context.role() is not None or current_rank() is not None:
            return False
        if not all(isinstance(t, torch.Tensor) for t in (*reads, *writes, *sums)):
            return False
        if sanitizer.undefined_in((*reads, *sums)):
            return False
        ptrs = {t.untyped_storage().data_ptr() for t in writes}
        if len(ptrs) != len(writes) or any(t.untyped_storage().data_ptr() in ptrs for t in reads):
            return False  # (an input that is a written buffer too, under another name or the same)
        self.lo, self.hi = 0, self.n
        self.written = writes
        return True

    def run_tasks(self, variant: Callable[..., Any], *args: Any) -> Any:
        """The kernel's ``__tasks`` variant over all tasks, or :data:`FAILED` when it raised: the
        buffers it writes are then as they were before it (copied first), and the caller runs the
        tasks one by one, so an error stops the run where and as the tasks would have met it."""
        kept = [(t, t.clone()) for t in self.written]
        try:
            out = variant(self, *args)
            if not _varies(out if isinstance(out, tuple | list) else (out,)):
                return out
        except Exception:  # (a run stopped from outside raises a BaseException: not caught here)
            pass
        # it raised, or it returns a value of each task's own (which the loop's last task leaves):
        # the buffers as they were, and the tasks one by one
        for t, c in kept:
            t.copy_(c)
        return FAILED

    def group(self, name: str, aic: Callable[..., Any], aiv: Callable[..., Any], dual: bool, idle: bool) -> Callable[..., Any]:
        """A Group's task variant for :meth:`run_tasks`: one cross-core run (no-split pipes) of its
        kernels' ``__tasks`` variants, every push and pop carrying each task's tile in task order, so
        that the n-th pop of a task meets its n-th push as in the task's own run; its value is AIV
        lane 0's, as a run of one task returns. ``idle``: lane 1 of the dual-dispatch pair is left
        out (the plan found it touches nothing: ``analysis.task_sweep_plan._lane1_idle``; the loop
        counts its calls)."""

        def variant(sweep: Sweep, *args: Any) -> Any:
            with context.lane_skip_offered(_counted if idle else None):
                return run_group(name, functools.partial(aic, sweep), functools.partial(aiv, sweep), args, split=0, dual_aiv_dispatch=dual)

        return variant

    def ordered_add(self, kernel: Callable[..., Any], a: Any, b: Any, loaded_first: bool) -> Any:
        """An ordered sum's add over all tasks: the window's value (``a`` when ``loaded_first``, else
        ``b``; the same for every task) with every task's term added one at a time in task order,
        the operands in the IR's order: what the window holds after the last task."""
        acc, term = (a, b) if loaded_first else (b, a)
        if isinstance(acc, Batch):
            raise RuntimeError("internal: an ordered sum's window differs between tasks")
        n = self.hi - self.lo
        stacked = term.stacked() if isinstance(term, Batch) else None
        if (
            loaded_first
            and stacked is not None
            and isinstance(acc, torch.Tensor)
            and acc.dtype == torch.float32 == stacked.dtype
            and tuple(stacked.shape[1:]) == tuple(acc.shape)
            and get_valid(acc) is None
            and _following() is None
        ):
            return add_in_order(acc, stacked)  # (index_add_ in order: exec.batching)
        items = term.all() if isinstance(term, Batch) else [term] * n
        for x in items:
            acc = kernel(acc, x) if loaded_first else kernel(x, acc)
        return acc

    def task_args(self, args: tuple[Any, ...], i: int) -> tuple[Any, ...]:
        """Task ``i``'s arguments (an :class:`Ix` its value in that task)."""
        return tuple(a.v[i] if isinstance(a, Ix) else a for a in args)

    def last_value(self, v: Any) -> Any:
        """A scalar of the loop's body as it is after the last task."""
        return v.v[-1] if isinstance(v, Ix) else v

    def peeled(self, session: Any, frame: Any, pops: tuple[int, ...]) -> Iterable[tuple[int, ...] | None]:
        """With the memory model on placed tiles: the iterations to run one by one in the arenas
        (their loop variables' values), and ``None`` where the caller runs the batched middle.

        The first ``S + 1`` iterations and the last one run one by one (``S``: the least common
        multiple of the ring sizes of the body's pops, 1 without; :meth:`.memory.Frame.peeled`).
        Every iteration runs the same straight-line body on the same static placements, so from the
        second one on each meets the same checks in the same arena state (which site last wrote each
        byte), up to the pop's slot, which repeats every ``S`` iterations: when the first ``S + 1``
        met no hazard (a repeat of one already reported included), neither would the middle ones,
        and their values are the values-only ones. After the last, every byte the body writes has
        the owner (its site) it has after the loop, and what the loop leaves placed (a carried
        accumulator) is placed again; a ring slot other than the last one's holds an earlier
        iteration's tile than after the loop, which only a read the sanitizer reports as an
        overwrite could see. A hazard met: every iteration one by one, as written."""
        for step in frame.peeled(session, self.n, pops):
            if isinstance(step, range):
                self.lo = self.hi = step.start
                self.end = step.stop
                yield None
                frame.skip_pops(pops, len(step))
            else:
                yield tuple(v[step] for v in self.values)

    def next(self) -> bool:
        """Advance to the next chunk of iterations (all at once unless the body pops first)."""
        if self.hi >= self.end:
            return False
        self.lo = self.hi
        if self.pop_first is None:
            self.hi = self.end
            return True
        op, split, pid = self.pop_first
        rt = get_runtime()
        lane = context.lane()
        rt.wait_ready(op, split, lane, pid)
        self.hi = self.lo + min(rt.ready_count(op, split, lane, pid), self.end - self.lo)
        return True

    # -- ops --------------------------------------------------------------------

    def _at(self, a: Any, i: int) -> Any:
        if isinstance(a, Batch):
            return a.item(i)
        if isinstance(a, Ix):
            return a.v[self.lo + i]
        if type(a) is list:
            return [self._at(x, i) for x in a]
        if type(a) is tuple:
            return tuple(self._at(x, i) for x in a)
        return a

    def op(self, kernel: Callable[..., Any], name: str, dead: bool, /, *args: Any, **kw: Any) -> Any:
        """``kernel(*args, **kw)`` over the iterations of the current chunk."""
        if name in FREES:
            return None  # a no-op
        count = self.hi - self.lo
        if name in PUSHES:
            return self._push(name, count, *args, **kw)
        if name in POPS:
            return self._pop(name, count, **kw)
        if not _varies(args) and not any(_varies(v) for v in kw.values()):
            return kernel(*args, **kw)  # the same for every iteration: once
        if dead:
            return Batch(items=[kernel(*self._at(args, 0), **{k: self._at(v, 0) for k, v in kw.items()})])
        undefined = _undefined(args) or _undefined(kw.values())
        fast = None if undefined else _FAST.get(name)
        if fast is not None:
            r = fast(self, kernel, name, count, args, kw)
            if r is not None:
                return r
        out = None
        items = []
        for i in range(count):
            out = kernel(*self._at(args, i), **{k: self._at(v, i) for k, v in kw.items()})
            items.append(out)
        if name in WRITES:
            return out  # the destination, written in iteration order
        return Batch(items=items, undefined=undefined)

    def chk(self, value: Any, shape: tuple[Any, ...], dt: Any, valid: Any, name: str) -> Any:
        """The annotation check of one site, for every iteration."""
        if not isinstance(value, Batch):
            return check_value(value, shape, dt, valid, name)
        t = value.t
        if (
            t is not None
            and value.items is None
            and t.dtype == dt
            and t.dim() == len(shape) + 1
            and all(d is None or d == s for d, s in zip(shape, t.shape[1:], strict=True))
            and get_valid(t) is None
        ):
            # every item has the annotated shape and dtype: only the valid region to attach
            if valid is None:
                return value  # (as check_value: what the items carry stays)
            region: tuple[int, ...] | None = tuple(int(v) for v in valid)
            if region == tuple(t.shape[1:]):
                region = None  # (the whole tile: stored as none, as with_valid does)
            return value if region == value.valid else Batch(t=t, valid=region)
        return Batch(items=[check_value(x, shape, dt, valid, name) for x in value.all()], undefined=value.undefined)

    def chs(self, value: Any, spec: tuple[Any, Any, Any], name: str) -> Any:
        """:meth:`chk` of a static annotation given as one constant (``runtime.check_spec``)."""
        return self.chk(value, spec[0], spec[1], spec[2], name)

    # -- pipes ----------------------------------------------------------------

    def _push(self, name: str, count: int, tile: Any, *_extra: Any, split: Any = 0, id: Any = 0, **_kw: Any) -> None:
        rt = get_runtime()
        pid = int(id or 0)
        # one push at a time: the consumers get the turn as they would per iteration (paced), or each
        # tile's undefined elements go with it (exec.crosscore carries them push by push)
        if self.paced or (tile.undefined if isinstance(tile, Batch) else sanitizer.undefined_in((tile,))):
            for i in range(count):
                item = tile.item(i) if isinstance(tile, Batch) else tile
                if name == "tile.tpush_to_aic":
                    rt.push_to_aic(item, split_code(split), context.lane(), pid)
                else:
                    rt.push_to_aiv(item, split_code(split), 0, pid)
            return
        copies = _copies(tile, count)
        if name == "tile.tpush_to_aic":
            rt.push_many_to_aic(copies, split_code(split), context.lane(), pid, count)
        else:
            rt.push_many_to_aiv(copies, split_code(split), pid)

    def _pop(self, name: str, count: int, *, split: Any = 0, id: Any = 0, _rtype: Any = None, **_kw: Any) -> Batch:
        rt = get_runtime()
        pid = int(id or 0)
        if name == "tile.tpop_from_aic":
            got = rt.pop_many_from_aic(split_code(split), context.lane(), pid, count)
        else:
            got = rt.pop_many_from_aiv(split_code(split), pid, count)
        shape = None if _rtype is None or _rtype.shape is None else tuple(_rtype.shape)
        if sanitizer.undefined_in(got):  # kept apart: see Batch
            return Batch(items=[x if shape is None or x.shape == shape else fit_shape(x, shape) for x in got], undefined=True)
        view = parts_view(got)
        if view is not None and (shape is None or view.shape[1:] == shape):
            return Batch(t=view)  # the peer pushed them at once: one view of its buffer
        b = Batch(items=list(got) if shape is None or all(t.shape == shape for t in got) else [fit_shape(t, shape) for t in got])
        b.stacked()
        return b


def _copies(tile: Any, count: int) -> Callable[[], Any]:
    """Fresh copies of what ``count`` pushes of ``tile`` (a :class:`Batch` or one tile for every
    iteration) queue: one buffer for all of them, its rows the tiles (queued as one run,
    :class:`.crosscore.Fifo`), or a list of tiles where they carry a valid region."""

    def make() -> Any:
        if isinstance(tile, Batch):
            t = tile.stacked()
            if t is not None:
                return t.clone()
            return [with_valid(x.clone(), get_valid(x)) for x in tile.all()]
        valid = get_valid(tile)
        rows = tile.unsqueeze(0).expand((count,) + tuple(tile.shape)).clone()  # half of what ``repeat`` costs
        return rows if valid is None else [with_valid(x, valid) for x in rows.unbind(0)]

    return make


def _strides_apart(offs: list[Any], shape: tuple[int, ...]) -> bool:
    """Whether one offset moves by at least the window's extent each iteration (the same step every
    time) and the others stay: then no two windows overlap."""
    moving = [(d, o.v) for d, o in enumerate(offs) if isinstance(o, Ix) and len(set(o.v)) > 1]
    if len(moving) != 1 or not all(isinstance(o, Ix | int) for o in offs):
        return False
    d, v = moving[0]
    step = v[1] - v[0]
    return abs(step) >= shape[d] and all(v[i + 1] - v[i] == step for i in range(len(v) - 1))


def _disjoint(boxes: list[list[tuple[int, int]]]) -> bool:
    """Whether no two non-empty boxes overlap (one moving axis sorted; small sets pairwise)."""
    boxes = [b for b in boxes if all(hi > lo for lo, hi in b)]
    if len(boxes) < 2:
        return True
    dims = len(boxes[0])
    moving = [d for d in range(dims) if any(b[d] != boxes[0][d] for b in boxes)]
    if len(moving) == 1:
        d = moving[0]
        spans = sorted(b[d] for b in boxes)
        return all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
    if not moving or len(boxes) > 64:
        return False
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            if all(a[0] < b[1] and b[0] < a[1] for a, b in zip(boxes[i], boxes[j], strict=True)):
                return False
    return True


def _moving(sw: Sweep, offs: Any, count: int) -> tuple[int, list[int], int] | None:
    """(axis, offsets at the first iteration, step) when exactly one offset moves, by a constant step."""
    if type(offs) is not list:
        return None
    axis = -1
    first: list[int] = []
    step = 0
    for d, o in enumerate(offs):
        if isinstance(o, Ix):
            vals = o.v[sw.lo : sw.hi]
            if vals.count(vals[0]) == len(vals):
                first.append(vals[0])
                continue
            if axis >= 0:
                return None
            axis = d
            step = vals[1] - vals[0]
            if step == 0 or vals != tuple(range(vals[0], vals[0] + step * len(vals), step)):
                return None
            first.append(vals[0])
        elif type(o) is int:
            first.append(o)
        else:
            return None
    return (axis, first, step) if axis >= 0 else None


def _strided(t: Any, first: list[int], shape: list[int], axis: int, count: int) -> Any:
    """The ``count`` windows of ``t`` of ``shape`` from ``first``, side by side along ``axis``
    (each step one window), as a ``[count, *shape]`` view; None when one leaves ``t``."""
    if t.dim() != 2 or len(shape) != 2 or len(first) != 2:
        return None
    span = list(shape)
    span[axis] *= count
    if any(o < 0 or o + n > size for o, n, size in zip(first, span, t.shape, strict=True)):
        return None
    region = t[first[0] : first[0] + span[0], first[1] : first[1] + span[1]]
    if axis == 0:
        return region.unflatten(0, (count, shape[0]))
    return region.unflatten(1, (count, shape[1])).transpose(0, 1)


def _windows(sw: Sweep, t: Any, offs: Any, shape: list[int], count: int) -> Any:
    """The current chunk's windows of ``t`` at ``offs`` as one ``[count, *shape]`` view, when they sit
    side by side along one axis inside ``t`` (else None: the op runs per iteration)."""
    mv = _moving(sw, offs, count)
    if mv is None or mv[2] != shape[mv[0]]:
        return None
    return _strided(t, mv[1], shape, mv[0], count)


def _ints_list(x: Any) -> list[int] | None:
    if type(x) is not list or not all(type(v) is int for v in x):
        return None
    return x


def _fast_window(sw: Sweep, kernel: Callable[..., Any], name: str, count: int, args: tuple[Any, ...], kw: dict[str, Any]) -> Batch | None:
    if not args or not isinstance(args[0], torch.Tensor) or get_valid(args[0]) is not None:
        return None
    src = args[0]
    if name == "tile.load":
        if len(args) not in (3, 4) or set(kw) - {"target_memory", "_rtype"}:
            return None
        offs, shape = args[1], _ints_list(args[2])
        if shape is None or (len(args) == 4 and args[3] != shape):
            return None
        rt = kw.get("_rtype")
        if rt is not None and rt.shape is not None and len(rt.shape) != len(shape):
            return None
    else:  # tensor.slice / tile.slice: (x, shape, offset)
        if len(args) != 3 or set(kw) - {"_rtype"}:
            return None
        shape, offs = _ints_list(args[1]), args[2]
        if shape is None:
            return None
    view = _windows(sw, src, offs, shape, count)
    if view is None:
        return None
    defined = _following()
    if defined is not None:
        defined.read(view, name)
    if name == "tile.load":
        _sanitized("r", sw, src, offs, shape, count, name)
        window = view
        view = view.clone(memory_format=torch.contiguous_format)  # a load makes fresh tiles
        if defined is not None:
            defined.moved(view, window)
    return Batch(t=view)


def _fast_write(sw: Sweep, kernel: Callable[..., Any], name: str, count: int, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    if set(kw) - {"target_memory"} or len(args) != 3:
        return None
    if name == "tile.store":
        value, offs, dst = args
    else:
        dst, value, offs = args
    if not isinstance(dst, torch.Tensor) or get_valid(dst) is not None:
        return None
    defined = _following()
    if isinstance(value, Batch):
        t = value.stacked()
    elif isinstance(value, torch.Tensor) and defined is None and get_valid(value) is None and value.dim() == 2:
        # the same tile stored at every iteration's window (zeroing a buffer chunk by chunk): the
        # windows side by side take it as one broadcast copy (32 stores of 0.2 ms at hidden 4096)
        t = value.unsqueeze(0).expand(count, *value.shape)
    else:
        return None
    if t is None or t.dim() != 3:
        return None
    view = _windows(sw, dst, offs, list(t.shape[1:]), count)
    if view is None:
        return None
    _sanitized("w", sw, dst, offs, list(t.shape[1:]), count, name)
    if defined is not None:
        defined.moved(view, t)
    view.copy_(t.to(dst.dtype))
    return dst


def _following() -> Any:
    """The run's :class:`.definedness.Definedness` while it follows an undefined buffer, else None.
    A batched load or write then moves the windows' shadows as one iteration's kernel would: a
    window of the loop's own carried tensor can hold undefined elements though the loop's reads did
    not (``Sweep.ready`` looks at those only): a read-modify-write of an uninitialised accumulator."""
    san = sanitizer.active()
    return san.defined if san is not None and san.defined.shadows else None


def _sanitized(kind: str, sw: Sweep, t: Any, offs: Any, shape: list[int], count: int, op: str) -> None:
    """The sanitizer sees the ``count`` windows of a sweep as one read or write of their region."""
    san = sanitizer.active()
    if san is None:
        return
    mv = _moving(sw, offs, count)
    if mv is None:
        return
    axis, first, _step = mv
    span = list(shape)
    span[axis] *= count
    san.access(kind, t, first, span, op)


_ELEMENTWISE = {
    f"{p}.{o}"
    for p in ("tile", "tensor")
    for o in ("add", "sub", "mul", "div", "maximum", "minimum", "adds", "subs", "muls", "divs", "maximums", "minimums")
}
# one value in, one value out, element by element (exec.kernels.elementwise's unary kernels and the
# cast): the same on a stacked batch as on each tile
_UNARY = {
    f"{p}.{o}"
    for p in ("tile", "tensor")
    for o in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "recip", "relu", "not", "sin", "cos", "cast")
}
# a tile and a per-row ([M, 1]) or per-column ([1, N]) vector: broadcast over the batch only when the
# vector is spelt that way (the kernel reshapes other spellings from the tile's own shape)
_EXPANDS = {
    f"{p}.{side}_expand_{o}": side
    for p in ("tile", "tensor")
    for side in ("row", "col")
    for o in ("add", "sub", "mul", "div", "max", "min")
}
_MATMULS = {"tile.matmul", "tensor.matmul"}


def _fast_expand(sw: Sweep, kernel: Callable[..., Any], name: str, count: int, args: tuple[Any, ...], kw: dict[str, Any]) -> Batch | None:
    if len(args) != 2 or kw:
        return None
    vec = args[1].stacked() if isinstance(args[1], Batch) else args[1]
    if not isinstance(vec, torch.Tensor):
        return None
    shape = vec.shape[1:] if isinstance(args[1], Batch) else vec.shape
    if len(shape) != 2 or (shape[1] != 1 if _EXPANDS[name] == "row" else shape[0] != 1):
        return None
    return _fast_stacked(sw, kernel, name, count, args, kw)


def _fast_stacked(sw: Sweep, kernel: Callable[..., Any], name: str, count: int, args: tuple[Any, ...], kw: dict[str, Any]) -> Batch | None:
    """The kernel once on the stacked tiles (torch broadcasts over the iteration axis)."""
    call = []
    rank = None
    for a in args:
        if isinstance(a, Batch):
            t = a.stacked()
            if t is None:
                return None
            rank = t.dim() - 1 if rank is None else rank
            call.append(t)
        elif isinstance(a, torch.Tensor):
            if get_valid(a) is not None:
                return None
            call.append(a)
        elif isinstance(a, Ix) or type(a) in (list, tuple):
            return None
        else:
            call.append(a)
    if rank is None or any(_varies(v) for v in kw.values()):
        return None
    if any(isinstance(a, torch.Tensor) and not isinstance(b, Batch) and a.dim() > rank for a, b in zip(call, args, strict=True)):
        return None
    r = kernel(*call, **kw)
    if not isinstance(r, torch.Tensor) or r.dim() != rank + 1 or r.shape[0] != count:
        return None
    return Batch(t=r)


def _fast_matmul(sw: Sweep, kernel: Callable[..., Any], name: str, count: int, args: tuple[Any, ...], kw: dict[str, Any]) -> Batch | None:
    """The iterations' products as one batched matmul, which on this machine's BLAS gives each
    iteration's own product bit for bit unless a side is a vector (one row or one column: there
    ``matmul`` takes the matrix-vector path, which sums in another order): those run iteration by
    iteration. BLAS makes no such promise, so the first batch of each operand layout is computed
    both ways and compared; a layout where they differ runs iteration by iteration from then on."""
    key = (
        name,
        count,
        *(
            (a.shape, a.stride(), a.dtype)
            for a in (x.stacked() if isinstance(x, Batch) else x for x in args)
            if isinstance(a, torch.Tensor)
        ),
    )
    key += tuple(repr(kw.get(k)) for k in ("a_trans", "b_trans"))
    exact = _MATMUL_EXACT.get(key)
    if exact is False:
        return None
    r = _fast_stacked(sw, kernel, name, count, args, kw)
    if r is None or r.t is None or r.t.dim() != 3 or 1 in r.t.shape[1:]:
        return None
    if exact is None:
        want = [kernel(*sw._at(args, i), **{k: sw._at(v, i) for k, v in kw.items()}) for i in range(count)]
        exact = all(isinstance(w, torch.Tensor) and torch.equal(r.t[i], w) for i, w in enumerate(want))
        if len(_MATMUL_EXACT) > 4096:
            _MATMUL_EXACT.clear()
        _MATMUL_EXACT[key] = exact
        return r if exact else Batch(items=want)
    return r


# (op, count, operand shapes, strides and dtypes, transposes) -> whether the batched product is each iteration's
_MATMUL_EXACT: dict[tuple[Any, ...], bool] = {}


def _fast_move(sw: Sweep, kernel: Callable[..., Any], name: str, count: int, args: tuple[Any, ...], kw: dict[str, Any]) -> Batch | None:
    return args[0] if args and isinstance(args[0], Batch) and not _varies(args[1:]) else None


_FAST: dict[str, Callable[[Sweep, Callable[..., Any], str, int, tuple[Any, ...], dict[str, Any]], Any]] = {
    **{op: _fast_window for op in WINDOWS},
    **{op: _fast_write for op in WRITES},
    **{op: _fast_stacked for op in _ELEMENTWISE | _UNARY},
    **{op: _fast_expand for op in _EXPANDS},
    **{op: _fast_matmul for op in _MATMULS},
    "tile.move": _fast_move,
}
