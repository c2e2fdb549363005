"""Closed vocabularies of the dump grammar: data types, memory spaces, enums, function kinds."""

from __future__ import annotations

DTYPES = frozenset(
    {
        "BOOL",
        "INT4",
        "INT8",
        "INT16",
        "INT32",
        "INT64",
        "INDEX",
        "UINT4",
        "UINT8",
        "UINT16",
        "UINT32",
        "UINT64",
        "FP16",
        "BF16",
        "FP32",
        "FP4",
        "FP8E4M3FN",
        "FP8E5M2",
        "FP8E8M0",
        "HF4",
        "HF8",
        "TASK_ID",
    }
)

# dtypes torch has no exact type for (the executor falls back to float32 and says so).
# the dtypes of integers (PyPTO's DataType::IsInt) and of floating-point values
INTEGER_DTYPES = frozenset({"INT4", "INT8", "INT16", "INT32", "INT64", "INDEX", "UINT4", "UINT8", "UINT16", "UINT32", "UINT64"})
FLOAT_DTYPES = frozenset({"FP16", "BF16", "FP32", "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF4", "HF8"})
APPROXIMATED_DTYPES = frozenset({"INT4", "UINT4", "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF4", "HF8", "TASK_ID"})

MEMORY_SPACES = frozenset({"DDR", "Vec", "Mat", "Left", "Right", "Acc", "Bias", "ScalarLocal", "LeftScale", "RightScale"})

FUNCTION_KINDS = frozenset({"Opaque", "Orchestration", "InCore", "AIC", "AIV", "Group", "Spmd", "Inline", "Graph"})

LEVELS = frozenset({"AIV", "AIC", "CORE_GROUP", "CHIP_DIE", "CHIP", "HOST", "CLUSTER_0", "CLUSTER_1", "CLUSTER_2", "GLOBAL"})

# enum namespaces reachable as pl.<Enum>.<member>; None = any member accepted.
ENUMS: dict[str, frozenset[str] | None] = {
    "Mem": MEMORY_SPACES,
    "MemorySpace": MEMORY_SPACES,
    "FunctionType": FUNCTION_KINDS,
    "Level": LEVELS,
    "Role": frozenset({"Orchestrator", "SubWorker"}),
    "SplitMode": frozenset({"NONE", "UP_DOWN", "LEFT_RIGHT"}),
    "TensorLayout": frozenset({"ND", "DN", "NZ", "MX_A_ZZ", "MX_B_NN"}),
    "TileLayout": frozenset({"none_box", "row_major", "col_major"}),
    "PadValue": frozenset({"null", "zero", "max", "min"}),
    "AtomicType": frozenset({"None_", "Add"}),
    "PipeType": frozenset({"MTE1", "MTE2", "MTE3", "M", "V", "S", "FIX", "ALL"}),
    "CompactMode": None,
    "ScopeMode": None,
    "adir": None,
    "Level_": None,
}

# bare layouts accepted as a tensor type item in hand-written programs (pl.NZ)
BARE_LAYOUTS = frozenset({"ND", "DN", "NZ"})

LOOP_KINDS = frozenset({"range", "parallel", "unroll", "pipeline", "spmd", "split_aiv"})
SCOPE_KINDS = frozenset({"at", "cluster", "scope", "spmd", "incore", "auto_incore"})

# two-segment pl.X(...) calls allowed inside expressions as inert DSL constructs
DSL_CONSTRUCTS = frozenset({"split", "cross_core_slot", "MemRef", "TileView", "TensorView"})

SPLIT_MODE_CODE = {"NONE": 0, "UP_DOWN": 1, "LEFT_RIGHT": 2}
# the split codes that halve a tile's rows (UP_DOWN and its odd form) and its columns (LEFT_RIGHT and
# its odd form); 0 splits nothing
SPLIT_ROWS = frozenset({1, 3})
SPLIT_COLUMNS = frozenset({2, 4})

# the transport ops whose split= code a Group's pairing is derived from (reference §2.3)
CROSS_CORE_OPS = ("tile.tpush_to_aiv", "tile.tpush_to_aic", "tile.tpop_from_aic", "tile.tpop_from_aiv")
