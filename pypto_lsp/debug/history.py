"""The run's events so far (every place it could stop, in order, with its IR line and thread):
where a replay stops for ``stepBack``, ``reverseContinue`` and ``restartFrame``. The run is
deterministic, so going back is running again to an earlier event."""

from __future__ import annotations

import bisect
from array import array

__all__ = ["History"]


class History:
    def __init__(self) -> None:
        self.n_events = 0
        self.event_lines: array[int] = array("i")  # IR line of every event so far
        self.thread_events: dict[int, array[int]] = {}  # thread id -> its events

    def add(self, tid: int, line: int) -> int:
        """Record an event; its number."""
        n = self.n_events
        self.n_events += 1
        self.event_lines.append(line)
        hist = self.thread_events.get(tid)
        if hist is None:
            hist = self.thread_events[tid] = array("i")
        hist.append(n)
        return n

    def _at(self, event: int) -> int:
        return event if event >= 0 else self.n_events

    def step_back(self, tid: int, event: int) -> int | None:
        """The event of thread ``tid`` before ``event`` (None: none)."""
        hist = self.thread_events.get(tid)
        if not hist:
            return None
        i = bisect.bisect_left(hist, self._at(event))
        return hist[i - 1] if i > 0 else None

    def reverse(self, event: int, lines: set[int]) -> int:
        """The last event before ``event`` on one of ``lines``, else the first event."""
        if lines:
            for i in range(self._at(event) - 1, -1, -1):
                if self.event_lines[i] in lines:
                    return i
        return 0

    def call_start(self, tid: int, event: int, first_line: int, last_line: int) -> int | None:
        """The first event of the call of a function (lines ``first_line``..``last_line``) that
        thread ``tid`` is in at ``event``: its events back to the last one outside those lines."""
        hist = self.thread_events.get(tid)
        if not hist:
            return None
        i = bisect.bisect_right(hist, self._at(event))
        first = None
        while i > 0:
            i -= 1
            if not first_line <= self.event_lines[hist[i]] <= last_line:
                break
            first = hist[i]
        return first
