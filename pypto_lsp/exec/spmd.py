"""The SPMD blocks of one launch, and ``system.syncall``'s barrier across them.

A launch of N blocks (a call with ``core_num=N``) runs the blocks one after another, each with its
``get_block_idx()`` (:mod:`.context`). That order is what every block sees unless the kernel meets
a barrier: ``pl.system.syncall`` (pypto ``src/ir/op/sync_ops/sync.cpp``, ``pto::SYNCALL``: "all
participating cores arrive before any proceeds", hard FFTS or soft GM-polling, ``core_type``
``aiv_only`` / ``aic_only`` / ``mix``) makes every block's writes before it visible to every
block's reads after it. With blocks run whole one after another, block 0 would read after the
barrier what block 1 has not written yet.

So a launch whose kernel can reach a syncall (:attr:`~pypto_lsp.analysis.lowering.FunctionLowering.barrier`,
decided from the IR) runs each block as a greenlet of the calling thread: a block that reaches the
barrier parks; once every block has parked or finished, the parked blocks go on in block order.
Everything stays deterministic (one block runs at a time, always in the same order). A block that
finishes while others wait at the barrier would leave them waiting forever on the device: that is
an :class:`~pypto_lsp.exec.runtime.ExecutionError` naming the blocks. Hard and soft barriers are
the same here (the soft form's workspace counter is the device's means to the same end).

The sanitizer (:mod:`.sanitizer`) keys each block's writes by the barriers it has passed
(:func:`phase`): two blocks writing the same elements race only between the same two barriers.

Limitation: inside one block the barrier parks the core that reached it; when a block is itself a
Group (AIC and AIV kernels as greenlets, :mod:`.crosscore`), its other cores wait for that core's
turn, so a block counts as arrived when its first core arrives.

The scope and loop forms of the frontend (``with pl.spmd(N):`` / ``for i in pl.spmd(N):`` around
inline statements) still run block after block: a barrier reached there is passed through (the
outlining passes turn those forms into the launch above).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import greenlet

from . import context

__all__ = ["run_blocks", "barrier", "phase", "BarrierError"]


class BarrierError(RuntimeError):
    """Some blocks wait at a barrier that the others finished without reaching."""

    kind = "deadlock"


class _Launch:
    def __init__(self, driver: greenlet.greenlet, count: int) -> None:
        self.driver = driver
        self.count = count
        self.parked: dict[int, greenlet.greenlet] = {}
        self.phases: dict[int, int] = {}  # block -> barriers it has passed


class _Stack(threading.local):
    def __init__(self) -> None:
        self.launches: list[_Launch] = []


_stack = _Stack()


def barrier() -> None:
    """``system.syncall``: park this block until every block of the launch arrives (a no-op outside a
    launch that runs its blocks as greenlets, or with one block)."""
    if not _stack.launches:
        return
    launch = _stack.launches[-1]
    if launch.count <= 1:
        return
    block = context.block_idx()
    launch.parked[block] = greenlet.getcurrent()
    launch.driver.switch()
    launch.phases[block] = launch.phases.get(block, 0) + 1


def phase() -> int:
    """How many barriers this block of the innermost launch has passed (0 outside one): the
    sanitizer's writes of two blocks race only within one phase."""
    if not _stack.launches:
        return 0
    return _stack.launches[-1].phases.get(context.block_idx(), 0)


def run_blocks(fn: Callable[..., Any], count: int, args: tuple[Any, ...]) -> Any:
    """Blocks ``0 .. count-1`` of ``fn(*args)`` as greenlets that meet at each :func:`barrier`;
    block 0's return value."""
    me = greenlet.getcurrent()
    launch = _Launch(me, count)
    outer = context.current()
    results: dict[int, Any] = {}

    def body(i: int) -> Callable[[], None]:
        def run() -> None:
            results[i] = fn(*args)

        return run

    ctxs = [outer.derive(block_idx=i, block_num=count) for i in range(count)]
    resume_at: dict[int, greenlet.greenlet] = {i: greenlet.greenlet(body(i), parent=me) for i in range(count)}
    finished: set[int] = set()
    _stack.launches.append(launch)
    try:
        while resume_at:
            for i in sorted(resume_at):
                g = resume_at[i]
                context.swap(ctxs[i])
                try:
                    g.switch()
                finally:
                    ctxs[i] = context.swap(outer)  # where it stopped (inside a group: that core's context)
                if i not in launch.parked:
                    finished.add(i)
            resume_at = dict(launch.parked)
            launch.parked.clear()
            if resume_at and finished:
                waiting = sorted(resume_at)
                gone = sorted(set(range(count)) - set(resume_at))
                raise BarrierError(
                    f"system.syncall: block(s) {waiting} of {count} wait at the barrier that block(s) {gone} finished "
                    "without reaching: on the device they wait forever"
                )
    finally:
        _stack.launches.pop()
        context.swap(outer)
    return results.get(0)
