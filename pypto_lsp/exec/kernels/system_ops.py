"""System queries and task ids: ``system.task_invalid``, ``system.task_is_valid``,
``system.available_aiv_count``, ``system.available_cluster_count``, ``system.syncall``.

Sources (hw-native-sys/pypto at e2d0f78ae6d7):

* ``src/ir/op/sync_ops/task.cpp``: ``task_invalid`` is the invalid ``PTO2TaskId`` sentinel (the
  DSL's ``None`` in a task-id position; ``set_dependencies`` skips it); ``task_is_valid(t)`` is
  true for the id of a real dispatched task, false for the sentinel. Here a task id is an ``int``
  (valid) or None (the sentinel); see :func:`new_task_id`.
* ``src/ir/op/sync_ops/launch.cpp``: ``available_aiv_count`` / ``available_cluster_count`` are the
  device's standalone AIV and MIX-cluster (AIC) counts, read by the runtime at bring-up
  (hw-native-sys/simpler ``rt_available_aiv_count`` / ``rt_available_cluster_count``,
  ``src/a2a3/runtime/host_build_graph/docs/SUBMIT_BY_CLUSTER.md``). We model Ascend910B, the
  fixtures' backend: 24 AI cores of one AIC and two AIV each, so 48 AIV and 24 clusters.
* ``src/ir/op/sync_ops/sync.cpp``: ``syncall`` is the all-participant barrier of an SPMD launch
  (:func:`pypto_lsp.exec.spmd.barrier`).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from .. import spmd
from .base import KERNELS, as_scalar

__all__ = ["AIV_COUNT", "CLUSTER_COUNT", "new_task_id", "task_is_valid"]

AIV_COUNT = 48  # Ascend910B: 24 AI cores x 2 AIV
CLUSTER_COUNT = 24  # Ascend910B: 24 AI cores (one AIC each)


# ids of launches the sanitizer does not number start here: far above any task index it gives, so a
# ``deps=[...]`` naming one never becomes an edge to an unrelated task of the sanitizer's
UNNUMBERED_BASE = 1 << 40


class _Ids(threading.local):
    def __init__(self) -> None:
        self.ids = itertools.count(UNNUMBERED_BASE)


_ids = _Ids()


def new_task_id() -> int:
    """A task id for a launch the sanitizer does not number (it is off, or the launch is a scope's
    ``as tid``): valid and distinct from the others of this thread; only its validity is observed."""
    return next(_ids.ids)


def task_is_valid(t: Any) -> bool:
    t = as_scalar(t)
    return isinstance(t, int) and not isinstance(t, bool) and t >= 0


def _task_invalid(*_args: Any, **_kw: Any) -> None:
    return None


def _task_is_valid(t: Any = None, *_args: Any, **_kw: Any) -> bool:
    return task_is_valid(t)


def _available_aiv_count(*_args: Any, **_kw: Any) -> int:
    return AIV_COUNT


def _available_cluster_count(*_args: Any, **_kw: Any) -> int:
    return CLUSTER_COUNT


def _syncall(*_args: Any, **_kw: Any) -> None:
    """Hard (no operands) or soft (``gm_workspace``, ``used_cores``): the same barrier here."""
    spmd.barrier()


KERNELS["system.task_invalid"] = _task_invalid
KERNELS["system.task_is_valid"] = _task_is_valid
KERNELS["system.available_aiv_count"] = _available_aiv_count
KERNELS["system.available_cluster_count"] = _available_cluster_count
KERNELS["system.syncall"] = _syncall
