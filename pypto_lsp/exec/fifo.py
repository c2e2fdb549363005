"""A pipe's FIFO between the cube and the vector cores (:mod:`.crosscore`'s queues): tiles in
the order they were pushed, where one bulk push of a batched loop (:mod:`.sweep`, :mod:`.pipebatch`)
may queue its tiles as one run, the rows of one buffer, and a bulk pop may get that buffer back
whole (:class:`Tiles`, :func:`parts_view`) instead of a tensor per tile."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from .values import get_valid

__all__ = ["Fifo", "Tiles", "parts_view", "popped"]


def parts_view(items: Any) -> torch.Tensor | None:
    """``items``, popped in a row from one FIFO, as one ``[n, ...]`` view of the buffer one bulk
    push queued them from (``push_many_*``: the parts of one fresh buffer, in a row, nothing
    between), or None. A bulk pop that took one bulk push's tiles whole has that buffer already
    (:class:`Tiles`); else the first and the last are ``n - 1`` parts apart in one buffer, so the
    ones between are that push's too: O(1), whatever ``n``."""
    if type(items) is Tiles:
        return items.view
    n = len(items)
    if n < 2:
        return None
    first, last = items[0], items[-1]
    base = first._base
    if base is None or last._base is not base or base.dim() != first.dim() + 1 or base.shape[1:] != first.shape:
        return None
    if base.stride()[1:] != first.stride() or get_valid(first) is not None or get_valid(last) is not None:
        return None
    row = int(base.stride(0))
    if row <= 0:
        return None
    i0, rem = divmod(int(first.storage_offset()) - int(base.storage_offset()), row)
    if rem or last.storage_offset() != first.storage_offset() + (n - 1) * row or i0 + n > base.shape[0]:
        return None
    return base[i0 : i0 + n]


class Tiles(Sequence[torch.Tensor]):
    """Tiles a bulk pop took at once that are rows of one buffer a bulk push queued: a sequence of
    those rows, and ``view``, the ``[n, ...]`` view of them all (no tile is made until one is asked for)."""

    __slots__ = ("view",)

    def __init__(self, view: torch.Tensor) -> None:
        self.view = view

    def __len__(self) -> int:
        return int(self.view.shape[0])

    def __getitem__(self, i: Any) -> Any:  # type: ignore[override]
        if isinstance(i, slice):
            return list(self.view[i].unbind(0))
        return self.view[i]

    def __iter__(self) -> Iterator[torch.Tensor]:
        return iter(self.view.unbind(0))


class _Run:
    """The tiles of one bulk push still queued: rows ``i`` on of ``buf``."""

    __slots__ = ("buf", "i")

    def __init__(self, buf: torch.Tensor) -> None:
        self.buf = buf
        self.i = 0


class _Rows:
    """Rows of a run a bulk pop took at once (a piece of its result, before :func:`popped`)."""

    __slots__ = ("view",)

    def __init__(self, view: torch.Tensor) -> None:
        self.view = view


class Fifo:
    """One pipe's FIFO: tiles in the order they were pushed. A bulk push may queue its tiles as one
    run, the rows of one buffer: a pop takes a row of it as a tile, and a bulk pop that takes the
    run whole gets the buffer itself (:class:`Tiles`). Making every row a tensor on both sides
    cost ~1 µs a tile (an MLP task of the hidden-4096 block moves ~300 tiles)."""

    __slots__ = ("_segs", "_n")

    def __init__(self) -> None:
        self._segs: deque[Any] = deque()  # tiles and runs
        self._n = 0  # tiles queued

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Any:  # the queued tiles (the debugger's view of a pipe)
        for s in self._segs:
            if type(s) is _Run:
                yield from s.buf[s.i :].unbind(0)
            else:
                yield s

    def append(self, t: torch.Tensor) -> None:
        self._segs.append(t)
        self._n += 1

    def extend(self, tiles: Any) -> None:
        """Queue ``tiles``: tiles, or one ``[n, ...]`` tensor whose rows are the tiles (a run)."""
        if isinstance(tiles, torch.Tensor):
            if tiles.shape[0]:
                self._segs.append(_Run(tiles))
                self._n += int(tiles.shape[0])
            return
        tiles = list(tiles)
        self._segs.extend(tiles)
        self._n += len(tiles)

    def popleft(self) -> torch.Tensor:
        s = self._segs[0]
        if type(s) is _Run:
            t = s.buf[s.i]
            s.i += 1
            if s.i == s.buf.shape[0]:
                self._segs.popleft()
        else:
            self._segs.popleft()
            t = s
        self._n -= 1
        return t

    def take(self, k: int, out: list[Any] | None) -> None:
        """Pop ``k`` tiles (at most what is queued) onto ``out`` (None: drop them), a run's rows
        taken together as one piece (:func:`popped` makes the pop's result of the pieces)."""
        while k > 0 and self._segs:
            s = self._segs[0]
            if type(s) is _Run:
                size = int(s.buf.shape[0])
                m = min(k, size - s.i)
                if out is not None:
                    out.append(_Rows(s.buf if m == size else s.buf[s.i : s.i + m]))
                s.i += m
                if s.i == size:
                    self._segs.popleft()
            else:
                m = 1
                self._segs.popleft()
                if out is not None:
                    out.append(s)
            k -= m
            self._n -= m


def popped(pieces: list[Any]) -> Sequence[torch.Tensor]:
    """A bulk pop's tiles: :class:`Tiles` when they are rows of one run, else a list of tiles."""
    if len(pieces) == 1 and type(pieces[0]) is _Rows:
        return Tiles(pieces[0].view)
    out: list[torch.Tensor] = []
    for p in pieces:
        if type(p) is _Rows:
            out.extend(p.view.unbind(0))
        else:
            out.append(p)
    return out
