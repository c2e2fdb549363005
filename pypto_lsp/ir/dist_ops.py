"""The distributed ops our executor runs (``pld.*``, ``builtin.tensor.*``, ``dist.*``).

Their rows (parameters, doc) stay in :mod:`.catalogue`; this set only marks them executed
(``OpSpec.status``), kept apart so the multi-rank runtime (:mod:`pypto_lsp.exec.ranks`,
:mod:`pypto_lsp.exec.kernels.distributed`) owns its list. Semantics: pypto
``docs/en/user/distributed/01-collectives.md`` and ``02-primitives.md``.
"""

from __future__ import annotations

_COLLECTIVES = ("allreduce", "barrier", "broadcast", "allgather", "reduce_scatter", "all_to_all", "all_to_all_v")

DISTRIBUTED_EXECUTED: frozenset[str] = frozenset(
    [
        "pld.system.get_comm_ctx",
        "pld.system.rank",
        "pld.system.nranks",
        "pld.system.world_size",
        "pld.system.notify",
        "pld.system.wait",
        "pld.system.defer_wait",
        "pld.tensor.alloc_window_buffer",
        "pld.tensor.window",
        "pld.tensor.get",
        "pld.tensor.put",
        "pld.tile.get",
        "pld.tile.put",
        "pld.tile.remote_load",
        "pld.tile.remote_store",
        "pld.tensor.remote_store",
        "builtin.tensor.allreduce_ring",
        "dist.make_tensor",
        "dist.tree_reduce",
        "dist.submit_worker",
        "dist.submit_orchestrator",
        "dist.future_get",
    ]
    + [f"pld.tensor.{c}" for c in _COLLECTIVES]
    + [f"builtin.tensor.{c}" for c in _COLLECTIVES]
)

# ops whose kernel names its signal in a deadlock message (codegen passes ``_name=`` the first operand as printed)
NAMES_FIRST_OPERAND: frozenset[str] = frozenset({"pld.system.wait", "pld.system.defer_wait"})
