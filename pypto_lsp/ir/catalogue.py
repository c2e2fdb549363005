"""The PyPTO op catalogue: one row per op the compiler registers.

Every ``pl.<ns>.<op>(...)`` / ``pld.<ns>.<op>(...)`` call in a pass dump names
one of these ops. A row records what the *printed* call looks like (positional
parameters in printed order, accepted keywords), which result rule gives the
value's shape/dtype, a one-line description, whether our executor runs it (the sets in
:mod:`.op_status`), and what kind of value each operand must be (a tile, a tensor, a scalar, a
list of scalars: read from PyPTO's registrations into ``op_registry.json``, checked by
:mod:`.check`, shown by hover).

Facts (names, argument order and arity, keyword names, result types) were read
from the op registrations in hw-native-sys/pypto (``src/ir/op/**``, commit
e2d0f78ae6d7) and from its printer; the descriptions are ours. See
``docs/pass-dump-reference.md`` §1.6 and §3 in the shared docs.

Printed form vs IR form: the printer emits IR positional args in order and IR
kwargs as keywords, except for a few ops it reshuffles (tile/tensor.full,
*.reinterpret_view, *.gather_row with 6 args, tile.mgather, soft
system.syncall, system.task_dummy). Rows describe the printed form; consumers
that rebuild IR must undo those reshuffles.

This module is pure data: no torch, no LSP.
"""

from __future__ import annotations

import json
import keyword
from dataclasses import dataclass, field, replace
from importlib import resources

from .op_status import (  # the sets are looked up here too: the catalogue is where op facts are
    EXECUTED_BEYOND_REFERENCE,
    EXECUTOR_EXTRAS,
    GATHER_SCATTER_OPS,
    LANGUAGE_OPS,
    NEEDS_RESULT_TYPE_NAMES,
    NOOP_OPS,
    REFERENCE_SUPPORTED,
    SORT_RANDOM_MX_EXECUTED,
    UNREGISTERED_OPS,  # noqa: F401
    status,
    words,
)


@dataclass(frozen=True, slots=True)
class OpSpec:
    name: str  # IR op name (no trailing underscore), e.g. "tile.and"
    namespace: str  # everything before the last dot: "tile", "pld.tile", ...
    params: tuple[str, ...]  # positional parameters in printed order
    min_args: int  # required positionals; the rest of params are optional
    kwargs: tuple[str, ...]  # keywords accepted in the printed form ("attrs" implied)
    result: str | None  # key into RESULT_RULES, None when no rule fits
    doc: str  # one line
    status: str  # "supported" | "noop" | "unsupported" (for our executor)
    variadic: bool = False  # any number of positionals accepted
    # bytes of temporaries our kernel (exec/kernels) holds per element of the result at its peak,
    # beyond the result itself, in its most expensive dtype case (a wide product before the cast,
    # float64 rounding neighbours, unpacked mask bits); the allocation budget counts them, before
    # the run (ir/alloc_static) and at runtime-sized sites (ir/alloc_budget). 0: the kernel
    # allocates its result and nothing the size of it. Copies of operands are not counted (an
    # operand already fit the budget)
    temp_bytes: int = 0
    # the kernel reads the annotated type of the assigned name (codegen passes ``_rtype=``)
    needs_result_type: bool = False
    # what kind of value an operand (positional or keyword) must be: "tile", "tensor", "scalar"
    # or "tuple" (of scalars: shapes, offsets, indices); operands not named here take any value.
    # Read from PyPTO's registration of the op (op_registry.json, tools/gen_op_registry.py)
    operand_kinds: dict[str, str] = field(default_factory=dict, compare=False)
    # what a keyword attribute takes, from its declared C++ type: "dtype", "bool", "int", "number",
    # "memory_space", "pad_value", "layout", "string" (same source)
    keyword_kinds: dict[str, str] = field(default_factory=dict, compare=False)


RESULT_RULES: dict[str, str] = {
    "same": "same shape and dtype as arg 0",
    "binary": "shape of arg 0 broadcast with arg 1; dtype of arg 0 (upstream promotes both operand dtypes)",
    "row_reduce": "arg 0's shape with the last dim set to 1; dtype of arg 0",
    "col_reduce": "arg 0's shape with dim -2 set to 1; dtype of arg 0",
    "matmul": (
        "[M, N] from lhs [M, K] and rhs [K, N] (a_trans/b_trans swap the last two dims of an operand; "
        "leading batch dims kept); dtype = out_dtype kwarg if given, else FP32 for float operands and "
        "INT32 for int8 operands (tile forms; tensor.matmul without out_dtype keeps the promoted "
        "operand dtype)"
    ),
    "matmul_acc": "shape and dtype of arg 0 (the accumulator)",
    "cast": "shape of arg 0; dtype from the target_type kwarg",
    "load": "shape from the positional 'shapes' arg (arg 2); dtype of arg 0",
    "slice": "shape from the positional 'shape' arg (arg 1); dtype of arg 0",
    "create": "shape from arg 0; dtype from the dtype kwarg",
    "reshape": "shape from arg 1; dtype of arg 0",
    "store": (
        "the destination operand, returned as is (arg 2 for tile.store and tile.mscatter; arg 0 for tensor.assemble and tile.assemble)"
    ),
    "cmp_mask": "packed predicate mask: UINT8, shape [M, roundup(ceil(N / 8), 32)] for an [M, N] input",
    "scalar_index": "a pl.Scalar[pl.INDEX]",
    "scalar_elem": "a scalar of arg 0's dtype",
    "none": "no value (side effect only)",
    "ptr": "a pl.Ptr (buffer identity)",
    "popped": "given only by the assignment's annotation (what the peer core pushed)",
    "tuple": "a tuple of arrays, unpacked by the statements after it",
}


# ---------------------------------------------------------------------------
# Row constructor
# ---------------------------------------------------------------------------

_ROWS: dict[str, OpSpec] = {}


def _op(
    name: str,
    params: str = "",
    kwargs: str = "",
    result: str | None = None,
    doc: str = "",
    temp_bytes: int = 0,
) -> None:
    """Add one row.

    ``params`` is a space-separated list of positional parameter names in
    printed order; a trailing ``?`` marks an optional (trailing) positional.
    ``kwargs`` is a space-separated list of keyword names.
    """
    if name in _ROWS:
        raise ValueError(f"duplicate catalogue row {name!r}")
    if result is not None and result not in RESULT_RULES:
        raise ValueError(f"{name}: unknown result rule {result!r}")
    raw = words(params)
    names = tuple(p.rstrip("?") for p in raw)
    required = [not p.endswith("?") for p in raw]
    min_args = sum(required)
    if any(required[min_args:]):
        raise ValueError(f"{name}: optional positionals must come last")
    _ROWS[name] = OpSpec(
        name=name,
        namespace=name.rpartition(".")[0],
        params=names,
        min_args=min_args,
        kwargs=words(kwargs),
        result=result,
        doc=doc,
        status=status(name),
        temp_bytes=temp_bytes,
        needs_result_type=name in NEEDS_RESULT_TYPE_NAMES,
    )


# The table below is laid out one row per op for reading; keep the formatter out.
# fmt: off

# ---------------------------------------------------------------------------
# tile.*: memory and data movement
# ---------------------------------------------------------------------------
_op("tile.load", "tensor offsets shapes valid_shape", "target_memory clamp", "load",
    "copy a tensor window into a new tile; outside valid_shape the tile is zero")
_op("tile.store", "tile offsets output_tensor shapes?", "atomic", "store",
    "write the tile's valid region into output_tensor at offsets (atomic=Add accumulates); 4th arg = N-D shape")
_op("tile.move", "tile", "target_memory blayout slayout", "same",
    "move a tile to another memory space / layout; values unchanged")
_op("tile.alloc", "memory_space size", "pinned", "ptr",
    "declare an on-chip buffer of `size` bytes in a memory space (printed as pl.Mem.X)")
_op("tile.create", "shape", "dtype target_memory transpose flat_layout", "create",
    "new tile with undefined contents")
_op("tile.full", "shape", "dtype value", "create",
    "new tile filled with `value` (IR keeps value as positional arg 1)")
_op("tile.read", "tile indices", "", "scalar_elem", "read one element of a tile")
_op("tile.write", "tile indices value", "", "same", "write one element of a tile in place; returns the tile")
_op("tile.get_block_idx", "", "", "scalar_index", "index of the current SPMD block")
_op("tile.get_subblock_idx", "", "", "scalar_index", "vector lane index (0/1) of the current AIV core")
_op("tile.get_block_num", "", "", "scalar_index", "number of blocks in the current SPMD launch")
_op("tile.ci", "start shape", "dtype descending", None, "integer ramp start, start+1, ... (or descending)", temp_bytes=8)
_op("tile.tri", "diagonal shape valid_shape?", "dtype upper", None, "lower/upper triangular 0/1 mask tile", temp_bytes=8)
_op("tile.random", "key0 key1 counter0 counter1 counter2 counter3 shape valid_shape?", "dtype rounds", None,
    "counter-based pseudo-random tile")
# Printed with only (mem, idx) positional; the optional scratch / valid_shape
# operands are printed as keywords.
_op("tile.mgather", "mem idx", "scratch valid_shape coalesce gather_oob target_memory", None,
    "gather rows or elements of a GM tensor by index into a tile")
_op("tile.mscatter", "src idx output_tensor", "", "store", "scatter tile elements into a GM tensor by index")
_op("tile.gather_row", "dst src dst_offset src_offset shapes", "transpose valid_shape", "same",
    "copy one GM row into a sub-region of an on-chip tile (destination-passing); 6th operand printed as valid_shape=", temp_bytes=8)

# ---------------------------------------------------------------------------
# tile.*: element-wise
# ---------------------------------------------------------------------------
_op("tile.add", "lhs rhs", "", "binary", "element-wise a + b")
_op("tile.sub", "lhs rhs", "", "binary", "element-wise a - b")
_op("tile.mul", "lhs rhs", "", "binary", "element-wise a * b")
_op("tile.div", "lhs rhs", "high_precision", "binary", "element-wise true division a / b")
_op("tile.maximum", "lhs rhs", "", "binary", "element-wise max(a, b)")
_op("tile.minimum", "lhs rhs", "", "binary", "element-wise min(a, b)")
_op("tile.fmod", "lhs rhs", "", "binary", "element-wise C remainder (sign of the dividend)")
_op("tile.rem", "lhs rhs tmp", "", "binary", "element-wise remainder; tmp is scratch")
_op("tile.part_add", "src0 src1", "", "binary", "add two partially valid tiles (copy where only one is valid)", temp_bytes=24)
_op("tile.part_mul", "src0 src1", "", "binary", "multiply two partially valid tiles (copy where only one is valid)", temp_bytes=24)
_op("tile.part_max", "src0 src1", "", "binary", "max of two partially valid tiles (copy where only one is valid)", temp_bytes=24)
_op("tile.part_min", "src0 src1", "", "binary", "min of two partially valid tiles (copy where only one is valid)", temp_bytes=24)
_op("tile.adds", "lhs rhs", "", "same", "tile + scalar")
_op("tile.subs", "lhs rhs", "", "same", "tile - scalar")
_op("tile.muls", "lhs rhs", "", "same", "tile * scalar")
_op("tile.divs", "lhs rhs", "", "same", "tile / scalar")
_op("tile.maximums", "lhs rhs", "", "same", "max(tile, scalar)")
_op("tile.minimums", "lhs rhs", "", "same", "min(tile, scalar)")
_op("tile.fmods", "lhs rhs", "", "same", "C remainder of tile by scalar")
_op("tile.rems", "lhs rhs tmp", "", "same", "remainder of tile by scalar; tmp is scratch")
_op("tile.and", "lhs rhs", "", "binary", "bitwise AND of two integer tiles (printed and_)")
_op("tile.or", "lhs rhs", "", "binary", "bitwise OR of two integer tiles (printed or_)")
_op("tile.xor", "lhs rhs tmp", "", "binary", "bitwise XOR of two integer tiles; tmp is scratch")
_op("tile.shl", "lhs rhs", "", "binary", "element-wise left shift")
_op("tile.shr", "lhs rhs", "", "binary", "element-wise right shift")
_op("tile.ands", "lhs rhs", "", "same", "bitwise AND with an integer scalar")
_op("tile.ors", "lhs rhs", "", "same", "bitwise OR with an integer scalar")
_op("tile.xors", "lhs rhs tmp", "", "same", "bitwise XOR with an integer scalar; tmp is scratch")
_op("tile.shls", "lhs rhs", "", "same", "left shift by an integer scalar")
_op("tile.shrs", "lhs rhs", "", "same", "right shift by an integer scalar")
_op("tile.addc", "lhs rhs rhs2", "", "binary", "a + b + c over three tiles", temp_bytes=8)
_op("tile.subc", "lhs rhs rhs2", "", "binary", "a - b - c over three tiles", temp_bytes=8)
_op("tile.addsc", "lhs rhs rhs2", "", "same", "tile + scalar + tile", temp_bytes=8)
_op("tile.subsc", "lhs rhs rhs2", "", "same", "tile - scalar - tile", temp_bytes=8)
_op("tile.prelu", "tile slope tmp", "", "same", "x if x > 0 else x * slope (slope tile); tmp is scratch", temp_bytes=9)
_op("tile.lrelu", "tile slope", "", "same", "leaky ReLU with a scalar slope", temp_bytes=9)
_op("tile.relu", "tile", "", "same", "max(x, 0)")
_op("tile.sel", "mask lhs rhs tmp", "", None, "pick lhs where the packed mask is set, else rhs; result like lhs", temp_bytes=16)
_op("tile.sels", "mask src tmp scalar", "", None, "pick src where the packed mask is set, else the scalar; result like src", temp_bytes=16)
_op("tile.cmp", "lhs rhs", "cmp_type", "cmp_mask",
    "compare two tiles into a packed bit mask (cmp_type 0 EQ, 1 NE, 2 LT, 3 LE, 4 GT, 5 GE)", temp_bytes=96)
_op("tile.cmps", "lhs rhs", "cmp_type", "cmp_mask", "compare a tile with a scalar into a packed bit mask", temp_bytes=96)
_op("tile.fillpad", "tile", "pad_value", "same", "copy of the tile with everything outside its valid region set to the pad value")
_op("tile.fillpad_inplace", "tile", "pad_value", "same", "set the tile's padding (outside valid region) in place")
_op("tile.fillpad_expand", "tile shape", "pad_value", None, "copy a tile into a larger tile, padding the rest")

# ---------------------------------------------------------------------------
# tile.*: unary and cast
# ---------------------------------------------------------------------------
_op("tile.neg", "tile", "", "same", "element-wise -x")
_op("tile.exp", "tile", "", "same", "element-wise e**x")
_op("tile.log", "tile", "high_precision", "same", "element-wise natural log")
_op("tile.sqrt", "tile", "", "same", "element-wise square root")
_op("tile.rsqrt", "tile tmp?", "", "same", "element-wise 1/sqrt(x); a tmp tile selects the high-precision path")
_op("tile.recip", "tile", "high_precision", "same", "element-wise 1/x")
_op("tile.abs", "tile", "", "same", "element-wise |x|")
_op("tile.sin", "tile", "", "same", "element-wise sine (radians, FP32 only)")
_op("tile.cos", "tile", "", "same", "element-wise cosine (radians, FP32 only)")
_op("tile.not", "tile", "", "same", "bitwise NOT of a 16-bit integer tile (printed not_)")
_op("tile.cast", "tile", "target_type mode", "cast",
    "convert to target_type with rounding `mode` (none/rint/round/floor/ceil/trunc/odd)", temp_bytes=80)

# ---------------------------------------------------------------------------
# tile.*: reductions and broadcast-expands
# ---------------------------------------------------------------------------
_op("tile.row_sum", "tile tmp_tile", "", "row_reduce", "sum of each row -> [M, 1]; tmp_tile is scratch")
_op("tile.row_max", "tile tmp_tile", "", "row_reduce", "max of each row -> [M, 1]; tmp_tile is scratch")
_op("tile.row_min", "tile tmp_tile", "", "row_reduce", "min of each row -> [M, 1]; tmp_tile is scratch")
_op("tile.row_prod", "tile tmp_tile", "", "row_reduce", "product of each row -> [M, 1]; tmp_tile is scratch")
_op("tile.col_sum", "tile tmp_tile?", "", "col_reduce", "sum of each column -> [1, N]; optional tmp selects tree reduction")
_op("tile.col_max", "tile", "", "col_reduce", "max of each column -> [1, N]")
_op("tile.col_min", "tile", "", "col_reduce", "min of each column -> [1, N]")
_op("tile.col_prod", "tile", "", "col_reduce", "product of each column -> [1, N]")
_op("tile.row_argmax", "tile tmp_tile", "", None, "column index of each row's maximum -> [M, 1] indices")
_op("tile.row_argmin", "tile tmp_tile", "", None, "column index of each row's minimum -> [M, 1] indices")
_op("tile.col_argmax", "tile tmp_tile", "", None, "row index of each column's maximum -> [1, N] indices")
_op("tile.col_argmin", "tile tmp_tile", "", None, "row index of each column's minimum -> [1, N] indices")
_op("tile.row_expand", "target row_vec", "", "binary", "broadcast an [M, 1] vector to target's shape", temp_bytes=8)
_op("tile.row_expand_add", "tile row_vec tmp?", "", "binary", "tile + [M, 1] vector broadcast along columns; tmp is scratch")
_op("tile.row_expand_sub", "tile row_vec", "", "binary", "tile - [M, 1] vector broadcast along columns")
_op("tile.row_expand_mul", "tile row_vec", "", "binary", "tile * [M, 1] vector broadcast along columns")
_op("tile.row_expand_div", "tile row_vec", "", "binary", "tile / [M, 1] vector broadcast along columns")
_op("tile.row_expand_max", "tile row_vec", "", "binary", "max(tile, [M, 1] vector broadcast)")
_op("tile.row_expand_min", "tile row_vec", "", "binary", "min(tile, [M, 1] vector broadcast)")
_op("tile.row_expand_expdif", "tile row_vec", "", "binary", "exp(tile - [M, 1] vector broadcast)", temp_bytes=8)
_op("tile.col_expand", "target col_tile", "", "binary", "broadcast a [1, N] vector to target's shape", temp_bytes=8)
_op("tile.col_expand_add", "target col_tile", "", "binary", "tile + [1, N] vector broadcast along rows")
_op("tile.col_expand_sub", "target col_tile", "", "binary", "tile - [1, N] vector broadcast along rows")
_op("tile.col_expand_mul", "target col_tile", "", "binary", "tile * [1, N] vector broadcast along rows")
_op("tile.col_expand_div", "target col_tile", "", "binary", "tile / [1, N] vector broadcast along rows")
_op("tile.col_expand_max", "target col_tile", "", "binary", "max(tile, [1, N] vector broadcast)")
_op("tile.col_expand_min", "target col_tile", "", "binary", "min(tile, [1, N] vector broadcast)")
_op("tile.col_expand_expdif", "target col_tile", "", "binary", "exp(tile - [1, N] vector broadcast)", temp_bytes=8)
_op("tile.expands", "target scalar", "", "same", "tile shaped like target, filled with the scalar")

# ---------------------------------------------------------------------------
# tile.*: matmul family (cube unit; Left x Right -> Acc)
# ---------------------------------------------------------------------------
_op("tile.matmul", "lhs rhs", "", "matmul", "lhs @ rhs into an FP32 (INT32 for int8) accumulator tile", temp_bytes=8)
_op("tile.matmul_acc", "acc lhs rhs init_cond?", "", "matmul_acc",
    "acc + lhs @ rhs; when init_cond holds, overwrite acc instead", temp_bytes=16)
_op("tile.matmul_bias", "lhs rhs bias", "", "matmul", "lhs @ rhs + bias", temp_bytes=16)
_op("tile.gemv", "lhs rhs", "acc_phase", "matmul", "vector x matrix: [1, K] @ [K, N]", temp_bytes=8)
_op("tile.gemv_acc", "acc lhs rhs", "acc_phase", "matmul_acc", "acc + [1, K] @ [K, N]", temp_bytes=16)
_op("tile.gemv_bias", "lhs rhs bias", "acc_phase", "matmul", "[1, K] @ [K, N] + bias", temp_bytes=16)
_op("tile.batch_matmul", "lhs rhs", "", "matmul", "batched lhs @ rhs with batch broadcasting", temp_bytes=8)
_op("tile.batch_matmul_acc", "acc lhs rhs", "", "matmul_acc", "acc + batched lhs @ rhs", temp_bytes=16)
_op("tile.matmul_mx", "lhs lhs_scale rhs rhs_scale", "", None, "MX block-scaled matmul")
_op("tile.matmul_mx_acc", "acc lhs lhs_scale rhs rhs_scale", "", "matmul_acc", "acc + MX block-scaled matmul")
_op("tile.matmul_mx_bias", "lhs lhs_scale rhs rhs_scale bias", "", None, "MX block-scaled matmul plus bias")
_op("tile.tget_scale_addr", "dst_scale src", "", None, "bind an MX scale tile's address from its data tile")

# ---------------------------------------------------------------------------
# tile.*: shape / layout transforms
# ---------------------------------------------------------------------------
_op("tile.slice", "input shape offset valid_shape? drop_dims?", "pad_value", "slice",
    "sub-tile view of `shape` at `offset` (shape before offset); drop_dims removes unit axes")
_op("tile.reshape", "input shape", "", "reshape", "same elements, new shape")
# Printed as (data, dtype=..., shape=...); the IR keeps shape positional.
_op("tile.reinterpret_view", "data", "dtype shape", None, "reinterpret a flat tile's bytes as another dtype")
_op("tile.transpose", "input axis1 axis2 tmp?", "", None, "swap two axes; tmp is scratch")
_op("tile.transpose_view", "input", "", None, "zero-copy swap of the last two dims (NZ<->ZN layout dual)")
_op("tile.assemble", "target source offset", "", "store", "write source into target at offset; returns target")
_op("tile.extract", "src index_row index_col shape", "target_memory", None,
    "2-D sub-block of `shape` at (index_row, index_col), moved to target_memory")
_op("tile.scatter_update", "input index src", "dim", "same", "overwrite rows of input at the given indices with src")
_op("tile.concat", "src0 src1", "", None, "concatenate two tiles along the last axis")
_op("tile.set_validshape", "tile valid_rows valid_cols", "", "same", "change only the valid-region metadata")

# ---------------------------------------------------------------------------
# tile.*: gather / scatter / sort
# ---------------------------------------------------------------------------
_op("tile.gather", "src indices tmp", "", None, "gather elements by index; tmp is scratch")
_op("tile.gatherb", "src offset", "output_dtype", None, "gather 32-byte blocks by byte offset")
_op("tile.gather_mask", "src", "mask_pattern output_dtype", None, "keep the columns selected by a fixed mask pattern")
_op("tile.gather_compare", "src kvalue tmp", "cmp_mode offset out_cols count_dtype", "tuple",
    "per row, gather indices of elements passing a compare with kvalue, plus a match count")
_op("tile.scatter", "dst src indexes", "", "same", "scatter src into dst at flat indices (dst is in/out)")
_op("tile.scatter_mask", "dst src", "mask_pattern", "same", "scatter src rows into the dst columns a mask pattern selects")
_op("tile.sort32", "src idx", "", None, "sort fixed 32-element blocks, carrying indices")
_op("tile.mrgsort_format2", "src0 src1 tmp_or_src2 tmp_or_src3? tmp?", "exhausted", None,
    "merge 2-4 sorted lists; the last operand is scratch")
_op("tile.mrgsort_format1", "src block_len", "", None, "merge sorted runs of block_len within one list")

# ---------------------------------------------------------------------------
# tile.*: cross-core transfer (AIC <-> AIV) and split-boundary markers
# ---------------------------------------------------------------------------
_op("tile.tpush_to_aiv", "tile", "split lane_stride id", "none", "AIC sends a tile to the AIV lane(s), split per `split`")
_op("tile.tpush_to_aic", "tile", "split id", "none", "AIV lane sends its tile (or half) to the AIC")
_op("tile.tpop_from_aic", "", "split lane_stride id", "popped", "AIV receives the next tile pushed by the AIC")
_op("tile.tpop_from_aiv", "", "split id", "popped", "AIC receives the next tile(s) pushed by the AIV lane(s), merged when split")
_op("tile.aiv_shard", "tile", "split lane_stride", None,
    "authored AIC->AIV boundary: this lane's half of the tile along the split axis (whole tile for split 0)")
_op("tile.aic_gather", "tile", "split", None,
    "authored AIV->AIC boundary: rejoin both lanes' halves along the split axis (as is for split 0)")
_op("tensor.aiv_shard", "tensor", "split", None, "tensor form of tile.aiv_shard")
_op("tensor.aic_gather", "tensor", "split", None, "tensor form of tile.aic_gather")

# ---------------------------------------------------------------------------
# tensor.*: memory, creation, indexing
# ---------------------------------------------------------------------------
_op("tensor.create", "shape", "dtype layout manual_dep init_value", "create", "new tensor")
_op("tensor.full", "shape", "dtype value", "create", "new tensor filled with `value` (IR keeps value as positional arg 1)")
_op("tensor.create_l1", "shape", "dtype transpose", "create", "on-chip (L1) accumulator tensor for paged gather_row")
_op("tensor.slice", "input shape offset valid_shape? drop_dims?", "pad_value clamp", "slice",
    "window view of `shape` at `offset` (shape before offset)")
_op("tensor.assemble", "target source offset", "atomic", "store",
    "write source's valid region into target at offset (in place); returns target")
_op("tensor.view", "input shape? valid_shape?", "layout", "reshape",
    "zero-copy reinterpretation with a new shape and/or ND<->DN layout (layout-only form swaps the last two dims)")
_op("tensor.read", "tensor indices", "", "scalar_elem", "read one element")
_op("tensor.write", "tensor indices value", "", "same", "write one element in place; returns the tensor")
_op("tensor.dim", "tensor axis", "", "scalar_index", "runtime extent of one axis")
_op("tensor.alloc", "memory_space size", "", "ptr", "declare a DDR buffer of `size` bytes")
_op("tensor.fillpad", "tensor", "pad_value", "same", "copy with everything outside the valid region set to the pad value")
_op("tensor.fillpad_expand", "tensor shape", "pad_value", None, "copy into a larger tensor, padding the rest")
_op("tensor.ci", "start shape", "dtype descending", None, "integer ramp tensor")
_op("tensor.random", "key0 key1 counter0 counter1 counter2 counter3 shape", "dtype rounds", None,
    "counter-based pseudo-random tensor")
_op("tensor.get_block_idx", "", "", "scalar_index", "tensor-level alias of tile.get_block_idx")
_op("tensor.get_subblock_idx", "", "", "scalar_index", "tensor-level alias of tile.get_subblock_idx")
_op("tensor.get_block_num", "", "", "scalar_index", "tensor-level alias of tile.get_block_num")

# ---------------------------------------------------------------------------
# tensor.*: element-wise
# ---------------------------------------------------------------------------
_op("tensor.add", "lhs rhs", "", "binary", "element-wise a + b (printed as tensor.adds when rhs is a constant)")
_op("tensor.sub", "lhs rhs", "", "binary", "element-wise a - b")
_op("tensor.mul", "lhs rhs", "", "binary", "element-wise a * b")
_op("tensor.div", "lhs rhs", "high_precision", "binary", "element-wise true division a / b")
_op("tensor.maximum", "lhs rhs", "", "binary", "element-wise max with a tensor or scalar")
_op("tensor.minimum", "lhs rhs", "", "binary", "element-wise min with a tensor or scalar")
_op("tensor.fmod", "lhs rhs", "", "binary", "element-wise C remainder (sign of the dividend)")
_op("tensor.part_add", "src0 src1", "", "binary", "add two partially valid tensors", temp_bytes=24)
_op("tensor.part_mul", "src0 src1", "", "binary", "multiply two partially valid tensors", temp_bytes=24)
_op("tensor.part_max", "src0 src1", "", "binary", "max of two partially valid tensors", temp_bytes=24)
_op("tensor.part_min", "src0 src1", "", "binary", "min of two partially valid tensors", temp_bytes=24)
_op("tensor.cmp", "lhs rhs", "cmp_type", "binary", "compare with a tensor or scalar into a 0/1 tensor (cmp_type 0..5)")
_op("tensor.adds", "lhs rhs", "", "same", "tensor + scalar")
_op("tensor.subs", "lhs rhs", "", "same", "tensor - scalar")
_op("tensor.muls", "lhs rhs", "", "same", "tensor * scalar")
_op("tensor.divs", "lhs rhs", "", "same", "tensor / scalar")
_op("tensor.fmods", "lhs rhs", "", "same", "C remainder of tensor by scalar")
_op("tensor.and", "lhs rhs", "", "binary", "bitwise AND of two integer tensors (printed and_)")
_op("tensor.or", "lhs rhs", "", "binary", "bitwise OR of two integer tensors (printed or_)")
_op("tensor.xor", "lhs rhs", "", "binary", "bitwise XOR of two integer tensors")
_op("tensor.shl", "lhs rhs", "", "binary", "element-wise left shift")
_op("tensor.shr", "lhs rhs", "", "binary", "element-wise right shift")
_op("tensor.ands", "lhs rhs", "", "same", "bitwise AND with an integer scalar")
_op("tensor.ors", "lhs rhs", "", "same", "bitwise OR with an integer scalar")
_op("tensor.xors", "lhs rhs", "", "same", "bitwise XOR with an integer scalar")
_op("tensor.shls", "lhs rhs", "", "same", "left shift by an integer scalar")
_op("tensor.shrs", "lhs rhs", "", "same", "right shift by an integer scalar")
# Not registered upstream (the reference's table has them); kept for hand-edited dumps.
_op("tensor.maximums", "lhs rhs", "", "same", "max(tensor, scalar) [not a registered PyPTO op]")
_op("tensor.minimums", "lhs rhs", "", "same", "min(tensor, scalar) [not a registered PyPTO op]")
_op("tensor.rems", "lhs rhs", "", "same", "remainder of tensor by scalar [not a registered PyPTO op]")
_op("tensor.transpose_view", "input", "", None, "swap of the last two dims [not a registered PyPTO op]")

# ---------------------------------------------------------------------------
# tensor.*: unary and cast
# ---------------------------------------------------------------------------
_op("tensor.neg", "input", "", "same", "element-wise -x")
_op("tensor.exp", "input", "", "same", "element-wise e**x")
_op("tensor.log", "input", "high_precision", "same", "element-wise natural log")
_op("tensor.sqrt", "input", "", "same", "element-wise square root")
_op("tensor.rsqrt", "input", "high_precision", "same", "element-wise 1/sqrt(x)")
_op("tensor.recip", "input", "high_precision", "same", "element-wise 1/x")
_op("tensor.abs", "input", "", "same", "element-wise |x|")
_op("tensor.sin", "input", "", "same", "element-wise sine (radians, FP32 only)")
_op("tensor.cos", "input", "", "same", "element-wise cosine (radians, FP32 only)")
_op("tensor.not", "input", "", "same", "bitwise NOT of a 16-bit integer tensor (printed not_)")
_op("tensor.cast", "input", "target_type mode", "cast", "convert to target_type with rounding `mode`", temp_bytes=80)

# ---------------------------------------------------------------------------
# tensor.*: reductions (axis defaults to -1 for row_*, -2 for col_*; keep_dim defaults True)
# ---------------------------------------------------------------------------
for _kind, _what in (("sum", "sum"), ("max", "max"), ("min", "min"), ("prod", "product")):
    _op(f"tensor.row_{_kind}", "input", "axis keep_dim", "row_reduce", f"{_what} over the last axis -> [..., 1]")
    _op(f"tensor.col_{_kind}", "input", "axis keep_dim", "col_reduce", f"{_what} over axis -2 -> [..., 1, N]")
_op("tensor.row_argmax", "input", "axis keep_dim", None, "index of each row's maximum")
_op("tensor.row_argmin", "input", "axis keep_dim", None, "index of each row's minimum")
_op("tensor.col_argmax", "input", "axis keep_dim", None, "index of each column's maximum")
_op("tensor.col_argmin", "input", "axis keep_dim", None, "index of each column's minimum")

# ---------------------------------------------------------------------------
# tensor.*: broadcast-expands
# ---------------------------------------------------------------------------
_op("tensor.row_expand", "target row_vec", "", "binary", "broadcast an [M, 1] vector to target's shape", temp_bytes=8)
for _name, _sym in (("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/")):
    _op(f"tensor.row_expand_{_name}", "tensor row_vec", "", "binary", f"tensor {_sym} [M, 1] vector broadcast along columns")
_op("tensor.row_expand_max", "tensor row_vec", "", "binary", "max(tensor, [M, 1] vector broadcast)")
_op("tensor.row_expand_min", "tensor row_vec", "", "binary", "min(tensor, [M, 1] vector broadcast)")
_op("tensor.row_expand_expdif", "tensor row_vec", "", "binary", "exp(tensor - [M, 1] vector broadcast)", temp_bytes=8)
_op("tensor.col_expand", "tensor col_vec", "", "binary", "broadcast a [1, N] vector to arg 0's shape", temp_bytes=8)
for _name, _sym in (("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/")):
    _op(f"tensor.col_expand_{_name}", "tensor col_vec", "", "binary", f"tensor {_sym} [1, N] vector broadcast along rows")
_op("tensor.col_expand_max", "tensor col_vec", "", "binary", "max(tensor, [1, N] vector broadcast)")
_op("tensor.col_expand_min", "tensor col_vec", "", "binary", "min(tensor, [1, N] vector broadcast)")
_op("tensor.col_expand_expdif", "tensor col_vec", "", "binary", "exp(tensor - [1, N] vector broadcast)", temp_bytes=8)
_op("tensor.expands", "target scalar", "", "same", "tensor shaped like target, filled with the scalar")
_op("tensor.expand_clone", "input target", "", None, "materialise input repeated to target's shape (dims 1 or equal)")

# ---------------------------------------------------------------------------
# tensor.*: matmul, transforms, gather / scatter / sort
# ---------------------------------------------------------------------------
_op("tensor.matmul", "lhs rhs", "out_dtype a_trans b_trans c_matrix_nz", "matmul",
    "lhs @ rhs with optional transposes, result in out_dtype", temp_bytes=8)
_op("tensor.matmul_acc", "acc lhs rhs init_cond?", "a_trans b_trans", "matmul_acc",
    "acc + lhs @ rhs; when init_cond holds, overwrite acc instead", temp_bytes=16)
_op("tensor.reshape", "input shape valid_shape?", "", "reshape", "same elements, new shape")
# Printed as (data, dtype=..., shape=...); the IR keeps shape positional.
_op("tensor.reinterpret_view", "data", "dtype shape", None, "reinterpret a packed tensor's bytes as another dtype")
_op("tensor.transpose", "input axis1 axis2 valid_shape?", "", None, "swap two axes")
_op("tensor.concat", "src0 src1", "", None, "concatenate two tensors along the last axis")
_op("tensor.set_validshape", "tensor valid_rows valid_cols", "", "same", "change only the valid-region metadata")
_op("tensor.scatter_update", "input index src", "dim", "same", "overwrite rows of input at the given indices with src")
_op("tensor.gather", "input index", "dim", None, "gather along `dim` with an index tensor")
_op("tensor.gather_mask", "input", "mask_pattern output_dtype", None, "keep the columns selected by a fixed mask pattern")
_op("tensor.gather_compare", "input kvalue", "cmp_mode offset out_cols count_dtype", "tuple",
    "per row, gather indices of elements passing a compare with kvalue")
_op("tensor.scatter", "input index src", "dim", "same", "scatter src into input at per-element column indices")
_op("tensor.scatter_mask", "input dst", "mask_pattern", None, "scatter input rows into the dst columns a mask pattern selects")
_op("tensor.sort32", "src idx", "", None, "sort fixed 32-element blocks, carrying indices")
_op("tensor.mrgsort_format2", "src0 src1 src2? src3?", "exhausted", None, "merge 2-4 sorted lists")
_op("tensor.mrgsort_format1", "src block_len", "", None, "merge sorted runs of block_len within one list")
_op("tensor.paged_gather", "src indices block_table", "block_size size col_off max_indices is_trans is_b_matrix space",
    None, "gather rows of a paged KV pool through a block table into an on-chip buffer")
_op("tensor.gather_row", "acc src dst_offset src_offset shapes", "transpose valid_shape", "same",
    "copy one GM row into a sub-region of an on-chip accumulator; 6th operand printed as valid_shape=", temp_bytes=8)

# ---------------------------------------------------------------------------
# system.*: synchronisation, pipes, tasks
# ---------------------------------------------------------------------------
_op("system.sync_src", "", "set_pipe wait_pipe event_id", "none", "set an intra-core pipe flag")
_op("system.sync_dst", "", "set_pipe wait_pipe event_id", "none", "wait on an intra-core pipe flag")
_op("system.sync_set", "event_id_dyn?", "pipe event_id ffts_mode core_type", "none",
    "raise a cross-core event (static event_id or one dynamic operand)")
_op("system.sync_wait", "event_id_dyn?", "pipe event_id core_type", "none", "wait for a cross-core event")
_op("system.bar_v", "", "", "none", "vector-unit barrier")
_op("system.bar_m", "", "", "none", "matrix-unit barrier")
_op("system.bar_all", "", "", "none", "barrier over all units")
_op("system.fence", "", "", "none", "global-memory fence")
_op("system.cacheinvalid", "tensor? shapes? offsets?", "", "none",
    "invalidate the whole GM cache (no args) or the line holding a tensor view's base")
_op("system.set_ffts", "workspace", "", "none", "declare the FFTS workspace for explicit cross-core sync")
# Soft mode is printed keyword-only: (mode="soft", core_type=..., gm_workspace=x, used_cores=n).
_op("system.syncall", "gm_workspace? used_cores?", "core_type mode gm_workspace used_cores", "none",
    "barrier across all participating cores (hard FFTS or soft GM-polling)")
_op("system.tfree_to_aic", "tile", "split id", "none", "AIV hands a popped slot back to the AIC producer")
_op("system.tfree_to_aiv", "tile", "split id", "none", "AIC hands a popped slot back to the AIV producer")
_op("system.aic_initialize_pipe", "c2v_consumer_buf v2c_consumer_buf",
    "dir_mask slot_size slot_num local_slot_num id", "none", "set up the cross-core pipe on the cube side")
_op("system.aiv_initialize_pipe", "c2v_consumer_buf v2c_consumer_buf",
    "dir_mask slot_size slot_num local_slot_num id", "none", "set up the cross-core pipe on the vector side")
# These two yield an INT32 scalar (buffer base) that only feeds *_initialize_pipe.
_op("system.reserve_buffer", "", "name size base", None, "reserve a named pipe buffer in this kernel (INT32 base)")
_op("system.import_peer_buffer", "", "name peer_func", None, "refer to a peer kernel's reserved buffer (INT32 base)")
_op("system.available_cluster_count", "", "", None, "cube-cluster count of the device the run lands on (INT32)")
_op("system.available_aiv_count", "", "", None, "standalone vector-core count of the device (INT32)")
_op("system.task_invalid", "", "", None, "an invalid task-id sentinel")
_op("system.task_dummy", "", "deps", None, "dependency-only task id joining `deps` (printed deps=[...])")
_op("system.task_is_valid", "task_id", "", None, "whether a task id refers to a real task (BOOL)")

# ---------------------------------------------------------------------------
# array.*: small on-core arrays; prefetch.*: async L2 prefetch
# ---------------------------------------------------------------------------
_op("array.create", "extent", "dtype", None, "fixed-size 1-D on-core integer array")
_op("array.get_element", "array index", "", None, "read one array element")
_op("array.update_element", "array index value", "", None, "new array value with one element replaced")
_op("prefetch.make_context", "", "", None, "create an async-prefetch context")
_op("prefetch.async_prefetch", "src ctx", "", None, "start prefetching a contiguous GM region into L2; returns an event")
_op("prefetch.session", "ctx", "", None, "the async session bound to a prefetch context")
_op("prefetch.wait", "event session", "", None, "wait for a prefetch event (BOOL done flag)")

# ---------------------------------------------------------------------------
# pld.*: distributed (printed with the bare `pld.` root)
# ---------------------------------------------------------------------------
_op("pld.system.get_comm_ctx", "dist_tensor", "", None, "communication context of a window-bound tensor")
_op("pld.system.rank", "ctx", "", None, "local rank (INT32) from a comm context")
_op("pld.system.nranks", "ctx", "", None, "rank count (INT32) of a comm group")
_op("pld.system.world_size", "", "", None, "number of devices in the run (INT64; host only)")
_op("pld.system.notify", "target peer offsets value", "op", None, "write or atomically add to a peer's signal slot")
_op("pld.system.wait", "signal offsets expected", "cmp", None, "block until a local signal slot satisfies `cmp` expected")
_op("pld.system.defer_wait", "signal offsets expected", "cmp", None, "register a deferred completion condition on a signal slot")
_op("pld.tensor.alloc_window_buffer", "size", "name", None, "declare a per-rank communication window buffer (Ptr)")
_op("pld.tensor.window", "buf shape", "dtype", None, "view a window buffer as a distributed tensor")
_op("pld.tensor.get", "dst peer src dst_offsets? src_offsets? shape?", "chunk_rows chunk_cols pipeline", None,
    "read a peer rank's slice into a local destination (3 or 6 args)")
_op("pld.tensor.put", "dst peer src dst_offsets? src_offsets? shape?", "atomic chunk_rows chunk_cols pipeline", None,
    "write local data into a peer rank's slice (3 or 6 args)")
# 4/5/7/8 operands: (dst, peer, src, stage[, stage2][, dst_offsets, src_offsets, shape]).
_op("pld.tile.get", "dst peer src stage stage2? dst_offsets? src_offsets? shape?", "", None,
    "tile-level get through a Vec staging tile (optional ping-pong stage2)")
_op("pld.tile.put", "dst peer src stage stage2? dst_offsets? src_offsets? shape?", "atomic", None,
    "tile-level put through a Vec staging tile (optional ping-pong stage2)")
_op("pld.tile.remote_load", "target peer offsets shape valid_shape?", "allow_physical_tail_padding", None,
    "load a region of a peer rank's slice into a local tile")
_op("pld.tile.remote_store", "src_tile target peer offsets", "atomic", None, "store a local tile into a peer rank's slice")
_op("pld.tensor.remote_store", "src target peer offsets", "atomic", None, "store a local tensor into a peer rank's slice")
_op("pld.tensor.allreduce", "target signal?", "op mode core_num", None, "in-place all-reduce across the comm group")
_op("pld.tensor.barrier", "signal", "", None, "barrier across the comm group")
_op("pld.tensor.broadcast", "target signal", "root", None, "replicate the root rank's data to every rank")
_op("pld.tensor.allgather", "input target signal", "", None, "gather every rank's chunk into every rank")
_op("pld.tensor.all_to_all", "input target signal", "", None, "symmetric personalised exchange")
_op("pld.tensor.all_to_all_v", "input target signal send_counts recv_counts", "", None, "variable-size personalised exchange")
_op("pld.tensor.reduce_scatter", "target signal", "op", None, "reduce across ranks, each rank keeps one chunk")

# builtin.tensor.*: chip-dispatch forms of the pld collectives (compiler internal)
_op("builtin.tensor.allreduce", "src signal", "op dtype core_num", None, "internal form of pld.tensor.allreduce")
_op("builtin.tensor.allreduce_ring", "src signal", "op dtype", None, "internal ring form of pld.tensor.allreduce")
_op("builtin.tensor.barrier", "signal", "", None, "internal form of pld.tensor.barrier")
_op("builtin.tensor.broadcast", "target signal", "root dtype", None, "internal form of pld.tensor.broadcast")
_op("builtin.tensor.reduce_scatter", "target signal", "op dtype", None, "internal form of pld.tensor.reduce_scatter")
_op("builtin.tensor.allgather", "input target signal", "dtype", None, "internal form of pld.tensor.allgather")
_op("builtin.tensor.all_to_all", "input target signal", "dtype", None, "internal form of pld.tensor.all_to_all")
_op("builtin.tensor.all_to_all_v", "input target signal send_counts recv_counts", "dtype", None,
    "internal form of pld.tensor.all_to_all_v")

# dist.*: distributed runtime intrinsics (host codegen only)
_op("dist.make_tensor", "rt count", "", None, "runtime tensor from a runtime handle and an element count")
_op("dist.tree_reduce", "rt leaves", "", None, "tree-shaped reduction over leaves")
_op("dist.submit_worker", "rt", "", None, "launch a worker task; returns a future")
_op("dist.submit_orchestrator", "rt", "", None, "launch an orchestrator task; returns a future")
_op("dist.future_get", "future", "", None, "await a future's value")

# test.*: registry self-test ops (never in real dumps)
_op("test.op", "arg1 arg2", "int_attr string_attr bool_attr", None, "registry test op")
_op("test.deduce_raises_internal", "x", "", None, "registry test op whose type deduction fails internally")
_op("test.deduce_raises_type", "x", "", None, "registry test op whose type deduction raises TypeError")
_op("test.tensor_op_no_conv", "x", "", None, "registry test op with no tile conversion")

# fmt: on

del _kind, _what, _name, _sym


_MIRRORED_KINDS = {"tensor.maximums": "tensor.adds", "tensor.minimums": "tensor.adds", "tensor.rems": "tensor.adds"}


def _with_operand_kinds(rows: dict[str, OpSpec]) -> dict[str, OpSpec]:
    """The rows with the operand and keyword kinds PyPTO's registrations state (``op_registry.json``)."""
    raw = json.loads(resources.files(__package__).joinpath("op_registry.json").read_text(encoding="utf-8"))
    args: dict[str, dict[str, str]] = raw.get("operands", {})
    attrs: dict[str, dict[str, str]] = raw.get("attributes", {})
    # the rows PyPTO does not register (the reference's extras) take the kinds of the op they mirror
    args = {**args, **{op: args[like] for op, like in _MIRRORED_KINDS.items() if like in args}}
    return {
        name: replace(spec, operand_kinds=args.get(name, {}), keyword_kinds=attrs.get(name, {})) if name in args or name in attrs else spec
        for name, spec in rows.items()
    }


OPS: dict[str, OpSpec] = _with_operand_kinds(_ROWS)

# Printed spellings that differ from the IR name (beyond the keyword underscore).
_ALIASES: dict[str, str] = {
    # remote_load with allow_physical_tail_padding=True prints under a private name.
    "pld.tile._remote_load_with_physical_tail_padding": "pld.tile.remote_load",
}

# what codegen passes ``_rtype=`` for (see OpSpec.needs_result_type)
NEEDS_RESULT_TYPE: frozenset[str] = frozenset(n for n, s in OPS.items() if s.needs_result_type)

_missing = (
    NOOP_OPS
    | REFERENCE_SUPPORTED
    | EXECUTOR_EXTRAS
    | EXECUTED_BEYOND_REFERENCE
    | GATHER_SCATTER_OPS
    | LANGUAGE_OPS
    | SORT_RANDOM_MX_EXECUTED
    | NEEDS_RESULT_TYPE_NAMES
) - OPS.keys()
if _missing:  # pragma: no cover - a table edit forgot a row
    raise RuntimeError(f"catalogue rows missing for {sorted(_missing)}")
del _missing


_LOOKED_UP: dict[str, OpSpec | None] = {}  # a call name -> its row (the names a process meets: a few hundred)
_LOOKUPS_KEPT = 4096  # beyond this many distinct names (hostile input) they are looked up each time


def lookup(dotted: str) -> OpSpec | None:
    """Find the row for a call name as printed or as an IR name.

    Accepts ``pl.tile.and_``, ``tile.and_``, ``tile.and``, ``pl.tensor.add``,
    ``pld.tile.remote_load``. A trailing ``_`` on the last segment is dropped
    only when the bare segment is a Python keyword (the printer adds it there).
    """
    try:
        return _LOOKED_UP[dotted]
    except KeyError:
        pass
    row = _lookup(dotted)
    if len(_LOOKED_UP) < _LOOKUPS_KEPT:
        _LOOKED_UP[dotted] = row
    return row


def _lookup(dotted: str) -> OpSpec | None:
    name = dotted.strip().removeprefix("pl.")
    head, dot, last = name.rpartition(".")
    if last.endswith("_") and keyword.iskeyword(last[:-1]):
        last = last[:-1]
    name = head + dot + last
    return OPS.get(_ALIASES.get(name, name))


# ops whose result is a view or the same buffer (no allocation to guard: exec.codegen_memory)
NO_NEW_BUFFER = frozenset(
    {"tensor.view", "tensor.transpose", "tile.transpose", "tile.set_validshape", "tensor.set_validshape", "tile.fillpad_inplace"}
)

# ops that write into a destination operand and return it (the outputs' writers, analysis.output_writes)
WRITES_INTO = frozenset(
    {"tile.store", "tensor.assemble", "tile.assemble", "tensor.write", "tile.write", "tile.scatter_update", "tensor.scatter_update"}
)
