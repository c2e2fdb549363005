"""The sanitizer on a loop whose tasks could run as one batch: the tasks between the first ones and
the last run unwatched, their records made from the first ones.

A loop of :func:`pypto_lsp.analysis.task_batch_plan.plan_task_loops` that qualifies (and whose
kernels use the scalars that move with the task only as offsets of windows: ``scalar_uses`` empty)
runs the same kernels on the same path in every task, each task's windows of every global buffer
those of the first moved by a fixed step per task. Watching every op of every task (the
sanitizer's per-access boxes, the definedness wrappers, the pipe rings) costs ~20 % of a run of the
hidden-4096 block, and tells nothing the first tasks do not. So, per run of the loop:

* tasks 0, 1 and 2 and the last run watched, as every task did before;
* task 1's records less task 0's give each buffer's step (each box moved by the same vector, the
  same boxes otherwise), and task 2's must be task 0's moved by two steps;
* a task between runs with the sanitizer switched off (:func:`.sanitizer.suspend`): its runtime
  dependencies are found as for any task (from its arguments), and its records are task 0's moved by
  its index times the step. It runs watched instead when a window it would read holds an undefined
  element, or a window it writes is known only as a flat range of a buffer with undefined elements;
  after it runs, the windows it wrote are defined, as a watched write would leave them (no task of
  the loop runs unwatched once a watched one left an undefined element in a window it wrote).

An unwatched task of a Group whose AIV kernel runs on a dual-dispatch no-split pair may leave lane 1
out (:func:`.crosscore.run_group`): when, in the watched tasks 0 to 2, that lane wrote no global
buffer and met no lane (``aic_gather``, ``aiv_shard``: :func:`.context.note_lane_effect`), and task 2
met no memory hazard. The cube keeps lane 0's tile of each pair it pops, so lane 1's pushes are
never read, and the same path every task means it would do nothing else in between; its memory
frames would run values only from task 3 on (:meth:`.memory.Session.frame`: the call before met no
hazard). Its call of the kernel is counted as made. SplitVectorKernel's idle lane (every tile
``valid_shape=[0, 0]``) was ~40 % of each qwen3 MLP task's vector work. A loop of the plan whose call
has no ``arg_directions`` (before DeriveCallDirections: no task records) runs every task watched;
its middle tasks may still leave the idle lane out while no buffer holds an undefined element
(nothing checks that lane's reads against the shadows first). Not in traced runs (the
localisation and the debugger step through every lane).

What the unwatched tasks are not checked for they cannot do differently from the watched ones: a
window out of bounds (each window's offset is affine in the task index, so its extremes are at the
first and the last task), a full pipe ring or a deadlock (the same path each task), an undefined
value (their reads are checked against the shadows first). Races and the task graph see every task.
Off in a reordered run (the sanitizer's other-order run), in ``strict`` mode and on multi-rank runs.
``tests/conformance/test_task_watch.py`` runs every fixture dump with such a loop both ways and
requires the same records, findings and task graph.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..analysis.task_sweep_plan import WATCHED_FIRST
from . import context

# (no import of .sanitizer, which imports this module: its Sanitizer, tasks and boxes are passed
# in, and typed Any here)

__all__ = ["LoopWatch", "UNWATCHED", "unwatched", "watched_loops"]

# the switch (tests turn it off to compare): False runs every task watched
UNWATCHED = True
_FIRST = WATCHED_FIRST  # tasks 0, 1, 2 watched: the step from 0 and 1, checked on 2 (a watched task sweep runs them as written)

Records = dict[int, dict[str, list[Any]]]  # argument index -> kind -> boxes


def watched_loops(program: Any, sites: list[Any]) -> dict[int, tuple[int, bool]]:
    """Task site index -> (the trip count of its loop, whether its middle tasks can run unwatched)
    for the loops of the plan. A loop whose call has no ``arg_directions`` (before
    DeriveCallDirections the sanitizer keeps no task records) runs every task watched; only its
    groups' idle lane 1 may be left out."""
    from ..analysis.task_batch_plan import plan_task_loops

    by_line = {s.line: s for s in sites}
    out: dict[int, tuple[int, bool]] = {}
    if not by_line:
        return out
    for p in plan_task_loops(program, set(by_line), _FIRST + 2):
        if p.declined is None and not p.scalar_uses:
            site = by_line[p.call_line]
            out[site.index] = (p.trips, site.directions is not None)
    return out


@dataclass(slots=True)
class LoopWatch:
    """One such loop's state in a run: where in a run of the loop the next task is, and its records."""

    trips: int
    records: bool = True  # its tasks have records (arg_directions): the middle ones may run unwatched
    count: int = 0  # tasks of this site so far
    last: int = -1  # the sanitizer's task index of the previous one
    base: Records | None = None  # task 0's records of this run of the loop
    step: dict[tuple[int, str], tuple[int, ...]] | None = None
    ok: bool = False  # this run of the loop can have unwatched tasks
    unwatched: int = 0  # how many ran so (for the benchmarks and tests)
    mismatched: list[int] = field(default_factory=list)  # watched tasks whose records were not the predicted ones
    # AIV lane 1 of the group did nothing another kernel or the output sees in the watched tasks 0-2,
    # and task 2 met no memory hazard: the unwatched tasks may leave that lane out
    idle_lane: bool = False

    def position(self, t: Any) -> int:
        """``t``'s place in its run of the loop (task ``count % trips``, the runs one after another)."""
        pos = self.count % self.trips
        if pos and self.last != t.index - 1:
            self.ok = False  # another task came in between: not a run of this loop as planned
        self.count += 1
        self.last = t.index
        return pos

    def may_skip(self, pos: int) -> bool:
        return UNWATCHED and self.ok and self.records and _FIRST <= pos < self.trips - 1

    def lane_skip(self, san: Any, pos: int, unwatched: bool) -> Any:
        """The offer to leave a middle task's idle lane 1 out (:func:`.context.lane_skip_offered`), or
        None. With records, only to a task that runs unwatched (its reads were checked against the
        shadows first: :meth:`predicted`); without, only while no buffer holds an undefined element."""
        if not (UNWATCHED and self.idle_lane and _FIRST <= pos < self.trips - 1):
            return None
        return san.lane_skip if (unwatched if self.records else not san.defined.shadows) else None

    def after(self, san: Any, t: Any, pos: int, quiet_lane: bool = False, calm: bool = False) -> None:
        """A watched task ran: learn from (or check) its records. ``quiet_lane``: its AIV lane 1 wrote
        no global buffer and met no lane (:func:`.context.note_lane_effect`); ``calm``: the memory
        model met no hazard while it ran."""
        self.idle_lane = quiet_lane and (self.idle_lane or pos == 0) and (calm or pos < _FIRST - 1)
        if not self.records:
            return
        rec = _records(t)
        if rec is not None and _wrote_undefined(san, t):
            rec = None  # (an unwatched task's writes are taken as defined: not for this loop)
        if pos == 0:
            self.base, self.step = rec, None
            self.ok = rec is not None and not t.parts
            return
        if not self.ok or rec is None or self.base is None:
            self.ok = False
            return
        if pos == 1:
            self.step = _step(self.base, rec)
            self.ok = self.step is not None
            return
        if self.step is None or rec != _moved(self.base, self.step, pos) or t.parts:
            if pos >= _FIRST:
                self.mismatched.append(t.index)
            self.ok = False

    def predicted(self, san: Any, t: Any, args: tuple[Any, ...], pos: int) -> dict[int, dict[str, list[Any]]] | None:
        """Task ``pos``'s records by buffer (root key), or None when it must run watched (an undefined
        element in a window it reads, a write known only as a flat range of a buffer with undefined elements)."""
        assert self.base is not None and self.step is not None
        out: dict[int, dict[str, list[Any]]] = {}
        for i, kinds in _moved(self.base, self.step, pos).items():
            a = args[i] if i < len(args) else None
            if not isinstance(a, torch.Tensor):
                return None
            root = san._root(a)
            if _holds_undefined(san, root):
                for kind, boxes in kinds.items():
                    for b in boxes:
                        win = _window(root, b)
                        if win is None or (kind == "r" and san.defined.undefined(win)):
                            return None
            out[root.key] = kinds
        return out

    def run(
        self, san: Any, t: Any, pos: int, call: Callable[..., Any], args: tuple[Any, ...], records: dict[int, dict[str, list[Any]]]
    ) -> Any:
        """Run ``t`` unwatched and give it ``records``; the windows it wrote are defined after."""
        outer = san.current
        san.current = t
        # its group may leave out AIV lane 1, idle in the watched tasks: the same path every task
        # (the plan), so it would be idle here too; its memory frames would run values only (task 2
        # met no hazard: exec.memory's proof); the cube never reads a dual-dispatch lane 1's pushes
        try:
            with context.lane_skip_offered(self.lane_skip(san, pos, unwatched=True)):
                out = unwatched(san, lambda: call(*args))
        finally:
            san.current = outer
        self._take(san, t, records)
        return out

    def sweep_ready(self, san: Any, args: tuple[Any, ...], n: int) -> bool:
        """A watched task sweep (``analysis.task_sweep_plan.TaskSweep.watched``) may run the next ``n``
        tasks, the middle ones of this run of the loop, as one: each would run unwatched now
        (:meth:`predicted` finds what it needs: the step learnt, every window it reads defined).
        Checked before any of them runs; their runs only define windows (:meth:`take`), so what holds
        for each now holds at its turn. ``args``: the first one's (its buffers: every task's)."""
        if not (UNWATCHED and self.ok and self.records and self.base is not None and self.step is not None):
            return False
        pos = self.count % self.trips
        if pos != _FIRST or pos + n != self.trips - 1:
            return False
        touched = [args[i] if i < len(args) else None for i in self.base]
        if all(isinstance(a, torch.Tensor) and not _holds_undefined(san, san._root(a)) for a in touched):
            return True  # (no undefined element in the buffers they touch: no window to look at)
        return all(self.predicted(san, None, args, k) is not None for k in range(pos, pos + n))

    def take(self, san: Any, t: Any, args: tuple[Any, ...]) -> None:
        """``t``, a middle task a watched sweep ran (:meth:`sweep_ready`), submitted after the sweep:
        its place in the loop and the records and defined windows its unwatched run would leave."""
        pos = self.position(t)
        records = self.predicted(san, t, args, pos) if self.ok and _FIRST <= pos < self.trips - 1 else None
        if records is None:  # (sweep_ready said otherwise: a run of the loop as planned never gets here)
            raise RuntimeError(f"internal: task {t.index} of a swept loop has no records to take")
        self._take(san, t, records)

    def _take(self, san: Any, t: Any, records: dict[int, dict[str, list[Any]]]) -> None:
        t.access.update(records)  # (made for this task by predicted: its own dicts and lists)
        for key, kinds in records.items():
            root = san.roots[key]
            if _holds_undefined(san, root):  # (nothing undefined left: nothing to clear)
                for b in kinds.get("w", ()):
                    win = _window(root, b)
                    if win is not None:
                        san.defined.clear(win)
        self.unwatched += 1


def unwatched(san: Any, run: Callable[[], Any]) -> Any:
    """``run()`` with the sanitizer switched off (:func:`.sanitizer.suspend`): no access recorded, the
    kernels' definedness wrappers carrying nothing."""
    saved = san.defined.suspend()  # the sanitizer's own switch (sanitizer.suspend)
    san.defined.paused = True
    try:
        return run()
    finally:
        san.defined.paused = False
        san.defined.resume(saved)


def _holds_undefined(san: Any, root: Any) -> bool:
    """``root``'s buffer has undefined elements (a shadow with any set)."""
    if not san.defined.shadows:
        return False
    entry = san.defined.entry(root.tensor)
    return entry is not None and entry.count > 0


def _wrote_undefined(san: Any, t: Any) -> bool:
    """``t`` left an undefined element in a window it wrote (an undefined tile stored)."""
    for key, kinds in t.access.items():
        root = san.roots[key]
        if not _holds_undefined(san, root):
            continue
        for b in kinds.get("w", ()):
            win = _window(root, b)
            if win is None or san.defined.undefined(win):
                return True
    return False


def _records(t: Any) -> Records | None:
    """``t``'s records by argument index (None: it touched a buffer that is no argument of its call)."""
    out: Records = {}
    for key, kinds in t.access.items():
        i = t.args.get(key)
        if i is None:
            return None
        out[i] = {k: list(v) for k, v in kinds.items() if v}
    return out


def _step(a: Records, b: Records) -> dict[tuple[int, str], tuple[int, ...]] | None:
    """How far each argument's boxes moved from ``a`` to ``b`` (every box of one kind by the same vector)."""
    if a.keys() != b.keys():
        return None
    out: dict[tuple[int, str], tuple[int, ...]] = {}
    for i, kinds in a.items():
        if kinds.keys() != b[i].keys():
            return None
        for kind, boxes in kinds.items():
            other = b[i][kind]
            if len(other) != len(boxes):
                return None
            d: tuple[int, ...] | None = None
            for x, y in zip(boxes, other, strict=True):
                if x.flat != y.flat or len(x.lo) != len(y.lo):
                    return None
                dx = tuple(q - p for p, q in zip(x.lo, y.lo, strict=True))
                if dx != tuple(q - p for p, q in zip(x.hi, y.hi, strict=True)) or (d is not None and dx != d):
                    return None
                d = dx
            out[(i, kind)] = d or ()
    return out


def _moved(base: Records, step: dict[tuple[int, str], tuple[int, ...]], n: int) -> Records:
    out: Records = {}
    for i, kinds in base.items():
        out[i] = {}
        for kind, boxes in kinds.items():
            d = step.get((i, kind), ())
            if not any(d):
                out[i][kind] = list(boxes)
                continue
            out[i][kind] = [
                type(b)(
                    tuple(v + n * s for v, s in zip(b.lo, d, strict=True)), tuple(v + n * s for v, s in zip(b.hi, d, strict=True)), b.flat
                )
                for b in boxes
            ]
    return out


def _window(root: Any, b: Any) -> torch.Tensor | None:
    """The elements of ``b`` as a view of ``root``'s tensor (None: a flat range, not a window)."""
    if b.flat or not root.contiguous:
        return None
    return root.tensor[tuple(slice(lo, hi) for lo, hi in zip(b.lo, b.hi, strict=True))]
