"""One debug session: the dump runs once, traced, in a thread of its own. The session is an
:class:`~pypto_lsp.exec.observe.Observer` of that run like any other: it puts the trace hooks
(:mod:`pypto_lsp.exec.trace_hooks`) in the run's namespace, is handed the memory model's and the
sanitizer's observers (their findings stop the run), hears of deadlocks, and at every hook asks
the stop policy (:mod:`.stops`) whether the run stops there. A stop blocks the run thread on a
condition while the adapter answers requests from what the stop captured (:mod:`.stack`).

This module keeps the run loop, replay (back in time is a run again to an earlier event:
:mod:`.history`) and wait/resume; threads are :mod:`.threads`, previous values :mod:`.previous`.

The cores of a group are greenlets of the run thread: when one stops, all of them stand still
where the cross-core runtime left them, and a step of one core lets the others run in the
runtime's own order until that core gets there.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from ..exec import context
from ..exec.memory import MemoryObserver
from ..exec.observe import Observer, RunInfo
from ..exec.sanitizer import Sanitizer
from ..exec.trace_hooks import LoopCounter, hooks
from ..validate.engine import run_text
from . import stops
from .code import Code
from .history import History
from .launch import Prepared
from .previous import PreviousPass
from .stack import Stacks, depth
from .state import Breakpoint, FrameInfo, LoopTrace, Replay, Stop, Terminated, Thread
from .threads import ORCH, Threads

__all__ = ["Session", "Thread", "FrameInfo", "Stop", "FILTERS", "ORCH"]

FILTERS = {
    "nan": "NaN / Inf: the first value holding a NaN or an infinity",
    "difference": "First difference: the first value that differs from the previous pass (or the goldens)",
    "finding": "Memory finding: a value whose bytes were overwritten (the memory model)",
    "deadlock": "Deadlock: no core of a group can make progress",
}


class Session(Observer):
    """The run, its breakpoints, stepping and stops."""

    def __init__(self, prep: Prepared, send: Callable[[str, dict[str, Any]], None], *, stop_on_entry: bool = False) -> None:
        self.prep = prep
        self.send = send  # (event name, body): thread-safe
        self.cond = threading.Condition()
        self.stop: Stop | None = None
        self.resume_cmd: tuple[str, int] | None = None
        self.step: tuple[str, int, int] | None = None  # (kind, thread id, depth)
        self.pause_requested = stop_on_entry
        self.entry_pending = stop_on_entry
        self.stop_on_entry = stop_on_entry
        self.terminating = False
        self.breakpoints: dict[int, Breakpoint] = {}  # by IR line
        self.filters: set[str] = set()
        assert prep.comp is not None
        self.code = Code(prep.comp, prep.text)
        self.threads = Threads(self.code, send)
        self.stacks = Stacks(self.code)
        self.previous = PreviousPass(prep, self.output)
        self.result: Any = None  # the run's FileResult
        self.done = threading.Event()
        self.thread_obj: threading.Thread | None = None
        self.memory: MemoryObserver | None = None  # the run's other observers (peers)
        self.sanitizer: Sanitizer | None = None
        self._reset_run(None)

    # ------------------------------------------------------------------ setup

    def set_breakpoints(self, lines: list[tuple[int, str | None]]) -> list[dict[str, Any]]:
        """Breakpoints on IR lines (:func:`.stops.breakpoints`); the client's answer per line."""
        self.breakpoints, out = stops.breakpoints(self.code, lines)
        return out

    # ------------------------------------------------------------------ running

    def start(self) -> None:
        self.thread_obj = threading.Thread(target=self._run, name="pypto-debug-run", daemon=True)
        self.thread_obj.start()

    def previous_of(self, fi: FrameInfo) -> dict[str, Any]:
        """``fi``'s names -> the previous pass's values known so far (never waits long)."""
        return self.previous.of(fi, wait=0.05)

    def _run(self) -> None:
        p = self.prep
        try:
            self.previous.pair()
            if "difference" in self.filters and self.previous.partner:  # it compares while the run goes
                self.previous.wait(p.settings.timeout_s or None)
            self.output(f"running {p.path.name} (compared with {p.compared_with})\n")
            while True:
                fr = None
                try:
                    fr = run_text(
                        p.text,
                        p.inputs,
                        p.expected,
                        filename=str(p.path),
                        debugger=self,
                        rtol=p.settings.rtol,
                        atol=p.settings.atol,
                        entry=p.settings.entry,
                        memory=p.settings.memory,
                        backend=p.settings.backend,
                        exact=p.settings.exact,
                        sanitize=p.settings.sanitize,  # its findings stop the run too (stopOnFinding)
                    )
                except Replay:
                    pass
                if fr is not None and self.replay_pending is None and not self.terminating:
                    self.result = fr
                    try:
                        self._report(fr)  # may stop once more (an output that differs from the goldens)
                    except Replay:
                        pass
                if self.replay_pending is None or self.terminating:
                    break
                (target,) = self.replay_pending
                self._reset_run(target)
        except Terminated:
            pass
        except Exception as exc:  # never a traceback to the client's console without a message
            self.output(f"the run failed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}")
        finally:
            self.done.set()
            self.send("terminated", {})

    def _reset_run(self, target: int | None) -> None:
        """Before a (re)play: the run's own state as at its start (breakpoints and filters stay)."""
        self.replay_pending: tuple[int | None] | None = None  # asked for: (target,)
        self.replay_to = target  # a replay stops at this event, silently until there
        self.history = History()
        self.threads.reset()
        self.stacks.loops = {}
        self.previous.new_run()
        self.difference_found = self.nan_found = False
        self.trip_difference: stops.Reason | None = None
        self.findings_seen = self.sanitizer_seen = 0
        self.step = None
        for bp in self.breakpoints.values():
            bp.hits = 0
        self.pause_requested = self.entry_pending = target is None and self.stop_on_entry

    def _report(self, fr: Any) -> None:
        for text, category in stops.summary(fr):
            self.output(text, category)
        why = stops.output_difference(fr, self.prep.compared_with) if "difference" in self.filters and not self.difference_found else None
        if why is not None and self.trip_difference is not None:
            why = stops.Reason(why.description, f"{self.trip_difference.text} ({why.text})", self.trip_difference.line)
        if why is not None:
            st = Stop("exception", ORCH, why.line, why.description, why.text)
            orch = self.threads.get(ORCH)
            name = orch.name.split(" · ", 1)[-1] if orch else "run"
            st.frames = {ORCH: [FrameInfo(self.stacks.fid(), f"{name} · finished", why.line, None, ORCH)]}
            st.finished = set(self.threads.by_id) - {ORCH}
            self._wait_resume(st)

    def output(self, text: str, category: str = "console") -> None:
        self.send("output", {"category": category, "output": text})

    # ------------------------------------------------------------------ the observer (run thread)

    def namespace(self, ns: dict[str, Any], run: RunInfo) -> None:
        ns["_pl_tr"] = self
        ns.update(hooks(self))

    def peers(self, others: Sequence[Observer]) -> None:
        self.memory = next((o for o in others if isinstance(o, MemoryObserver)), None)
        self.sanitizer = next((o for o in others if isinstance(o, Sanitizer)), None)

    def deadlock(self, group: Any, slot: int, run: RunInfo) -> None:
        """No core of ``group`` can run (run thread, in the cross-core scheduler)."""
        if self.terminating:
            raise Terminated
        if "deadlock" not in self.filters:
            return
        th = next((t for t in self.threads.by_id.values() if t.rt is group and t.slot == slot), None)
        th = th or self.threads.get(ORCH)
        blocked = ", ".join(group.waiting().values())
        st = Stop(
            "exception",
            th.id if th else ORCH,
            th.line if th else 0,
            "deadlock",
            f"deadlock in group '{group.name}': no core can make progress (blocked: {blocked})",
        )
        self._capture(st, th, None, 0, {}, {})
        self._wait_resume(st)

    def __call__(self, value: Any, name: str, line: int, ops: tuple[str, ...] = ()) -> Any:
        self.event(line, {name: value}, sys._getframe(1))
        return value

    def carry(self, value: Any, name: str, line: int, ops: tuple[str, ...] = ()) -> Any:
        self.event(line, {name: value}, sys._getframe(1))
        return value

    def write(self, value: Any, names: tuple[str, ...], line: int, ops: tuple[str, ...] = ()) -> Any:
        if len(names) == 1:
            bound = {names[0]: value}
        elif isinstance(value, tuple) and len(value) == len(names):
            bound = dict(zip(names, value))
        else:
            bound = {}
        self.event(line, bound, sys._getframe(1))
        return value

    def loop(
        self, key: str, line: int, ops: tuple[str, ...] = (), carried: tuple[str, ...] = (), results: tuple[str, ...] = ()
    ) -> LoopCounter:
        return LoopTrace(self, self.stacks.loops, sys._getframe(1), key, line, ops, carried, results)

    def loop_done(self, loop: LoopTrace) -> None:
        """A loop that went round more or less often than its partner is named if an output differs at
        the end (localisation's rule: a pass may unroll a loop and hand out the same values)."""
        before = self.previous.trips_before(loop.key) if self.previous.partner else None
        if before is not None and before != loop.n and self.trip_difference is None:
            text = f"'{loop.key}' on line {loop.line} differs from the previous pass: loop ran {loop.n} times here, {before} before"
            self.trip_difference = stops.Reason("first difference", text, loop.line)

    def branch(self, key: str, line: int, taken: bool, ops: tuple[str, ...] = ()) -> None:
        self.event(line, {}, sys._getframe(1))

    def at(self, line: int) -> None:  # a statement that binds nothing, a return
        self.event(line, {}, sys._getframe(1))

    def event(self, line: int, bound: dict[str, Any], caller: FrameType) -> None:
        """One place the run can stop (run thread): decide, and stop if so."""
        if self.terminating:
            raise Terminated
        if self.replay_pending is not None:
            raise Replay
        frame = self.code.innermost(caller)
        if frame is None:
            return
        ctx = context.current()
        th = self.threads.of(ctx, frame)
        th.line = line
        th.frame = frame
        n_event = self.history.add(th.id, line)
        prev = self.previous.values_of(bound, ctx) if self.previous.partner and bound else {}
        reason = None
        why: stops.Reason | None = None
        hit: list[int] = []
        if "nan" in self.filters and bound and not self.nan_found:
            why = stops.nan_in(bound, line)
            self.nan_found = why is not None
        if why is None and "difference" in self.filters and prev and not self.difference_found:
            s = self.prep.settings
            why = stops.first_difference(bound, prev, line, s.rtol, s.atol, self.prep.previous.name if self.prep.previous else "")
            self.difference_found = why is not None
        if why is None and "finding" in self.filters:
            mem = self.memory.found() if self.memory is not None else ()
            san = self.sanitizer.findings if self.sanitizer is not None else []
            why = stops.new_finding(mem, self.findings_seen, san, self.sanitizer_seen, line)
            if why is not None:
                if why.description.startswith("memory"):
                    self.findings_seen = len(mem)
                else:
                    self.sanitizer_seen += 1
        if why is not None:
            reason, line = "exception", why.line
        if reason is None:
            bp = self.breakpoints.get(line)
            if bp is not None and bp.hit():
                reason, hit = "breakpoint", [bp.id]
        if reason is None and self.step is not None and stops.step_done(self.step, th, frame, self._depth):
            reason = "step"
        if reason is None and self.pause_requested:
            reason = "entry" if self.entry_pending else "pause"
        if self.replay_to is not None:
            if n_event < self.replay_to:
                return  # replaying: the stops before the target were seen already
            reason, why, hit = "step", stops.Reason("stepped back", "", line), []
            self.replay_to = None
        if reason is None:
            return
        self.pause_requested = self.entry_pending = False
        st = Stop(reason, th.id, line, why.description if why else "", why.text if why else "", hit, event=n_event)
        self._capture(st, th, frame, line, bound, prev)
        self._wait_resume(st)

    def _depth(self, th: Thread, frame: FrameType) -> int:
        return depth(self.code, th, frame)

    # ------------------------------------------------------------------ stops

    def _capture(
        self, st: Stop, th: Thread | None, frame: FrameType | None, line: int, bound: dict[str, Any], prev: dict[str, Any]
    ) -> None:
        """What the adapter may ask about while stopped, taken in the run thread."""
        self.stacks.capture(st, self.threads, th, frame, line, bound, prev, self.previous.last_prev)
        st.findings = list(self.memory.found()) if self.memory is not None else []

    def _wait_resume(self, st: Stop) -> None:
        with self.cond:
            self.stop = st
            self.resume_cmd = None
            body: dict[str, Any] = {"reason": st.reason, "threadId": st.thread, "allThreadsStopped": True}
            if st.description:
                body["description"] = st.description
            if st.text:
                body["text"] = st.text
            if st.breakpoints:
                body["hitBreakpointIds"] = st.breakpoints
            self.send("stopped", body)
            while self.resume_cmd is None and not self.terminating and self.replay_pending is None:
                self.cond.wait(0.5)
            cmd = self.resume_cmd
            self.stop = None
            self.resume_cmd = None
        if self.terminating:
            raise Terminated
        if self.replay_pending is not None:
            self.send("continued", {"threadId": st.thread, "allThreadsContinued": True})
            raise Replay
        if cmd is None:
            raise Terminated
        kind, tid = cmd
        if kind == "continue":
            self.step = None
        else:
            th = self.threads.get(tid)
            d = 0
            frames = st.frames.get(tid) or []
            if th is not None and frames and frames[0].frame is not None:
                d = self._depth(th, frames[0].frame)
            self.step = (kind, tid, d)
        self.send("continued", {"threadId": tid, "allThreadsContinued": True})

    # ------------------------------------------------------------------ commands (adapter thread)

    def resume(self, kind: str, tid: int) -> bool:
        with self.cond:
            if self.stop is None:
                return False
            self.resume_cmd = (kind, tid)
            self.cond.notify_all()
            return True

    def step_back_target(self, tid: int) -> int | None:
        """The event before the current stop on thread ``tid`` (None: none)."""
        st = self.stop
        return None if st is None else self.history.step_back(tid, st.event)

    def reverse_target(self) -> int:
        """The last event before the current stop on a breakpoint line, else the first event."""
        st = self.stop
        return 0 if st is None else self.history.reverse(st.event, set(self.breakpoints))

    def frame_start_target(self, fi: FrameInfo) -> int | None:
        """The first event of the call ``fi`` is a frame of (restartFrame); None: not known."""
        st = self.stop
        fn = self.code.owner(fi.line) if st is not None and fi.frame is not None else None
        if st is None or fn is None:
            return None
        return self.history.call_start(fi.thread, st.event, fn.span.line, fn.span.end_line)

    def replay(self, target: int | None) -> bool:
        """Run again from the start (deterministic) and stop at event ``target`` (None: as launched)."""
        with self.cond:
            if self.stop is None:
                return False
            self.replay_pending = (target,)
            self.cond.notify_all()
            return True

    def terminate(self) -> None:
        with self.cond:
            self.terminating = True
            self.cond.notify_all()

    def frame_locals(self, fi: FrameInfo) -> dict[str, Any]:
        """The frame's values by IR name, what its statement just bound first."""
        out: dict[str, Any] = self.code.locals(fi.frame) if fi.frame is not None else {}
        out.update(fi.assigned)
        return out
