"""Run contexts as DAP threads: the orchestration is thread 1; each core of a group run (AIC,
AIV lanes, per SPMD block) and each kernel the orchestration calls on its own is a thread of its
task; the threads of an older task exit when the next task starts. The ranks of a multi-rank
program run their tasks side by side: a rank's next task ends only that rank's older threads,
and each thread knows its rank (its values are paired with that rank's of the previous pass)."""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType
from typing import Any

import greenlet

from ..validate.localize import place
from .code import Code
from .state import Thread

__all__ = ["Threads", "ORCH"]

ORCH = 1  # the orchestration's thread id


class Threads:
    """The threads of one run (a replay starts them afresh: :meth:`reset`)."""

    def __init__(self, code: Code, send: Callable[[str, dict[str, Any]], None]) -> None:
        self.code = code
        self.send = send
        self.by_id: dict[int, Thread] = {}
        self.reset(announce=False)

    def reset(self, announce: bool = True) -> None:
        if announce:
            for tid in list(self.by_id):
                self.send("thread", {"reason": "exited", "threadId": tid})
        self.by_id = {}
        self.by_key: dict[tuple[Any, ...], Thread] = {}
        self._next_tid = ORCH
        self._last_ctx: Any = None
        self._last_th: Thread | None = None
        self._last_rt: dict[int | None, Any] = {}  # by rank: the group run it made last
        self._last_root: dict[int | None, Any] = {}  # by rank: the frame of the kernel call its orchestration made last
        self.task = 0  # the tasks so far (of every rank)
        self._task_of: dict[int | None, int] = {}  # by rank: its current task

    def get(self, tid: int) -> Thread | None:
        return self.by_id.get(tid)

    def of(self, ctx: Any, frame: FrameType) -> Thread:
        """The thread of the run context ``ctx`` (exec.context) whose statement is in ``frame``."""
        rt = ctx.runtime
        grouped = ctx.role is not None and rt is not None and not rt.standalone
        if grouped and ctx is self._last_ctx and self._last_th is not None:
            return self._last_th
        kind = None
        if grouped:
            if rt is not self._last_rt.get(ctx.rank):
                self._new_task(ctx.rank)
                self._last_rt[ctx.rank] = rt
            key: tuple[Any, ...] = (self._task_of[ctx.rank], ctx.role, ctx.lane, ctx.block_idx)
        elif self.code.is_kernel(frame):
            # a kernel the orchestration calls on its own (no group): a core of its own, per call
            kind = self.code.kind(frame)
            root = frame
            for f in self.code.frames(frame.f_back):
                if not self.code.is_kernel(f):
                    break
                root = f
            if root is not self._last_root.get(ctx.rank):
                self._new_task(ctx.rank)
                self._last_root[ctx.rank] = root
            key = (self._task_of[ctx.rank], kind, ctx.lane, ctx.block_idx)
        elif ctx.block_num > 1:
            key = ("spmd", ctx.rank, ctx.block_idx)
        else:
            key = ("orch",)
        th = self.by_key.get(key)
        if th is None:
            th = self._new_thread(key, ctx, frame, kind)
        th.glet = greenlet.getcurrent()
        th.place = place(ctx)  # the orchestration's thread runs for each rank in turn
        self._last_ctx = ctx
        self._last_th = th
        return th

    def _new_thread(self, key: tuple[Any, ...], ctx: Any, frame: FrameType, kind: str | None) -> Thread:
        rt = ctx.runtime
        if kind is None:
            outer = self.code.frames(frame)
            fn = self.code.function(outer[-1]) if outer else "?"
        else:
            fn = self.code.function(frame)
        if key[0] == "orch":
            name = f"orchestration · {fn}"
        elif key[0] == "spmd":
            name = f"block {ctx.block_idx} · {fn}"
        else:
            if kind is not None:
                core = {"AIC": "AIC", "AIV": f"AIV{ctx.lane}"}.get(kind, kind)
            else:
                core = "AIC" if ctx.role == "aic" else f"AIV{ctx.lane}"
            name = f"{core} · {fn} · task {key[0]}"
            if ctx.block_num > 1:
                name += f" · block {ctx.block_idx}"
        if ctx.rank is not None and key[0] != "orch":
            name += f" · rank {ctx.rank}"
        tid = ORCH if key[0] == "orch" else self._alloc_tid()
        th = Thread(
            tid,
            key,
            name,
            role=ctx.role,
            lane=ctx.lane,
            block=ctx.block_idx,
            task=key[0] if key[0] not in ("orch", "spmd") else 0,
            rank=ctx.rank,
        )
        if th.role is not None and rt is not None:
            th.rt = rt
            th.slot = ctx.lane if rt.lanes_only else (0 if ctx.role == "aic" else 1 + ctx.lane)
        self.by_id[tid] = th
        self.by_key[key] = th
        self.send("thread", {"reason": "started", "threadId": tid})
        return th

    def _alloc_tid(self) -> int:
        if self._next_tid == ORCH:
            self._next_tid = ORCH + 1
        tid = self._next_tid
        self._next_tid += 1
        return tid

    def _new_task(self, rank: int | None) -> None:
        """A new group run (or kernel call) of ``rank``: the cores of its older tasks are gone."""
        self.task += 1
        self._task_of[rank] = self.task
        for tid, th in list(self.by_id.items()):
            if th.task and th.task < self.task and th.rank == rank:
                del self.by_id[tid]
                self.by_key.pop(th.key, None)
                self.send("thread", {"reason": "exited", "threadId": tid})
