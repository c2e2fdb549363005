"""Boxes of a global buffer's elements: what the sanitizer records of each access and compares.

A :class:`Box` is ``[lo, hi)`` per dimension of a buffer's root tensor, or a range of its flat
storage (a view whose strides no box of the root describes). :class:`Root` is the buffer, and
converts a box to flat storage where two boxes of different kinds meet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["Box", "Root", "joined", "bounding", "overlap", "covers", "intersect"]


@dataclass(slots=True, frozen=True)
class Box:
    """Elements ``[lo, hi)`` per dimension of a buffer's root tensor, or of its flat storage (``flat``)."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]
    flat: bool = False

    def empty(self) -> bool:
        for lo, h in zip(self.lo, self.hi):
            if h <= lo:
                return True
        return False

    def text(self) -> str:
        if self.flat:
            return f"elements [{self.lo[0]}, {self.hi[0]})"
        return "[" + ", ".join(f"{lo}:{h}" for lo, h in zip(self.lo, self.hi, strict=True)) + "]"


def joined(a: Box, b: Box) -> Box | None:
    """``a`` and ``b`` as one box when their union is exactly one (the same but for one dimension,
    where they meet or overlap: a tile loop's windows along a row), else None."""
    if a.flat != b.flat or len(a.lo) != len(b.lo):
        return None
    d = -1
    for i, (a0, a1, b0, b1) in enumerate(zip(a.lo, a.hi, b.lo, b.hi, strict=True)):
        if a0 != b0 or a1 != b1:
            if d >= 0 or a1 < b0 or b1 < a0:
                return None
            d = i
    if d < 0:
        return a
    return Box(a.lo[:d] + (min(a.lo[d], b.lo[d]),) + a.lo[d + 1 :], a.hi[:d] + (max(a.hi[d], b.hi[d]),) + a.hi[d + 1 :], a.flat)


def bounding(boxes: Sequence[Box]) -> Box:
    rank = len(boxes[0].lo)
    return Box(
        tuple(min(b.lo[d] for b in boxes) for d in range(rank)),
        tuple(max(b.hi[d] for b in boxes) for d in range(rank)),
        boxes[0].flat,
    )


@dataclass(slots=True)
class Root:
    """A global buffer: the tensor the run made or was given, kept alive so its address is not reused."""

    key: int
    tensor: torch.Tensor
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    contiguous: bool
    line: int = 0  # where it was created (0: an entry argument)
    name: str = ""
    manual_dep: bool = False

    def to_flat(self, b: Box) -> Box:
        if b.flat:
            return b
        lo = sum(i * s for i, s in zip(b.lo, self.strides, strict=True))
        last = sum((h - 1) * s for h, s in zip(b.hi, self.strides, strict=True))
        return Box((lo,), (last + 1,), True)


def overlap(root: Root, a: Box, b: Box) -> bool:
    if a.flat != b.flat:
        a, b = root.to_flat(a), root.to_flat(b)
    return all(x0 < y1 and y0 < x1 for x0, x1, y0, y1 in zip(a.lo, a.hi, b.lo, b.hi, strict=True))


def covers(root: Root, a: Box, b: Box) -> bool:
    """``a`` contains ``b``."""
    if a.flat != b.flat:
        a, b = root.to_flat(a), root.to_flat(b)
    return all(x0 <= y0 and y1 <= x1 for x0, x1, y0, y1 in zip(a.lo, a.hi, b.lo, b.hi, strict=True))


def intersect(root: Root, a: Box, b: Box) -> Box:
    if a.flat != b.flat:
        a, b = root.to_flat(a), root.to_flat(b)
    return Box(tuple(max(x, y) for x, y in zip(a.lo, b.lo, strict=True)), tuple(min(x, y) for x, y in zip(a.hi, b.hi, strict=True)), a.flat)
