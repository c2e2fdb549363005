"""The race analysis's index: per global buffer, the accesses still able to race, bucketed in a grid.

Tasks are visited in program order. Each new task's boxes are looked up in the buffer's grid (cells
the size of the first box seen: a tile loop's tiles fall in one cell each), reads only against
writes, writes against both, so a task costs the few accesses near its own. An access is dropped
once a later write covers it and is ordered after it (a later task racing with the dropped access
races with that write too, which is reported instead), and a task's lookup stops at its first race
on the buffer. The analysis is near-linear in the tasks, where comparing all pairs was quadratic
(2400 tasks on one buffer: seconds instead of minutes), and it stops at the run's deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["AccessIndex", "past"]

_MAX_CELLS = 64  # a box spanning more cells is kept aside and compared with every query
_PRUNE_SCAN = 32  # a write looks back this many accesses per cell for ones it covers and follows


def past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


class _Entry:
    __slots__ = ("task", "kind", "box", "alive", "stamp")

    def __init__(self, task: Any, kind: str, box: Any) -> None:
        self.task = task
        self.kind = kind
        self.box = box
        self.alive = True
        self.stamp = 0  # the last lookup that met it (an entry in several cells is compared once)


class AccessIndex:
    """The live accesses of one buffer (``root``), by kind, in a grid of cells."""

    def __init__(self, root: Any, overlap: Callable[[Any, Any, Any], bool], covers: Callable[[Any, Any, Any], bool]) -> None:
        self.root = root
        self.overlap = overlap
        self.covers = covers
        self.cell: tuple[int, ...] | None = None
        self.grid: dict[str, dict[tuple[int, ...], list[_Entry]]] = {"r": {}, "w": {}}
        self.loose: dict[str, list[_Entry]] = {"r": [], "w": []}  # flat boxes and boxes over many cells
        self.count = 0
        self.limit = 4096  # compact the grid past this many entries
        self.lookups = 0

    def _cells(self, box: Any) -> list[tuple[int, ...]] | None:
        if box.flat:
            return None
        if self.cell is None or len(self.cell) != len(box.lo):
            if self.cell is not None:
                return None
            self.cell = tuple(max(1, h - lo) for lo, h in zip(box.lo, box.hi, strict=True))
        ranges = [range(lo // c, (h - 1) // c + 1) for lo, h, c in zip(box.lo, box.hi, self.cell, strict=True)]
        n = 1
        for r in ranges:
            n *= len(r)
            if n > _MAX_CELLS:
                return None
        out: list[tuple[int, ...]] = [()]
        for r in ranges:
            out = [(*p, i) for p in out for i in r]
        return out

    def _candidates(self, kind: str, box: Any) -> Iterator[_Entry]:
        cells = self._cells(box)
        grid = self.grid[kind]
        if cells is None:  # compare with everything of this kind
            for lst in grid.values():
                yield from lst
        elif len(cells) == 1:
            yield from grid.get(cells[0], ())
        else:
            self.lookups += 1
            stamp = self.lookups
            for c in cells:
                for e in grid.get(c, ()):
                    if e.stamp != stamp:
                        e.stamp = stamp
                        yield e
        yield from self.loose[kind]

    def first_race(self, task: Any, boxes: dict[str, list[Any]], ordered: Callable[[Any, Any], bool]) -> tuple[Any, str, str, Any] | None:
        """The first earlier access racing with ``task``'s ``boxes``: (other task, its kind, ours, our box)."""
        overlap, root = self.overlap, self.root
        for kb, ka in (("r", "w"), ("w", "w"), ("w", "r")):
            qs = boxes.get(kb)
            if not qs or not (self.count and (self.grid[ka] or self.loose[ka])):
                continue
            for q in qs:
                for e in self._candidates(ka, q):
                    if e.alive and e.task is not task and not ordered(e.task, task) and overlap(root, e.box, q):
                        return e.task, ka, kb, q
        return None

    def add(self, task: Any, boxes: dict[str, list[Any]], ordered: Callable[[Any, Any], bool]) -> None:
        """Record ``task``'s accesses; drop the earlier ones its writes cover and follow."""
        for w in boxes.get("w", ()):
            cells = self._cells(w)
            for kind in ("r", "w"):
                lists = [self.grid[kind].get(c, []) for c in cells] if cells is not None else list(self.grid[kind].values())
                for lst in [*lists, self.loose[kind]]:
                    dropped = False
                    for e in lst[-_PRUNE_SCAN:]:
                        if e.alive and e.task is not task and ordered(e.task, task) and self.covers(self.root, w, e.box):
                            e.alive = False
                            dropped = True
                    if dropped:
                        lst[:] = [e for e in lst if e.alive]
        for kind, lst in boxes.items():
            for b in lst:
                e = _Entry(task, kind, b)
                cells = self._cells(b)
                if cells is None:
                    self.loose[kind].append(e)
                else:
                    grid = self.grid[kind]
                    for c in cells:
                        grid.setdefault(c, []).append(e)
                self.count += 1
        if self.count > self.limit:
            self._compact()
            self.limit = max(4096, 2 * self.count)

    def _compact(self) -> None:
        n = 0
        for kind in ("r", "w"):
            for c, lst in list(self.grid[kind].items()):
                live = [e for e in lst if e.alive]
                if live:
                    self.grid[kind][c] = live
                    n += len(live)
                else:
                    del self.grid[kind][c]
            self.loose[kind] = [e for e in self.loose[kind] if e.alive]
            n += len(self.loose[kind])
        self.count = n
