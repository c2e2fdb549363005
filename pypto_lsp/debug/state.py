"""What a debug session holds while it runs: threads (one per core instance), frames, a stop,
breakpoints with their hit conditions, and the previous pass's recorded values (:mod:`.session`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch

from ..exec import context
from ..exec.trace_hooks import LoopCounter
from ..validate.localize import place
from .values import numeric

__all__ = [
    "Terminated",
    "Replay",
    "Thread",
    "FrameInfo",
    "Stop",
    "Breakpoint",
    "hit_condition_problem",
    "Recorder",
    "LoopTrace",
    "RECORD_BUDGET",
]

RECORD_BUDGET = 256 * 2**20


class Terminated(BaseException):
    """Raised in the run thread at its next hook once the client ends the session."""


class Replay(BaseException):
    """Unwinds the run to start it again (stepBack, reverseContinue, restart: the run is deterministic)."""


@dataclass(slots=True)
class Thread:
    id: int
    key: tuple[Any, ...]
    name: str
    glet: Any = None  # the greenlet the core runs in
    rt: Any = None  # crosscore.Runtime of its group
    slot: int = -1  # its slot in the runtime (0 AIC, 1 + lane the AIV lanes)
    role: str | None = None
    lane: int = 0
    block: int = 0
    task: int = 0
    rank: int | None = None  # the rank of a multi-rank program it runs for
    place: tuple[Any, ...] = (None, 0, 0)  # localize.place of its last hook: its values' pairing key
    line: int = 0  # the IR line of its last hook
    frame: FrameType | None = None  # the generated-code frame of its last hook


@dataclass(slots=True)
class FrameInfo:
    id: int
    name: str
    line: int
    frame: FrameType | None  # None: a frame without locals (a group, a finished core)
    thread: int
    assigned: dict[str, Any] = field(default_factory=dict)  # the stop's statement just bound these
    previous: dict[str, Any] = field(default_factory=dict)  # name -> the previous pass's value
    rt: Any = None
    # name -> (its partner's record key, the lanes then): the previous value, looked up once the
    # previous pass has run (it runs when a value is first asked for: see Session.previous_of)
    previous_keys: dict[str, tuple[tuple[Any, ...], int]] = field(default_factory=dict)


@dataclass(slots=True)
class Stop:
    reason: str  # entry | breakpoint | step | pause | exception
    thread: int
    line: int
    description: str = ""
    text: str = ""
    breakpoints: list[int] = field(default_factory=list)
    frames: dict[int, list[FrameInfo]] = field(default_factory=dict)  # thread id -> innermost first
    waiting: dict[int, str] = field(default_factory=dict)  # thread id -> the pop it waits in
    finished: set[int] = field(default_factory=set)
    findings: list[Any] = field(default_factory=list)
    event: int = -1  # the run's event count at the stop (where a replay stops again)


@dataclass(slots=True)
class Breakpoint:
    id: int
    line: int
    requested: int
    hit_condition: str | None = None
    hits: int = 0

    def hit(self) -> bool:
        self.hits += 1
        cond = parse_hit_condition(self.hit_condition)
        if cond is None:
            return True
        op, n = cond
        return {
            ">=": self.hits >= n,
            "<=": self.hits <= n,
            "==": self.hits == n,
            ">": self.hits > n,
            "<": self.hits < n,
            "%": self.hits % n == 0,
        }[op]


MAX_HIT_COUNT = 10**15  # more hits than any run makes


def parse_hit_condition(c: str | None) -> tuple[str, int] | None:
    """``N``, ``>= N``, ``== N``, ``> N``, ``< N``, ``<= N`` or ``% N`` (None: none given)."""
    m = re.fullmatch(r"\s*(>=|<=|==|>|<|%)?\s*(\d{1,16})\s*", c or "")
    if m is None:
        return None
    return m.group(1) or ">=", int(m.group(2))


def hit_condition_problem(c: str | None) -> str | None:
    """Why a hit condition cannot be used (None: it can, or there is none)."""
    if not c or not c.strip():
        return None
    cond = parse_hit_condition(c)
    if cond is None:
        return f"hit condition '{c[:40]}': write N, >= N, == N, > N, < N, <= N or % N (N a count)"
    op, n = cond
    if n > MAX_HIT_COUNT:
        return f"hit condition '{c[:40]}': {n} is more hits than a run makes"
    if op == "%" and n == 0:
        return f"hit condition '{c[:40]}': % 0 never holds (write % N with N > 0)"
    return None


class Recorder:
    """The previous pass's run: a copy of every value the current pass pairs a name with."""

    def __init__(self, keep: set[str]) -> None:
        self.keep = keep
        self.records: dict[tuple[Any, ...], tuple[int, Any]] = {}  # key -> (lanes, value)
        self.counts: dict[tuple[Any, ...], int] = {}
        self.budget = RECORD_BUDGET
        self.trips: dict[tuple[Any, ...], int] = {}  # trip_key -> iterations
        self.trip_counts: dict[tuple[Any, ...], int] = {}

    def __call__(self, value: Any, name: str, line: int, ops: tuple[str, ...] = ()) -> Any:
        if name not in self.keep or self.budget <= 0:
            return value
        ctx = context.current()
        where = (name, *place(ctx))
        n = self.counts.get(where, 0)
        self.counts[where] = n + 1
        snap = numeric(value)
        if snap is None:
            return value
        if isinstance(snap, torch.Tensor):
            self.budget -= snap.numel() * snap.element_size()
            snap = snap.detach().clone()
        self.records[(*where, n)] = (ctx.lanes, snap)
        return value

    carry = __call__

    def loop(
        self, key: str, line: int, ops: tuple[str, ...] = (), carried: tuple[str, ...] = (), results: tuple[str, ...] = ()
    ) -> LoopCounter:
        return LoopCounter(self._loop_done, key, line, ops, carried, results)

    def _loop_done(self, c: LoopCounter) -> None:
        """How often each run of a paired loop went round (localisation's trip-count rule)."""
        if c.key in self.keep and len(self.trips) < MAX_TRIPS:
            self.trips[trip_key(c.key, self.trip_counts)] = c.n


MAX_TRIPS = 100_000


def trip_key(key: str, counts: dict[tuple[Any, ...], int]) -> tuple[Any, ...]:
    """(loop key, role, lane, block (with the rank), its run's number there): a loop run of one
    pass and its partner's (:func:`pypto_lsp.validate.localize.place`)."""
    where = (key, *place(context.current()))
    n = counts.get(where, 0)
    counts[where] = n + 1
    return (*where, n)


class LoopTrace(LoopCounter):
    """A loop of the current run: its iterations are places to stop, and frames show them."""

    __slots__ = ("owner", "frame", "loops")

    def __init__(
        self,
        owner: Any,  # the Session (debug/session.py) whose loop this is: its event() hears each iteration
        loops: dict[FrameType, list[LoopTrace]],  # the loops of each frame (debug/stack.py)
        frame: FrameType | None,
        key: str,
        line: int,
        ops: tuple[str, ...],
        carried: tuple[str, ...],
        results: tuple[str, ...],
    ) -> None:
        super().__init__(None, key, line, ops, carried, results)
        self.owner = owner
        self.frame = frame
        self.loops = loops
        if frame is not None:
            loops.setdefault(frame, []).append(self)

    def __call__(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for x in iterable:
            self.n += 1
            self.owner.event(self.line, {}, sys._getframe(1))
            yield x

    def done(self) -> None:
        self.owner.loop_done(self)
        if self.frame is not None:
            lst = self.loops.get(self.frame)
            if lst and self in lst:
                lst.remove(self)
                if not lst:
                    del self.loops[self.frame]
