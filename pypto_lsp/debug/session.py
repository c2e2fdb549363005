"""One debug session: the dump runs once, traced, in a thread of its own; this object is its
trace (the hooks of :mod:`pypto_lsp.exec.trace_hooks`) and decides at every hook whether the run
stops there. A stop blocks the run thread on a condition while the adapter answers requests
from what the stop captured (the stacks of every core, their frames' locals, the pipes).

Where the run can stop: after each assignment (the value is made, its name among the Locals),
at each iteration of a loop and each branch of an if, on the IR line of that statement. The
cores of a group are greenlets of the run thread: when one stops, all of them stand still where
the cross-core runtime left them (a core waiting in a pop shows as waiting on that pipe), and a
step of one core lets the others run in the runtime's own order until that core gets there.
"""

from __future__ import annotations

import bisect
import math
import re
import sys
import threading
import traceback
from array import array
from collections.abc import Callable
from types import FrameType
from typing import Any

import greenlet
import torch

from ..exec import context, crosscore
from ..exec.trace_hooks import LoopCounter
from ..validate.engine import compare, compile_text, run_text
from ..validate.localize import partner_names
from .launch import Prepared
from .state import Breakpoint, FrameInfo, LoopTrace, Recorder, Replay, Stop, Terminated, Thread, valid_hit_condition
from .values import max_abs_delta, numeric

__all__ = ["Session", "Thread", "FrameInfo", "Stop", "FILTERS"]

FILTERS = {
    "nan": "NaN / Inf: the first value holding a NaN or an infinity",
    "difference": "First difference: the first value that differs from the previous pass (or the goldens)",
    "finding": "Memory finding: a value whose bytes were overwritten (the memory model)",
    "deadlock": "Deadlock: no core of a group can make progress",
}
ORCH = 1  # the orchestration's thread id
KERNEL_KINDS = frozenset({"InCore", "AIC", "AIV"})


class Session:
    """The run, its threads (cores), breakpoints, stepping and stops."""

    def __init__(self, prep: Prepared, send: Callable[[str, dict[str, Any]], None], *, stop_on_entry: bool = False) -> None:
        self.prep = prep
        self.send = send  # (event name, body): thread-safe
        self.cond = threading.Condition()
        self.stop: Stop | None = None
        self.resume_cmd: tuple[str, int] | None = None
        self.step: tuple[str, int, int] | None = None  # (kind, thread id, depth)
        self.pause_requested = stop_on_entry
        self.entry_pending = stop_on_entry
        self.terminating = False
        self.breakpoints: dict[int, Breakpoint] = {}  # by IR line
        self.filters: set[str] = set()
        self.threads: dict[int, Thread] = {}
        self.by_key: dict[tuple[Any, ...], Thread] = {}
        self.loops: dict[FrameType, list[LoopTrace]] = {}
        self._next_tid = ORCH
        self._last_ctx: Any = None
        self._last_th: Thread | None = None
        self._last_rt: Any = None
        self._last_root: Any = None  # the frame of the kernel call the orchestration made last
        self._task = 0
        self._next_frame = 1
        self.result: Any = None
        self.done = threading.Event()
        self.records: dict[tuple[Any, ...], tuple[int, Any]] = {}
        self.partner: dict[str, str] = {}
        self.occ: dict[tuple[Any, ...], int] = {}
        # (name, role, lane, block) -> (its latest partner's record key, the lanes then)
        self.last_prev: dict[tuple[Any, ...], tuple[tuple[Any, ...], int]] = {}
        self.previous_pending = False  # partners known, the previous pass not run yet (ensure_previous)
        self.previous_lock = threading.Lock()
        self.difference_found = False
        self.nan_found = False
        self.findings_seen = 0
        self.sanitizer_seen = 0
        self.thread_obj: threading.Thread | None = None
        self.record_previous = True  # run the pass before first, for its values (launch: recordPrevious)
        self.stop_on_entry = stop_on_entry
        self.n_events = 0
        self.event_lines: array[int] = array("i")  # IR line of every event so far (reverseContinue)
        self.thread_events: dict[int, array[int]] = {}  # thread id -> its events (stepBack)
        self.replay_to: int | None = None  # a replay stops at this event, silently until there
        self.replay_pending: tuple[int | None] | None = None  # asked for: (target,)
        comp = compile_text(
            prep.text,
            str(prep.path),
            prep.settings.entry,
            trace=True,
            memory=prep.settings.memory,
            backend=prep.settings.backend,
            exact=prep.settings.exact,
        )
        self.comp = comp
        gen = comp.generated
        self.gen = gen
        self.filename = gen.filename if gen is not None else ""
        self.fn_names = {py: ir for ir, py in gen.functions.items()} if gen is not None else {}
        prog = comp.program
        self.kinds = {
            py: f.kind
            for ir, py in (gen.functions.items() if gen is not None else ())
            if prog is not None and (f := prog.function(ir)) is not None
        }
        self.lines = text_lines = prep.text.splitlines()
        self._group_calls: dict[tuple[str, str], int] = {}
        self._text_lines = text_lines

    # ------------------------------------------------------------------ setup

    def set_breakpoints(self, lines: list[tuple[int, str | None]]) -> list[dict[str, Any]]:
        """Breakpoints on IR lines; a line with nothing to stop at moves to the next line that has."""
        self.breakpoints = {}
        out: list[dict[str, Any]] = []
        ex = sorted(self.prep.lines)
        for i, (line, cond) in enumerate(lines):
            bid = i + 1
            at = next((x for x in ex if x >= line), None)
            if at is not None and at - line > 0 and not self._same_function(line, at):
                at = None
            if at is None:
                out.append({"id": bid, "verified": False, "line": line, "message": "no statement of the run on or after this line"})
                continue
            if not valid_hit_condition(cond):
                out.append({"id": bid, "verified": False, "line": at, "message": f"hit condition '{cond}': write N, >= N, == N or % N"})
                continue
            self.breakpoints[at] = Breakpoint(bid, at, line, cond)
            out.append({"id": bid, "verified": True, "line": at})
        return out

    def _same_function(self, a: int, b: int) -> bool:
        prog = self.comp.program
        if prog is None:
            return False
        for f in prog.functions:
            if f.span.line <= a <= f.span.end_line:
                return f.span.line <= b <= f.span.end_line
        return False

    # ------------------------------------------------------------------ running

    def start(self) -> None:
        self.thread_obj = threading.Thread(target=self._run, name="pypto-debug-run", daemon=True)
        self.thread_obj.start()

    def _pair_previous(self) -> None:
        """Each name of this pass with a partner in the previous one (the run of the previous pass
        comes later: up front only when the first-difference stop needs it while running)."""
        p = self.prep
        if not self.record_previous or p.previous is None or p.previous_text is None:
            return
        pairs = partner_names(p.previous_text, p.text, entry=p.settings.entry, previous_filename=str(p.previous), filename=str(p.path))
        if pairs:
            self.partner = pairs
            self.previous_pending = True

    def ensure_previous(self) -> None:
        """Run the previous pass once, recording its values (what Locals show beside this pass's)."""
        with self.previous_lock:
            if not self.previous_pending:
                return
            self.previous_pending = False
            try:
                self._record_previous()
            except Exception as exc:  # the previous pass only adds values: go on without them
                self.output(f"previous pass not recorded: {exc}\n")

    def previous_of(self, fi: FrameInfo) -> dict[str, Any]:
        """``fi``'s names -> the previous pass's values (running the previous pass on first use)."""
        if fi.previous_keys:
            self.ensure_previous()
            for name, (key, lanes) in fi.previous_keys.items():
                rec = self.records.get(key)
                if rec is not None and rec[0] == lanes:
                    fi.previous.setdefault(name, rec[1])
            fi.previous_keys = {}
        return fi.previous

    def _record_previous(self) -> None:
        p = self.prep
        pairs = self.partner
        if not pairs or p.previous_text is None or p.previous is None:
            return
        rec = Recorder(set(pairs.values()))
        fr = run_text(
            p.previous_text,
            p.inputs,
            {},
            filename=str(p.previous),
            entry=p.settings.entry,
            trace=rec,
            memory=p.settings.memory,
            backend=p.settings.backend,
            exact=p.settings.exact,
        )
        if fr.error is not None:
            self.output(f"the previous pass {p.previous.name} did not run ({fr.error.message}): no previous values\n")
            return
        self.records = rec.records

    def _run(self) -> None:
        p = self.prep
        try:
            self._pair_previous()
            if "difference" in self.filters:
                self.ensure_previous()  # the first-difference stop compares while the run goes
            self.output(f"running {p.path.name} (compared with {p.compared_with})\n")
            while True:
                crosscore.set_observer(self._deadlock)
                fr = None
                try:
                    fr = run_text(
                        p.text,
                        p.inputs,
                        p.expected,
                        filename=str(p.path),
                        trace=self,
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
                finally:
                    crosscore.set_observer(None)
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
        """Before a replay: the run's own state as at its start (breakpoints and filters stay)."""
        self.replay_pending = None
        self.replay_to = target
        self.n_events = 0
        self.event_lines = array("i")
        self.thread_events = {}
        for tid in list(self.threads):
            self.send("thread", {"reason": "exited", "threadId": tid})
        self.threads, self.by_key, self.loops = {}, {}, {}
        self._next_tid = ORCH
        self._last_ctx = self._last_th = self._last_rt = self._last_root = None
        self._task = 0
        self.occ, self.last_prev = {}, {}
        self.difference_found = self.nan_found = False
        self.findings_seen = 0
        self.sanitizer_seen = 0
        self.step = None
        for bp in self.breakpoints.values():
            bp.hits = 0
        self.pause_requested = self.entry_pending = target is None and self.stop_on_entry

    def _report(self, fr: Any) -> None:
        err = fr.error
        status = str(fr.status).upper()
        if err is not None:
            at = f" (line {err.line})" if err.line else ""
            self.output(f"{status}: {err.kind}{at}: {err.message}\n", "stderr")
        else:
            self.output(f"{status}\n")
        for k, tr in fr.tensors.items():
            self.output(f"  {k}: {'close' if tr.passed else 'differs'} (max |Δ| {tr.max_abs_diff:.4g})\n")
        for h in (fr.memory or {}).get("hazards", []):
            self.output(f"  memory {h.get('kind')} on line {h.get('line')}: {h.get('message')}\n")
        bad = [k for k, tr in fr.tensors.items() if not tr.passed]
        if "difference" in self.filters and bad and not self.difference_found:
            k = bad[0]
            writes = fr.writes.get(k) or []
            line = writes[-1][0] if writes else 1
            tr = fr.tensors[k]
            text = f"output '{k}' differs from {self.prep.compared_with} (max |Δ| {tr.max_abs_diff:.4g})"
            self._stop_after_run(line, text)

    def _stop_after_run(self, line: int, text: str) -> None:
        st = Stop("exception", ORCH, line, "first difference", text)
        orch = self.threads.get(ORCH)
        name = orch.name.split(" · ", 1)[-1] if orch else "run"
        st.frames = {ORCH: [FrameInfo(self._fid(), f"{name} · finished", line, None, ORCH)]}
        st.finished = set(self.threads) - {ORCH}
        self._wait_resume(st)

    def output(self, text: str, category: str = "console") -> None:
        self.send("output", {"category": category, "output": text})

    # ------------------------------------------------------------------ hooks (run thread)

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
        return LoopTrace(self, sys._getframe(1), key, line, ops, carried, results)

    def branch(self, key: str, line: int, taken: bool, ops: tuple[str, ...] = ()) -> None:
        self.event(line, {}, sys._getframe(1))

    def at(self, line: int) -> None:  # a statement that binds nothing, a return
        self.event(line, {}, sys._getframe(1))

    def _thread(self, ctx: Any, frame: FrameType) -> Thread:
        rt = ctx.runtime
        grouped = ctx.role is not None and rt is not None and not rt.standalone
        if grouped and ctx is self._last_ctx and self._last_th is not None:
            return self._last_th
        kind = None
        if grouped:
            if rt is not self._last_rt:
                self._task += 1
                self._last_rt = rt
                self._new_task(self._task)
            key: tuple[Any, ...] = (self._task, ctx.role, ctx.lane, ctx.block_idx)
        elif self.kinds.get(frame.f_code.co_name) in KERNEL_KINDS:
            # a kernel the orchestration calls on its own (no group): a core of its own, per call
            kind = self.kinds[frame.f_code.co_name]
            root, f = frame, frame.f_back
            while f is not None and f.f_code.co_filename == self.filename and self.kinds.get(f.f_code.co_name) in KERNEL_KINDS:
                root, f = f, f.f_back
            if root is not self._last_root:
                self._task += 1
                self._last_root = root
                self._new_task(self._task)
            key = (self._task, kind, ctx.lane, ctx.block_idx)
        elif ctx.block_num > 1:
            key = ("spmd", ctx.block_idx)
        else:
            key = ("orch",)
        th = self.by_key.get(key)
        if th is None:
            fn = self._root_function(frame) if kind is None else self.fn_names.get(frame.f_code.co_name, "?")
            if key[0] == "orch":
                name = f"orchestration · {fn}"
            elif key[0] == "spmd":
                name = f"block {ctx.block_idx} · {fn}"
            else:
                if kind is not None:
                    core = {"AIC": "AIC", "AIV": f"AIV{ctx.lane}"}.get(kind, kind)
                else:
                    core = "AIC" if ctx.role == "aic" else f"AIV{ctx.lane}"
                name = f"{core} · {fn} · task {self._task}"
                if ctx.block_num > 1:
                    name += f" · block {ctx.block_idx}"
            tid = ORCH if key[0] == "orch" else self._alloc_tid()
            th = Thread(
                tid, key, name, role=ctx.role, lane=ctx.lane, block=ctx.block_idx, task=self._task if key[0] not in ("orch", "spmd") else 0
            )
            if th.role is not None and rt is not None:
                th.rt = rt
                th.slot = ctx.lane if rt.lanes_only else (0 if ctx.role == "aic" else 1 + ctx.lane)
            self.threads[tid] = th
            self.by_key[key] = th
            self.send("thread", {"reason": "started", "threadId": tid})
        th.glet = greenlet.getcurrent()
        self._last_ctx = ctx
        self._last_th = th
        return th

    def _alloc_tid(self) -> int:
        if self._next_tid == ORCH:
            self._next_tid = ORCH + 1
        tid = self._next_tid
        self._next_tid += 1
        return tid

    def _new_task(self, task: int) -> None:
        """A new group run: the cores of older tasks are gone."""
        for tid, th in list(self.threads.items()):
            if th.task and th.task < task:
                del self.threads[tid]
                self.by_key.pop(th.key, None)
                self.send("thread", {"reason": "exited", "threadId": tid})

    def _root_function(self, frame: FrameType | None) -> str:
        name = "?"
        f = frame
        while f is not None:
            if f.f_code.co_filename == self.filename:
                name = self.fn_names.get(f.f_code.co_name, f.f_code.co_name)
            f = f.f_back
        return name

    def _gen_frame(self, f: FrameType | None) -> FrameType | None:
        while f is not None and f.f_code.co_filename != self.filename:
            f = f.f_back
        return f

    def event(self, line: int, bound: dict[str, Any], caller: FrameType) -> None:
        """One place the run can stop (run thread): decide, and stop if so."""
        if self.terminating:
            raise Terminated
        if self.replay_pending is not None:
            raise Replay
        frame = self._gen_frame(caller)
        if frame is None:
            return
        ctx = context.current()
        th = self._thread(ctx, frame)
        th.line = line
        th.frame = frame
        n_event = self.n_events
        self.n_events += 1
        self.event_lines.append(line)
        hist = self.thread_events.get(th.id)
        if hist is None:
            hist = self.thread_events[th.id] = array("i")
        hist.append(n_event)
        prev: dict[str, Any] = {}
        if self.partner and bound:
            for name in bound:
                pn = self.partner.get(name)
                if pn is None:
                    continue
                where = (name, ctx.role, ctx.lane, ctx.block_idx)
                n = self.occ.get(where, -1) + 1
                self.occ[where] = n
                key = (pn, ctx.role, ctx.lane, ctx.block_idx, n)
                self.last_prev[where] = (key, ctx.lanes)
                if self.records:
                    rec = self.records.get(key)
                    if rec is not None and rec[0] == ctx.lanes:
                        prev[name] = rec[1]
        reason = None
        desc = text = ""
        hit: list[int] = []
        if "nan" in self.filters and bound and not self.nan_found:
            for name, v in bound.items():
                if isinstance(v, torch.Tensor) and v.is_floating_point():
                    nv = numeric(v)
                    bad = ~torch.isfinite(nv)
                    if bool(bad.any()):
                        n_nan = int(torch.isnan(nv).sum())
                        self.nan_found = True
                        reason, desc = "exception", "NaN / Inf"
                        text = f"'{name}' holds {n_nan} NaN and {int(bad.sum()) - n_nan} Inf on line {line}"
                        break
                elif isinstance(v, float) and not math.isfinite(v):
                    self.nan_found = True
                    reason, desc, text = "exception", "NaN / Inf", f"'{name}' is {v} on line {line}"
                    break
        if reason is None and "difference" in self.filters and prev and not self.difference_found:
            for name, pv in prev.items():
                d = self._differs(bound[name], pv)
                if d is not None:
                    self.difference_found = True
                    reason, desc = "exception", "first difference"
                    text = f"'{name}' on line {line} differs from the previous pass {self.prep.previous.name if self.prep.previous else ''}: {d}"
                    break
        if reason is None and "finding" in self.filters:
            sess = frame.f_globals.get("_pl_mem_session")
            found = getattr(sess, "findings", None)
            if found is not None and len(found) > self.findings_seen:
                f0 = found[self.findings_seen]
                self.findings_seen = len(found)
                reason, desc = "exception", f"memory {f0.kind}"
                text = f"memory {f0.kind} on line {f0.line}: {f0.message}"
                # the check runs when the value goes into its bytes, after its own hook: the
                # finding is seen at the next statement of the frame, and shown on its own line
                line = f0.line or line
            san = frame.f_globals.get("_pl_san")
            sfound = getattr(san, "findings", None)
            if reason is None and sfound is not None and len(sfound) > self.sanitizer_seen:
                h = sfound[self.sanitizer_seen]
                self.sanitizer_seen = len(sfound)
                reason, desc = "exception", f"sanitizer {h['kind']}"
                text = f"sanitizer {h['kind']} on line {h.get('other_line') or h['line']}: {h['message']}"
                line = h.get("other_line") or h["line"] or line  # the access (an uninitialised read, a window)
        if reason is None:
            bp = self.breakpoints.get(line)
            if bp is not None and bp.hit():
                reason, hit = "breakpoint", [bp.id]
        if reason is None and self.step is not None and self._step_done(th, frame):
            reason = "step"
        if reason is None and self.pause_requested:
            reason = "entry" if self.entry_pending else "pause"
        if self.replay_to is not None:
            if n_event < self.replay_to:
                return  # replaying: the stops before the target were seen already
            reason, desc, text, hit = "step", "stepped back", "", []
            self.replay_to = None
        if reason is None:
            return
        self.pause_requested = self.entry_pending = False
        st = Stop(reason, th.id, line, desc, text, hit, event=n_event)
        self._capture(st, th, frame, line, bound, prev)
        self._wait_resume(st)

    def _differs(self, cur: Any, prev: Any) -> str | None:
        a, b = numeric(cur), numeric(prev)
        if a is None or b is None or isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
            return None
        s = self.prep.settings
        if isinstance(a, torch.Tensor):
            if tuple(a.shape) != tuple(b.shape) or a.numel() == 0:
                return None
            if a.dtype == b.dtype and torch.equal(a, b):
                return None
            tr = compare(a, b, s.rtol, s.atol)
            return None if tr.passed else f"max |Δ| {tr.max_abs_diff:.4g}"
        x, y = float(a), float(b)
        if x == y or abs(x - y) <= s.atol + s.rtol * abs(y):
            return None
        return f"{a!r} instead of {b!r}"

    def _deadlock(self, rt: Any, slot: int) -> None:
        """crosscore's observer: no core of ``rt``'s group can run (run thread, scheduler)."""
        if self.terminating:
            raise Terminated
        if "deadlock" not in self.filters:
            return
        th = next((t for t in self.threads.values() if t.rt is rt and t.slot == slot), None)
        th = th or self.threads.get(ORCH)
        blocked = ", ".join(b[4] for _, b in sorted(rt.blocked.items()))
        st = Stop(
            "exception",
            th.id if th else ORCH,
            th.line if th else 0,
            "deadlock",
            f"deadlock in group '{rt.name}': no core can make progress (blocked: {blocked})",
        )
        self._capture(st, th, None, 0, {}, {})
        self._wait_resume(st)

    def _depth(self, th: Thread, frame: FrameType) -> int:
        n = 0
        f: FrameType | None = frame
        while f is not None:
            if f.f_code.co_filename == self.filename:
                n += 1
            f = f.f_back
        if th.role is not None:
            n += 100  # a kernel runs below the orchestration's group call
        return n

    def _step_done(self, th: Thread, frame: FrameType) -> bool:
        assert self.step is not None
        kind, tid, depth = self.step
        # the orchestration waits while a kernel runs: its next statement means the kernel is done
        kernel_done = tid != ORCH and th.id == ORCH
        if kind == "in":
            return th.id == tid or tid == ORCH or kernel_done
        if th.id == tid:
            d = self._depth(th, frame)
            return d <= depth if kind == "next" else d < depth
        return kernel_done

    # ------------------------------------------------------------------ stops

    def _fid(self) -> int:
        self._next_frame += 1
        return self._next_frame

    def _frames_from(self, tid: int, start: FrameType | None, top_line: int | None, glet: Any, rt: Any) -> list[FrameInfo]:
        out: list[FrameInfo] = []
        f = start
        first = True
        while True:
            while f is not None:
                if f.f_code.co_filename == self.filename and f.f_code.co_name != "<lambda>":  # (a task's thunk: exec.sanitizer)
                    line = top_line if first and top_line else self._ir_line(f)
                    first = False
                    out.append(FrameInfo(self._fid(), self._frame_name(f), line, f, tid, rt=rt))
                f = f.f_back
            parent = getattr(glet, "parent", None)
            if parent is None:
                break
            if rt is not None and out:
                call = self._group_call_line(rt.name, out[-1].name.split(" · ")[0])
                if call:
                    out.append(FrameInfo(self._fid(), f"{rt.name} (group)", call, None, tid, rt=rt))
            f = parent.gr_frame if parent is not greenlet.getcurrent() else self._outer_of_current()
            glet, rt = parent, None
        return out

    def _outer_of_current(self) -> FrameType | None:
        return sys._getframe(0)

    def _group_call_line(self, group: str, kernel: str) -> int:
        key = (group, kernel)
        if key not in self._group_calls:
            line = 0
            prog = self.comp.program
            f = prog.function(group) if prog is not None else None
            if f is not None:
                pat = re.compile(r"\bself\." + re.escape(kernel) + r"\s*\(")
                for i in range(f.span.line, min(f.span.end_line, len(self._text_lines)) + 1):
                    if pat.search(self._text_lines[i - 1]):
                        line = i
                        break
            self._group_calls[key] = line
        return self._group_calls[key]

    def _ir_line(self, f: FrameType) -> int:
        assert self.gen is not None
        sp = self.gen.ir_span(f.f_lineno)
        return sp.line if sp is not None else 0

    def _frame_name(self, f: FrameType) -> str:
        name = self.fn_names.get(f.f_code.co_name, f.f_code.co_name)
        loops = self.loops.get(f)
        if loops:
            name += " · " + ", ".join(f"iteration {lp.n} of loop line {lp.line}" for lp in loops)
        return name

    def _capture(
        self, st: Stop, th: Thread | None, frame: FrameType | None, line: int, bound: dict[str, Any], prev: dict[str, Any]
    ) -> None:
        """What the adapter may ask about while stopped, taken in the run thread."""
        cur = greenlet.getcurrent()
        for tid, t in self.threads.items():
            direct = t.role is None and len(t.key) == 4  # a kernel the orchestration called itself
            if (t.glet is not None and t.glet.dead) or (direct and (th is None or tid != th.id)):
                st.finished.add(tid)
                st.frames[tid] = [
                    FrameInfo(
                        self._fid(), f"{t.name.split(' · ')[1] if ' · ' in t.name else t.name} · finished", t.line, None, tid, rt=t.rt
                    )
                ]
                continue
            if th is not None and tid == th.id and frame is not None:
                frames = self._frames_from(tid, frame, line, t.glet, t.rt)
                if frames:
                    frames[0].assigned = dict(bound)
                    frames[0].previous = dict(prev)
                    for k in bound:
                        w = self.last_prev.get((k, t.role, t.lane, t.block))
                        if w is not None and k not in prev:
                            frames[0].previous_keys[k] = w
            elif t.glet is cur:
                frames = self._frames_from(tid, sys._getframe(1), None, t.glet, t.rt)
            elif t.glet is not None:
                frames = self._frames_from(tid, t.glet.gr_frame, None, t.glet, t.rt)
            else:
                frames = []
            for fi in frames:
                if fi.frame is not None and self.last_prev:
                    for k in fi.frame.f_code.co_varnames:
                        w = self.last_prev.get((k, t.role, t.lane, t.block))
                        if w is not None and k not in fi.previous:
                            fi.previous_keys.setdefault(k, w)
            if tid == ORCH:  # a kernel it called runs on a thread of its own
                frames = [fi for fi in frames if fi.frame is None or self.kinds.get(fi.frame.f_code.co_name) not in KERNEL_KINDS]
            st.frames[tid] = frames
            if t.rt is not None and t.slot in t.rt.blocked:
                st.waiting[tid] = t.rt.blocked[t.slot][4]
                if frames:
                    frames[0].name += f" · waiting on {t.rt.blocked[t.slot][4]}"
        sess = frame.f_globals.get("_pl_mem_session") if frame is not None else None
        st.findings = list(getattr(sess, "findings", []) or [])

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
            depth = 0
            frames = st.frames.get(tid) or []
            if th is not None and frames and frames[0].frame is not None:
                depth = self._depth(th, frames[0].frame)
            self.step = (kind, tid, depth)
        self.send("continued", {"threadId": tid, "allThreadsContinued": True})

    # ------------------------------------------------------------------ commands (adapter thread)

    def resume(self, kind: str, tid: int) -> bool:
        with self.cond:
            if self.stop is None:
                return False
            self.resume_cmd = (kind, tid)
            self.cond.notify_all()
            return True

    def pause(self) -> None:
        self.pause_requested = True

    def step_back_target(self, tid: int) -> int | None:
        """The event before the current stop on thread ``tid`` (None: none)."""
        st = self.stop
        hist = self.thread_events.get(tid)
        if st is None or not hist:
            return None
        i = bisect.bisect_left(hist, st.event if st.event >= 0 else self.n_events)
        return hist[i - 1] if i > 0 else None

    def reverse_target(self) -> int:
        """The last event before the current stop on a breakpoint line, else the first event."""
        st = self.stop
        lines = set(self.breakpoints)
        if st is not None and lines:
            for i in range((st.event if st.event >= 0 else self.n_events) - 1, -1, -1):
                if self.event_lines[i] in lines:
                    return i
        return 0

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
        out: dict[str, Any] = {}
        if fi.frame is not None:
            try:
                loc = dict(fi.frame.f_locals)
            except Exception:
                loc = {}
            for k, v in loc.items():
                if k.startswith("_pl_") or k == "self":
                    continue
                out[k] = v
        out.update(fi.assigned)
        return out

    def previous_value(self, fi: FrameInfo, name: str) -> Any:
        return self.previous_of(fi).get(name)

    def delta(self, fi: FrameInfo, name: str, value: Any) -> float | None:
        pv = self.previous_of(fi).get(name)
        return None if pv is None else max_abs_delta(value, pv)
