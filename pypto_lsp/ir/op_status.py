"""Which ops our executor runs: the sets behind each catalogue row's ``status``.

Each set says why its ops run (the reference torch codegen handles them, or our own kernels
do: exec/kernels), and :func:`status` gives a row its word. The catalogue (:mod:`.catalogue`)
re-exports the sets; ``tests/unit/test_op_registry.py`` holds the statuses to the kernel
registry. Pure data: no torch, no LSP.
"""

from __future__ import annotations

from .dist_ops import DISTRIBUTED_EXECUTED

# ---------------------------------------------------------------------------
# Executor status sets
# ---------------------------------------------------------------------------

# The reference torch codegen (python/pypto/debug/torch_codegen.py) emits these
# as `None`: synchronisation, barriers, cache maintenance and pipe setup have no
# numerical effect when every core is a Python thread sharing torch tensors.
NOOP_OPS: frozenset[str] = frozenset(
    {
        "system.sync_src",
        "system.sync_dst",
        "system.sync_set",
        "system.sync_wait",
        "system.set_ffts",
        "system.bar_v",
        "system.bar_m",
        "system.bar_all",
        "system.fence",
        "system.cacheinvalid",
        "system.aic_initialize_pipe",
        "system.aiv_initialize_pipe",
        "system.reserve_buffer",
        "system.import_peer_buffer",
        "system.tfree_to_aic",
        "system.tfree_to_aiv",
    }
)


def words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Names the reference handles with the same entry for the tile.* and tensor.* prefix.
_REF_BOTH_PREFIXES = words(
    "add sub mul div maximum minimum fmod part_add part_mul part_max part_min "
    "and or not xor shl shr ands ors xors shls shrs "
    "adds subs muls divs maximums minimums rems fmods "
    "neg exp log sqrt rsqrt recip abs cast "
    "row_sum row_max row_min row_prod col_sum col_max col_min col_prod "
    "reshape transpose transpose_view concat fillpad assemble scatter_update "
    "row_expand_add row_expand_sub row_expand_mul row_expand_div "
    "col_expand_mul col_expand_sub col_expand_div col_expand row_expand expands "
    "row_expand_max row_expand_min row_expand_expdif col_expand_max col_expand_min col_expand_expdif"
)
_REF_TENSOR_ONLY = words("matmul matmul_acc dim create full slice read write")
_REF_TILE_ONLY = words(
    "load store create full alloc move slice extract read write get_block_idx relu rem cmp cmps "
    "matmul batch_matmul matmul_acc batch_matmul_acc matmul_bias gemv gemv_acc gemv_bias "
    "prelu sel sels lrelu addc subc addsc subsc "
    "tpush_to_aiv tpush_to_aic tpop_from_aic tpop_from_aiv get_subblock_idx"
)

# Everything the reference codegen handles: its dispatch table (198 names, 16 of
# them no-ops, 4 of them not registered ops) plus tensor.view, which it
# special-cases outside the table. Kept so divergences can be documented.
REFERENCE_SUPPORTED: frozenset[str] = frozenset(
    [f"{ns}.{op}" for ns in ("tile", "tensor") for op in _REF_BOTH_PREFIXES]
    + [f"tensor.{op}" for op in _REF_TENSOR_ONLY]
    + [f"tile.{op}" for op in _REF_TILE_ONLY]
    + sorted(NOOP_OPS)
    + ["tensor.view"]
)

# Names in the reference's table that PyPTO does not register (dead entries
# upstream); we keep rows for them so hand-edited dumps using them still run.
UNREGISTERED_OPS: frozenset[str] = frozenset({"tensor.maximums", "tensor.minimums", "tensor.rems", "tensor.transpose_view"})

# Ops our executor runs although the reference rejects them.
EXECUTOR_EXTRAS: frozenset[str] = frozenset(
    {
        "tile.aiv_shard",  # split_aiv boundary markers (reference fails every split_aiv program <= pass 21)
        "tile.aic_gather",
        "tensor.aiv_shard",
        "tensor.aic_gather",
        "tile.col_expand_add",  # registered but missing from the reference table
        "tensor.col_expand_add",
        "tile.set_validshape",  # metadata-only; appears in split-aiv programs
        "tensor.set_validshape",
        "tile.get_block_num",  # we run SPMD blocks, so the count is known
        "tensor.cmp",
        "tile.cos",
        "tile.sin",
        "tensor.cos",
        "tensor.sin",
    }
)

# Sorts on packed (value, index) pairs, the counter-based random generator and MX block-scaled
# matmul (exec/kernels/sorting.py, philox.py, matmul_mx.py); the reference codegen has none of them.
SORT_RANDOM_MX_EXECUTED: frozenset[str] = frozenset(
    words(
        "tile.sort32 tensor.sort32 tile.mrgsort_format1 tensor.mrgsort_format1 tile.mrgsort_format2 "
        "tensor.mrgsort_format2 tile.random tensor.random "
        "tile.matmul_mx tile.matmul_mx_acc tile.matmul_mx_bias tile.tget_scale_addr"
    )
)


# Ops our executor ran before issue 31 that the reference table lacks (argmax/argmin, ramps and
# triangles, fillpad variants, reinterpret views, the tensor forms of the block queries, gather_row,
# the dependency-only task). Every op with a kernel must be "supported" here: check's "cannot
# execute yet" is the executor's word (tests/adversarial/test_sweep3_static.py holds the statuses
# to the kernel registry).
EXECUTED_BEYOND_REFERENCE: frozenset[str] = frozenset(
    words(
        "tile.row_argmax tile.row_argmin tile.col_argmax tile.col_argmin "
        "tensor.row_argmax tensor.row_argmin tensor.col_argmax tensor.col_argmin "
        "tile.ci tensor.ci tile.tri tile.fillpad_expand tensor.fillpad_expand tile.fillpad_inplace "
        "tile.reinterpret_view tensor.reinterpret_view tensor.expand_clone tensor.alloc "
        "tensor.get_block_idx tensor.get_block_num tensor.get_subblock_idx "
        "tile.gather_row tensor.gather_row system.task_dummy"
    )
)

# Gathers and scatters (exec/kernels/gather_scatter.py).
GATHER_SCATTER_OPS: frozenset[str] = frozenset(
    words(
        "tile.gather tensor.gather tile.gather_mask tensor.gather_mask tile.gather_compare tensor.gather_compare "
        "tile.gatherb tile.scatter tensor.scatter tile.scatter_mask tensor.scatter_mask "
        "tile.mgather tile.mscatter tensor.paged_gather tensor.create_l1"
    )
)

# Ops whose kernel needs the result's annotated type (shape, dtype, valid region, memory
# space): the operands alone do not say it (a load's box, a pop's payload, a matmul's
# accumulator dtype, a compare's mask layout, a lane's part of a shard/gather).
NEEDS_RESULT_TYPE_NAMES = frozenset(
    words(
        "tile.load tile.slice tensor.slice tensor.view tile.cmp tile.cmps "
        "tile.tpop_from_aic tile.tpop_from_aiv tile.aiv_shard tile.aic_gather tensor.aiv_shard tensor.aic_gather "
        "tile.matmul tile.matmul_acc tile.matmul_bias tile.gemv tile.gemv_acc tile.gemv_bias "
        "tile.batch_matmul tile.batch_matmul_acc tensor.matmul tensor.matmul_acc"
    )
)


# The language's arrays, task ids, launch-shape queries, the SPMD barrier and async prefetch
# (exec/kernels/arrays.py, system_ops.py, prefetch.py; the reference has no handler for any).
LANGUAGE_OPS: frozenset[str] = frozenset(
    words(
        "array.create array.get_element array.update_element "
        "system.task_invalid system.task_is_valid system.task_dummy system.available_aiv_count "
        "system.available_cluster_count system.syncall "
        "prefetch.make_context prefetch.async_prefetch prefetch.session prefetch.wait"
    )
)


def status(name: str) -> str:
    """A catalogue row's ``status``: "noop", "supported" or "unsupported"."""
    if name in NOOP_OPS:
        return "noop"
    if (
        name in REFERENCE_SUPPORTED
        or name in EXECUTOR_EXTRAS
        or name in LANGUAGE_OPS
        or name in DISTRIBUTED_EXECUTED
        or name in SORT_RANDOM_MX_EXECUTED
    ):
        return "supported"
    if name in EXECUTED_BEYOND_REFERENCE:
        return "supported"
    if name in GATHER_SCATTER_OPS:
        return "supported"
    return "unsupported"
