"""Thread-local execution context of generated code.

What a kernel may ask about "where am I running":

* ``lane()``: the AIV sub-block index (``tile.get_subblock_idx()``); 0 outside
  cross-core groups and split_aiv regions; the AIC kernel of a group is lane 0.
* ``lane_count()``: how many AIV lanes run this code (0 outside groups/regions).
* ``role()``: ``"aic"`` / ``"aiv"`` inside a group kernel, else None.
* ``block_idx()`` / ``block_num()``: the SPMD block (``tile.get_block_idx()``,
  ``tile.get_block_num()``); 0 and 1 by default.
* ``current_runtime()``: the cross-core runtime of the group this kernel belongs
  to (see :mod:`.crosscore`), or None.

Everything is per thread, so two validations running in different threads never
see each other's state. The kernels of a group are greenlets of one thread: the
group runner swaps each kernel's context in when it resumes it, and every kernel starts
from a copy of the launching context's SPMD block (see :func:`snapshot` / :func:`bound`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "lane",
    "lane_count",
    "role",
    "split_mode",
    "block_idx",
    "block_num",
    "spmd_block",
    "subblock",
    "current_runtime",
    "snapshot",
    "bound",
    "current",
    "swap",
    "Ctx",
    "restore",
    "reset",
    "note_lane_effect",
    "lane_effects",
    "lane_skip_offered",
    "take_lane_skip",
    "set_alloc_guard",
    "alloc_guard",
]

_FIELDS = ("lane", "lanes", "role", "split_mode", "block_idx", "block_num", "runtime", "rank")


class Ctx:
    """One kernel's view of where it runs. Immutable by convention: changes make a copy,
    so the cross-core scheduler can switch kernels by swapping one reference."""

    __slots__ = _FIELDS

    def __init__(self) -> None:
        self.lane = 0
        self.lanes = 0
        self.role: str | None = None
        self.split_mode = 0
        self.block_idx = 0
        self.block_num = 1
        self.runtime: Any = None  # crosscore.Runtime of the group this kernel runs in
        self.rank: int | None = None  # the rank of a multi-rank program running it (exec.ranks)

    def derive(self, **fields: Any) -> Ctx:
        new = Ctx.__new__(Ctx)
        for f in _FIELDS:
            setattr(new, f, fields[f] if f in fields else getattr(self, f))
        for k in fields:
            if k not in _FIELDS:
                raise AttributeError(f"unknown execution-context field {k!r}")
        return new


class _State(threading.local):
    def __init__(self) -> None:
        self.ctx = Ctx()
        self.standalone: Any = None  # crosscore runtime used outside any group (lazy)
        self.memo: dict[Any, Any] = {}  # what a run computes once for many tasks (dropped with the run)
        self.lane_effects = 0  # what AIV lane 1 did that another kernel or the output can see (note_lane_effect)
        self.lane_skip: Any = None  # the next group may leave its idle lane 1 out (lane_skip_offered)
        self.alloc_guard: Any = None  # the run's allocation guard (set_alloc_guard)


_state = _State()


def lane() -> int:
    return _state.ctx.lane


def lane_count() -> int:
    return _state.ctx.lanes


def role() -> str | None:
    return _state.ctx.role


def split_mode() -> int:
    """Split mode of the enclosing split_aiv region (0 when none)."""
    return _state.ctx.split_mode


def block_idx() -> int:
    return _state.ctx.block_idx


def block_num() -> int:
    return _state.ctx.block_num


def current_runtime() -> Any:
    """The cross-core runtime bound to this kernel by a running group, or None."""
    return _state.ctx.runtime


def standalone() -> Any:
    return _state.standalone


def set_standalone(rt: Any) -> None:
    _state.standalone = rt


def current() -> Ctx:
    return _state.ctx


def swap(ctx: Ctx) -> Ctx:
    """Make ``ctx`` current; return the previous one (the cross-core scheduler's switch)."""
    old = _state.ctx
    _state.ctx = ctx
    return old


def snapshot() -> dict[str, Any]:
    """The inheritable part of this thread's context, as a dict."""
    c = _state.ctx
    return {f: getattr(c, f) for f in _FIELDS}


def restore(fields: dict[str, Any]) -> None:
    """Set every field from a :func:`snapshot`."""
    _state.ctx = _state.ctx.derive(**fields)


@contextmanager
def bound(**fields: Any) -> Iterator[None]:
    """Temporarily set context fields (``lane=1, role="aiv", runtime=rt`` ...)."""
    old = swap(_state.ctx.derive(**fields))
    try:
        yield
    finally:
        _state.ctx = old


@contextmanager
def spmd_block(idx: int, num: int) -> Iterator[None]:
    """Run the body as SPMD block ``idx`` of ``num``."""
    with bound(block_idx=int(idx), block_num=int(num)):
        yield


@contextmanager
def subblock(lane_idx: int, lanes: int = 2, *, mode: int | None = None) -> Iterator[None]:
    """Run the body as AIV lane ``lane_idx`` of ``lanes`` (a sequential split_aiv region)."""
    fields: dict[str, Any] = {"lane": int(lane_idx), "lanes": int(lanes)}
    if mode is not None:
        fields["split_mode"] = int(mode)
    with bound(**fields):
        yield


def run_memo() -> dict[Any, Any]:
    """Values this run computes once and reuses across its tasks, keyed by what they are made of
    (:func:`pypto_lsp.exec.pipebatch.push_loop`'s products across tasks); :func:`reset` drops them."""
    return _state.memo


def note_lane_effect() -> None:
    """AIV lane 1 did something that can be seen outside it: a write of a global buffer, a meeting
    with lane 0 (``aic_gather``, ``aiv_shard``). :mod:`.task_watch` counts them over a task."""
    _state.lane_effects += 1


def lane_effects() -> int:
    return _state.lane_effects


@contextmanager
def lane_skip_offered(count: Any) -> Iterator[None]:
    """Inside, the next group launched on this thread may leave out AIV lane 1 of a dual-dispatch
    no-split pair (``count(fn)``: its call of ``fn`` counted as made); None offers nothing (:mod:`.task_watch`)."""
    _state.lane_skip = count
    try:
        yield
    finally:
        _state.lane_skip = None


def take_lane_skip() -> Any:
    """The offer of :func:`lane_skip_offered`, withdrawn (a group inside that group does not see it)."""
    got, _state.lane_skip = _state.lane_skip, None
    return got


def set_alloc_guard(guard: Any) -> None:
    """The run's :class:`~pypto_lsp.ir.alloc_budget.Guard`, for kernels whose result size comes
    from an operand's value (:func:`pypto_lsp.exec.kernels.base.check_alloc`); set by the runner on
    the run's thread."""
    _state.alloc_guard = guard


def alloc_guard() -> Any:
    return _state.alloc_guard


def reset() -> None:
    """Back to defaults for this thread (also drops the standalone cross-core FIFOs)."""
    _state.__init__()  # type: ignore[misc]
