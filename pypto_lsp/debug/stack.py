"""Stack capture at a stop: every thread's frames, innermost first, taken in the run thread while
the cores stand still. A core's frames continue through the group call into the orchestration (a
greenlet's parent); a frame inside loops is named by its iterations; a core waiting in a pop says
which."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import greenlet

from .code import Code
from .state import FrameInfo, LoopTrace, Stop, Thread
from .threads import ORCH, Threads

__all__ = ["Stacks", "depth"]


def depth(code: Code, th: Thread, frame: FrameType) -> int:
    """How deep ``frame`` is (stepping over / out compares it); a kernel counts below its group call."""
    return len(code.frames(frame)) + (100 if th.role is not None else 0)


class Stacks:
    """Frames of a run: ids for the client, loop iterations in names."""

    def __init__(self, code: Code) -> None:
        self.code = code
        self.loops: dict[FrameType, list[LoopTrace]] = {}  # a frame's loops (LoopTrace registers itself)
        self._next_frame = 1

    def fid(self) -> int:
        self._next_frame += 1
        return self._next_frame

    def frame_name(self, f: FrameType) -> str:
        name = self.code.function(f) or f.f_code.co_name
        loops = self.loops.get(f)
        if loops:
            name += " · " + ", ".join(f"iteration {lp.n} of loop line {lp.line}" for lp in loops)
        return name

    def frames_from(self, tid: int, start: FrameType | None, top_line: int | None, glet: Any, rt: Any) -> list[FrameInfo]:
        out: list[FrameInfo] = []
        f = start
        first = True
        while True:
            for g in self.code.frames(f):
                line = top_line if first and top_line else self.code.line(g)
                first = False
                out.append(FrameInfo(self.fid(), self.frame_name(g), line, g, tid, rt=rt))
            parent = getattr(glet, "parent", None)
            if parent is None:
                break
            if rt is not None and out:
                call = self.code.group_call_line(rt.name, out[-1].name.split(" · ")[0])
                if call:
                    out.append(FrameInfo(self.fid(), f"{rt.name} (group)", call, None, tid, rt=rt))
            f = parent.gr_frame if parent is not greenlet.getcurrent() else sys._getframe(0)
            glet, rt = parent, None
        return out

    def _rank_in_kernel(self, t: Thread) -> bool:
        """Whether a rank's kernel thread is still in its kernel while another thread stopped: the
        ranks run side by side (one blocked in a wait, another running), a rank's older kernels
        are gone (:meth:`.threads.Threads.of`), so its greenlet standing in a kernel stands in this one."""
        if t.rank is None or t.glet is None or t.glet is greenlet.getcurrent():
            return False
        f = self.code.innermost(t.glet.gr_frame)
        return f is not None and self.code.is_kernel(f)

    def finished_frame(self, t: Thread) -> FrameInfo:
        name = t.name.split(" · ")[1] if " · " in t.name else t.name
        return FrameInfo(self.fid(), f"{name} · finished", t.line, None, t.id, rt=t.rt)

    def capture(
        self,
        st: Stop,
        threads: Threads,
        th: Thread | None,
        frame: FrameType | None,
        line: int,
        bound: dict[str, Any],
        prev: dict[str, Any],
        last_prev: dict[tuple[Any, ...], tuple[tuple[Any, ...], int]],
    ) -> None:
        """Fill ``st.frames`` / ``waiting`` / ``finished`` (run thread)."""
        cur = greenlet.getcurrent()
        for tid, t in threads.by_id.items():
            direct = t.role is None and len(t.key) == 4  # a kernel the orchestration called itself
            if (t.glet is not None and t.glet.dead) or (direct and (th is None or tid != th.id) and not self._rank_in_kernel(t)):
                st.finished.add(tid)
                st.frames[tid] = [self.finished_frame(t)]
                continue
            if th is not None and tid == th.id and frame is not None:
                frames = self.frames_from(tid, frame, line, t.glet, t.rt)
                if frames:
                    frames[0].assigned = dict(bound)
                    frames[0].previous = dict(prev)
                    for k in bound:
                        w = last_prev.get((k, *t.place))
                        if w is not None and k not in prev:
                            frames[0].previous_keys[k] = w
            elif t.glet is cur:
                frames = self.frames_from(tid, sys._getframe(1), None, t.glet, t.rt)
            elif t.glet is not None:
                frames = self.frames_from(tid, t.glet.gr_frame, None, t.glet, t.rt)
            else:
                frames = []
            for fi in frames:
                if fi.frame is not None and last_prev:
                    for k in self.code.locals(fi.frame):
                        w = last_prev.get((k, *t.place))
                        if w is not None and k not in fi.previous:
                            fi.previous_keys.setdefault(k, w)
            if tid == ORCH:  # a kernel it called runs on a thread of its own
                frames = [fi for fi in frames if fi.frame is None or not self.code.is_kernel(fi.frame)]
            st.frames[tid] = frames
            waits = t.rt.waiting().get(t.slot) if t.rt is not None else None
            if waits is not None:
                st.waiting[tid] = waits
                if frames:
                    frames[0].name += f" · waiting on {waits}"
