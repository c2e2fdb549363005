"""Ops without numerical effect (the catalogue's no-op rows) and the pipe set-up the sanitizer reads."""

from __future__ import annotations

from typing import Any

from ...ir import catalogue
from .. import context, sanitizer
from .base import (
    KERNELS,
    as_scalar,
)

# ---------------------------------------------------------------------- no-ops


# the ops that have no numerical effect are the catalogue's no-op rows (one place per op)
NOOPS: frozenset[str] = catalogue.NOOP_OPS


def _noop(*_args: Any, **_kw: Any) -> None:
    return None


for _n in NOOPS:
    KERNELS[_n] = _noop


def _initialize_pipe(*_args: Any, dir_mask: Any = 0, slot_num: Any = 0, id: Any = 0, **_kw: Any) -> None:
    """``system.a{i,v}c_initialize_pipe``: with the sanitizer on, the ring's slot count bounds its FIFOs
    (a push waits for a free slot, as on the NPU; see :meth:`crosscore.Runtime.set_ring`)."""
    rt = context.current_runtime()
    if rt is None or sanitizer.active() is None:
        return None
    try:
        mask, slots, pid = int(as_scalar(dir_mask)), int(as_scalar(slot_num)), int(as_scalar(id) or 0)
    except (TypeError, ValueError):
        return None
    if slots > 0:
        if mask & 1:
            rt.set_ring("to_aiv", pid, slots)
        if mask & 2:
            rt.set_ring("to_aic", pid, slots)
    return None


KERNELS["system.aic_initialize_pipe"] = _initialize_pipe
KERNELS["system.aiv_initialize_pipe"] = _initialize_pipe


def _task_dummy(*_args: Any, deps: Any = None, **_kw: Any) -> Any:
    """``system.task_dummy(deps=[...])``: a task without a kernel that joins ``deps``; with the
    sanitizer on, its task id (what a later ``deps=[...]`` waits for), else None."""
    san = sanitizer.active()
    return san.dummy(deps) if san is not None else None


KERNELS["system.task_dummy"] = _task_dummy
