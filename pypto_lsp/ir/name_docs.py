"""One-line docs of the DSL's closed vocabularies (:mod:`pypto_lsp.ir.names`): dtypes, enum
members and the ``pl.*`` constructs, as the hover shows them. No torch, no LSP.
"""

from __future__ import annotations

from .names import APPROXIMATED_DTYPES, ENUMS

__all__ = ["CONSTRUCT_DOCS", "DTYPE_DOCS", "ENUM_DOCS", "ENUM_WHAT", "dtype_doc", "enum_doc"]

DTYPE_DOCS: dict[str, str] = {
    "BOOL": "boolean",
    "INT4": "4-bit signed integer",
    "INT8": "8-bit signed integer",
    "INT16": "16-bit signed integer",
    "INT32": "32-bit signed integer",
    "INT64": "64-bit signed integer",
    "INDEX": "index integer (loop counters, offsets, shapes; 64-bit)",
    "UINT4": "4-bit unsigned integer",
    "UINT8": "8-bit unsigned integer",
    "UINT16": "16-bit unsigned integer",
    "UINT32": "32-bit unsigned integer",
    "UINT64": "64-bit unsigned integer",
    "FP16": "16-bit IEEE-754 half-precision float",
    "BF16": "bfloat16: 16-bit float with FP32's 8-bit exponent and a 7-bit mantissa",
    "FP32": "32-bit IEEE-754 single-precision float",
    "FP4": "4-bit float (E2M1)",
    "FP8E4M3FN": "8-bit float, 4-bit exponent / 3-bit mantissa, finite only (no Inf)",
    "FP8E5M2": "8-bit float, 5-bit exponent / 2-bit mantissa",
    "FP8E8M0": "8-bit exponent-only float (MX block scale)",
    "HF4": "4-bit HiFloat",
    "HF8": "8-bit HiFloat",
    "TASK_ID": "task id returned by a task launch",
}

ENUM_DOCS: dict[str, dict[str, str]] = {
    "Mem": {
        "DDR": "global memory (GM, off-chip); where tensors live",
        "Vec": "vector core's Unified Buffer (UB): operands of vector tile ops",
        "Mat": "cube core's L1 buffer: staging for matmul operands",
        "Left": "L0A: the cube's left (A) matmul operand",
        "Right": "L0B: the cube's right (B) matmul operand",
        "Acc": "L0C: the cube's matmul accumulator / output",
        "Bias": "bias table buffer used by matmul_bias",
        "ScalarLocal": "scalar unit's local memory",
        "LeftScale": "MX block-scale buffer of the left operand",
        "RightScale": "MX block-scale buffer of the right operand",
    },
    "FunctionType": {
        "Opaque": "unclassified function",
        "Orchestration": "orchestration code: schedules kernels and passes tensors between them",
        "InCore": "kernel that runs on one AI core (before it is split into AIC/AIV parts)",
        "AIC": "cube-core kernel (matmul side)",
        "AIV": "vector-core kernel",
        "Group": "co-scheduled group of AIC/AIV kernels launched together",
        "Spmd": "SPMD launch: the body runs once per block",
        "Inline": "helper inlined into its callers",
        "Graph": "graph-level function",
    },
    "Role": {
        "Orchestrator": "schedules work for sub-workers",
        "SubWorker": "does the work scheduled by an orchestrator",
    },
    "SplitMode": {
        "NONE": "no split between the two AIV lanes",
        "UP_DOWN": "the two AIV lanes take the top / bottom halves (rows)",
        "LEFT_RIGHT": "the two AIV lanes take the left / right halves (columns)",
    },
    "TensorLayout": {
        "ND": "row-major N-D layout",
        "DN": "column-major layout (last two dims swapped)",
        "NZ": "fractal Nz blocked layout used by the cube",
        "MX_A_ZZ": "MX scale layout of the left operand",
        "MX_B_NN": "MX scale layout of the right operand",
    },
    "TileLayout": {
        "none_box": "no fractal boxing",
        "row_major": "row-major",
        "col_major": "column-major",
    },
    "PadValue": {
        "null": "padding left undefined",
        "zero": "padding filled with 0",
        "max": "padding filled with the dtype's largest value",
        "min": "padding filled with the dtype's smallest value",
    },
    "AtomicType": {"None_": "plain store", "Add": "atomic add into the destination"},
    "PipeType": {
        "MTE1": "L1 -> L0 move engine",
        "MTE2": "GM -> L1/UB load engine",
        "MTE3": "UB -> GM store engine",
        "M": "cube (matrix) unit",
        "V": "vector unit",
        "S": "scalar unit",
        "FIX": "fixpipe (L0C -> L1/GM)",
        "ALL": "every pipe",
    },
    "Level": {
        "AIV": "a vector core",
        "AIC": "a cube core",
        "CORE_GROUP": "one AIC with its AIV cores",
        "CHIP_DIE": "one chip die",
        "CHIP": "one chip",
        "HOST": "the host",
        "GLOBAL": "every device",
    },
}
ENUM_DOCS["MemorySpace"] = ENUM_DOCS["Mem"]
ENUM_WHAT = {
    "Mem": "memory space",
    "MemorySpace": "memory space",
    "FunctionType": "function kind",
    "Level": "hierarchy level",
    "Role": "function role",
    "SplitMode": "AIV split mode",
    "TensorLayout": "tensor layout",
    "TileLayout": "tile layout",
    "PadValue": "pad value",
    "AtomicType": "store mode",
    "PipeType": "hardware pipe",
}

CONSTRUCT_DOCS: dict[str, str] = {
    "pl.range": "sequential loop `pl.range([start,] stop[, step][, init_values=...])`",
    "pl.parallel": "loop whose iterations may run in parallel",
    "pl.unroll": "loop the compiler unrolls",
    "pl.pipeline": "software-pipelined loop",
    "pl.spmd": "SPMD launch: the body runs once per block",
    "pl.split_aiv": "the body runs once per AIV lane",
    "pl.while_": "SSA while loop; the body starts with `pl.cond(...)`",
    "pl.cond": "loop condition of a `pl.while_` loop",
    "pl.yield_": "ends a loop/if body: gives the next iter_args, or the results of the if/loop",
    "pl.at": "scope run at a hierarchy level (e.g. one core group)",
    "pl.scope": "plain scope (no numerical effect)",
    "pl.cluster": "cluster scope (no numerical effect)",
    "pl.incore": "in-core scope",
    "pl.auto_incore": "in-core scope chosen by the compiler",
    "pl.const": "typed constant `pl.const(value, dtype)`",
    "pl.submit": "launch a function as a task: returns (result, task id)",
    "pl.spmd_submit": "launch a function as an SPMD task: returns (result, task id)",
    "pl.func_attr": "function attributes",
    "pl.dynamic": "declares a dynamic dimension",
    "pl.Tensor": "tensor type `[shape, dtype, ...]` (global memory)",
    "pl.Tile": "tile type `[shape, dtype, memory, ...]` (on-chip buffer)",
    "pl.Scalar": "scalar type `pl.Scalar[dtype]`",
    "pl.Tuple": "tuple type",
    "pl.Array": "small on-core array type",
    "pl.Ptr": "buffer pointer (from `pl.tile.alloc`)",
    "pl.MemRef": "memory reference `(base, offset, size in bytes)` of an allocated buffer",
    "pl.TileView": "tile view: valid_shape / layout of a tile",
    "pl.TensorView": "tensor view: valid_shape / layout of a tensor",
    "pl.Out": "output parameter (written by the function)",
    "pl.InOut": "input/output parameter (read and written)",
    "pl.function": "function decorator: type, level, role, attrs",
    "pl.program": "program class decorator",
    "pl.split": "split optimisation of a `pl.at` scope",
    "pl.min": "scalar minimum",
    "pl.max": "scalar maximum",
    "pl.cast": "scalar cast",
}


def dtype_doc(name: str) -> str:
    doc = DTYPE_DOCS.get(name, "data type")
    if name in APPROXIMATED_DTYPES:
        doc += " (the executor approximates it with float32)"
    return f"`pl.{name}`: {doc}"


def enum_doc(enum: str, member: str) -> str:
    what = ENUM_WHAT.get(enum, f"`pl.{enum}` member")
    doc = ENUM_DOCS.get(enum, {}).get(member)
    known = ENUMS.get(enum)
    if doc is None and known is not None and member not in known:
        doc = f"unknown member of pl.{enum}"
    return f"`pl.{enum}.{member}`: {what} {member}" + (f": {doc}" if doc else "")
