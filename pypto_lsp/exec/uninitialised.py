"""The sanitizer's findings about undefined values: what :mod:`.definedness` follows, said on the
line that created the buffer.

* ``uninitialised``: an undefined element reached something that matters (an output, a returned
  value, a scalar read back): one finding for the buffer it came from, and one for each buffer whose
  undefined values were written into it, and into those in turn (the chain back to the cause);
* ``undefined-read`` (``--sanitize strict`` only, information): a buffer whose undefined elements
  were read but reached nothing of the kind.

Each buffer is reported once, by its creation line. :class:`~.sanitizer.Sanitizer` owns one
:class:`UndefinedValues` per run and hands it its ``add``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .definedness import Shadow

__all__ = ["UndefinedValues"]


def _read_first(first: tuple[int, str] | None) -> str:
    """The part of a message that says where the buffer is read first."""
    return f" is read first at line {first[0]} ({first[1]})" if first else " is read"


def _region(sh: torch.Tensor) -> str:
    """The bounding box of the undefined elements, ``[lo:hi, ...]`` ("" when ``sh`` is a scalar)."""
    nz = sh.nonzero()
    if not sh.dim() or not len(nz):
        return ""
    lo, hi = nz.min(0).values.tolist(), nz.max(0).values.tolist()
    return "[" + ", ".join(f"{a}:{b + 1}" for a, b in zip(lo, hi, strict=True)) + "]"


def _path(e: Shadow, *after: int | None) -> list[int]:
    """The lines a finding relates: the first read, the lines the values flowed through, then
    ``after`` (where they were written on, where they ended); each once, in that order."""
    first = [e.first_read[0]] if e.first_read else []
    return list(dict.fromkeys(x for x in (*first, *e.path, *after) if x))


class UndefinedValues:
    """The undefined-value findings of one run. ``add`` is the sanitizer's (kind, line, name,
    other_line, other_name, message, **extra)."""

    def __init__(self, add: Callable[..., None]) -> None:
        self._add = add
        self.reported: set[int] = set()  # creation lines already reported
        # strict: the first read of each undefined buffer, by creation line (reported at the end of
        # the run if no undefined value of it reached anything that matters)
        self.reads: dict[int, tuple[Shadow, int, str, int]] = {}

    def read(self, e: Shadow, line: int, op: str, count: int) -> None:
        """``Definedness.on_read``: ``count`` undefined elements of ``e``'s buffer read at ``line``."""
        self.reads.setdefault(e.line, (e, line, op, count))

    def _uninitialised(self, e: Shadow, at: int | None, message: str, related: list[int], region: str) -> None:
        first = e.first_read
        name = e.name or "tensor"
        self._add(
            "uninitialised",
            e.line,
            name,
            first[0] if first else at,
            first[1] if first else "read",
            f"'{name}' is created without init_value and{_read_first(first)}{message}",
            tensor=e.name,
            region=region,
            related=related,
        )

    def reached(self, e: Shadow, where: str, sh: torch.Tensor, line: int | None) -> None:
        """``Definedness.report``: undefined elements of ``e``'s buffer (``sh``) reached ``where``
        (at ``line``, for a scalar read back)."""
        if e.line in self.reported:
            return
        self.reported.add(e.line)
        n = int(sh.sum())
        region = _region(sh)
        related = _path(e, line)
        via = f", flows through line{'s' if len(related) > 1 else ''} {', '.join(map(str, related))}" if related else ""
        # undefined values of other buffers written into this one: which elements hold whose is not told
        # apart (one origin per buffer), so the finding says so and each of them gets its own finding
        also = "".join(
            f"; undefined values of '{o.name or 'tensor'}' (created at line {o.line}) were written into it at line {at}"
            for o, at in e.inflows
        )
        held = f"{n} element{'s' if n != 1 else ''}{' ' + region if region else ''} hold whatever the buffer held on the NPU"
        self._uninitialised(e, line, f"{via} and reaches {where}: {held}{also}", related, region)
        # each buffer whose undefined values were written into this one, and into those in turn (a
        # weight's values stored into a scratch buffer that a later kernel copies into another): every
        # origin on the way gets its finding, the buffer it was written into named
        todo = [(e, related, o, at) for o, at in e.inflows]
        while todo:
            into, into_rel, o, at = todo.pop(0)
            if o.line in self.reported:
                continue
            self.reported.add(o.line)
            o_rel = _path(o, at, *into_rel)
            self._uninitialised(
                o,
                at,
                f"; its undefined values are written into '{into.name or 'tensor'}' at line {at}, which reaches {where} "
                f"(flows through lines {', '.join(map(str, o_rel))})",
                o_rel,
                region,
            )
            todo.extend((o, o_rel, oo, o_at) for oo, o_at in o.inflows)

    def reads_to_nowhere(self) -> None:
        """strict: the undefined reads no finding came of, as information (they change nothing the
        device computes: the paged-attention accumulators loaded on the first block)."""
        for created, (e, line, op, count) in sorted(self.reads.items()):
            if created in self.reported:
                continue
            name = e.name or "tensor"
            self._add(
                "undefined-read",
                created,
                name,
                line or None,
                op,
                f"'{name}' is created without init_value and line {line} ({op}) reads {count} of its elements before "
                f"anything wrote them; no such value reaches an output, a returned value, a branch, an index or a "
                f"scalar read back (information: --sanitize strict)",
                tensor=name,
                related=[line] if line else [],
            )
