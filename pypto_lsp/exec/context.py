"""Thread-local execution context of generated code.

What a kernel may ask about "where am I running":

* ``lane()``: the AIV sub-block index (``tile.get_subblock_idx()``); 0 outside
  cross-core groups and split_aiv regions; the AIC thread of a group is lane 0.
* ``lane_count()``: how many AIV lanes run this code (0 outside groups/regions).
* ``role()``: ``"aic"`` / ``"aiv"`` inside a group thread, else None.
* ``block_idx()`` / ``block_num()``: the SPMD block (``tile.get_block_idx()``,
  ``tile.get_block_num()``); 0 and 1 by default.
* ``current_runtime()``: the cross-core runtime of the group this thread belongs
  to (see :mod:`.crosscore`), or None.

Everything is per thread, so two validations running in different threads never
see each other's state. Group threads get a copy of the launching thread's SPMD
block (see :func:`snapshot` / :func:`bound`).
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
    "restore",
    "reset",
]

_FIELDS = ("lane", "lanes", "role", "split_mode", "block_idx", "block_num", "runtime", "lane_sim")


class _State(threading.local):
    def __init__(self) -> None:
        self.lane: int = 0
        self.lanes: int = 0
        self.role: str | None = None
        self.split_mode: int = 0
        self.block_idx: int = 0
        self.block_num: int = 1
        self.runtime: Any = None  # crosscore._Runtime of the group this thread runs in
        self.lane_sim: Any = None  # shared state of a sequential split_aiv region run
        self.standalone: Any = None  # crosscore runtime used outside any group (lazy)


_state = _State()


def lane() -> int:
    return _state.lane


def lane_count() -> int:
    return _state.lanes


def role() -> str | None:
    return _state.role


def split_mode() -> int:
    """Split mode of the enclosing split_aiv region (0 when none)."""
    return _state.split_mode


def block_idx() -> int:
    return _state.block_idx


def block_num() -> int:
    return _state.block_num


def current_runtime() -> Any:
    """The cross-core runtime bound to this thread by a running group, or None."""
    return _state.runtime


def lane_sim() -> Any:
    return _state.lane_sim


def standalone() -> Any:
    return _state.standalone


def set_standalone(rt: Any) -> None:
    _state.standalone = rt


def snapshot() -> dict[str, Any]:
    """The inheritable part of this thread's context (for handing to worker threads)."""
    return {f: getattr(_state, f) for f in _FIELDS}


def restore(fields: dict[str, Any]) -> None:
    """Set every field from a :func:`snapshot` (the cross-core scheduler swaps kernels' contexts)."""
    for k, v in fields.items():
        setattr(_state, k, v)


@contextmanager
def bound(**fields: Any) -> Iterator[None]:
    """Temporarily set context fields (``lane=1, role="aiv", runtime=rt`` ...)."""
    old = {k: getattr(_state, k) for k in fields}
    for k, v in fields.items():
        if k not in _FIELDS:
            raise AttributeError(f"unknown execution-context field {k!r}")
        setattr(_state, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(_state, k, v)


@contextmanager
def spmd_block(idx: int, num: int) -> Iterator[None]:
    """Run the body as SPMD block ``idx`` of ``num``."""
    with bound(block_idx=int(idx), block_num=int(num)):
        yield


@contextmanager
def subblock(lane_idx: int, lanes: int = 2, *, mode: int | None = None, sim: Any = None) -> Iterator[None]:
    """Run the body as AIV lane ``lane_idx`` of ``lanes`` (a sequential split_aiv region)."""
    fields: dict[str, Any] = {"lane": int(lane_idx), "lanes": int(lanes)}
    if mode is not None:
        fields["split_mode"] = int(mode)
    if sim is not None:
        fields["lane_sim"] = sim
    with bound(**fields):
        yield


def reset() -> None:
    """Back to defaults for this thread (also drops the standalone cross-core FIFOs)."""
    _state.__init__()  # type: ignore[misc]
