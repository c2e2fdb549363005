"""Operands whose types rule an op out before it runs: a matmul whose left columns are not its
right rows, or whose accumulator is not the product's shape; an elementwise op of shapes that do
not combine; an element read or written at literal indices outside its array; a bitwise op of
floating-point values. Called by :mod:`.check` for every op call, with the checker's reading of a
name's shape and dtype.

Without these the run fails in torch's words (``mat1 and mat2 shapes cannot be multiplied (2x64
and 2x1)``, ``index 8 is out of bounds for dimension 1 with size 1``) or, for an accumulator,
broadcasts without a word.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from . import catalogue
from . import diagnostics as D
from .memory import DTYPE_BITS
from .model import Const, Expr, ListExpr, Name, OpCall, TupleExpr, fold_int, fold_ints
from .names import FLOAT_DTYPES, INTEGER_DTYPES

ShapeOf = Callable[[Expr], "list[int] | None"]
DtypeOf = Callable[[Expr], "str | None"]

# matmuls whose operands' shapes are checked: (accumulator, left, right) positions
MATMUL_OPERANDS: dict[str, tuple[int | None, int, int]] = {
    **{op: (None, 0, 1) for op in ("tile.matmul", "tile.gemv", "tile.batch_matmul", "tile.matmul_bias", "tile.gemv_bias", "tensor.matmul")},
    **{op: (0, 1, 2) for op in ("tile.matmul_acc", "tile.gemv_acc", "tile.batch_matmul_acc", "tensor.matmul_acc")},
    "tile.matmul_mx": (None, 0, 2),
    "tile.matmul_mx_bias": (None, 0, 2),
    "tile.matmul_mx_acc": (0, 1, 3),
}
# an MX matmul's scale operands (lhs scale, rhs scale): E8M0 values shared by 32 elements along K
MX_SCALES: dict[str, tuple[int, int]] = {"tile.matmul_mx": (1, 3), "tile.matmul_mx_bias": (1, 3), "tile.matmul_mx_acc": (2, 4)}
MX_GROUP = 32
# the bitwise ops, each of a tile and a tensor (``tile.shl``, ``tensor.ands`` ...)
BITWISE = frozenset({"and", "ands", "or", "ors", "xor", "xors", "not", "shl", "shls", "shr", "shrs"})
# ops that read or write one element at (array, indices)
ELEMENT_OPS = frozenset({"tile.read", "tile.write", "tensor.read", "tensor.write"})


def problems(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """What the types of ``e``'s operands rule out (``shape_of``, ``dtype_of``: a name's shape and
    dtype, None when the dump does not say)."""
    checks = _CHECKS.get(e.op)
    if checks is None:
        return []
    if len(checks) == 1:
        return checks[0](e, shape_of, dtype_of)
    return [d for check in checks for d in check(e, shape_of, dtype_of)]


def integer_operands(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """A bitwise op (and, or, xor, not, the shifts) of an array of floating-point values: PyPTO's
    type deduction takes integer dtypes only (``src/ir/op/tile_ops/elementwise.cpp``); torch says
    ``"lshift_cpu" not implemented for 'Float'``."""
    for arg in e.args[:2]:
        dtype = dtype_of(arg)
        if dtype in FLOAT_DTYPES:
            return [
                D.error(
                    arg.span,
                    "integer-only",
                    f"'{e.op}' takes integer values, got {repr(arg.id) if isinstance(arg, Name) else 'an array'} of dtype {dtype}",
                    "a bitwise op or a shift works on the bits of integers; cast first, or this is the wrong op",
                )
            ]
    return []


def scatter_update(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """``scatter_update(input, index, src)`` as PyPTO's deduction holds it
    (``DeduceTileScatterUpdateType``, ``DeduceTensorScatterUpdateType``): ``input`` ``[rows, d]`` or
    ``[blocks, block_size, 1, d]``, ``index`` a 2-D ``[b, s]`` of integers, ``src`` of ``input``'s
    rank and dtype; a source shaped ``[b * s, d]`` or ``[b, s, 1, d]`` (the contract its comment
    states, and what the kernel reads); ``dim`` -2, the only one it takes. torch said
    ``index_copy_(): Source/destination tensor must have same slice shapes``."""
    if len(e.args) < 3:
        return []
    inp, index, src = e.args[:3]
    a, i, b = shape_of(inp), shape_of(index), shape_of(src)
    dim = fold_int(e.kwargs["dim"]) if "dim" in e.kwargs else None
    problem = None
    if dim is not None and dim != -2:
        problem = f"takes dim=-2 only, got dim={dim}"
    elif a and len(a) not in (2, 4):
        problem = f"takes a 2-D or 4-D input, got {_words(inp, a, False)}"
    elif i and len(i) != 2:
        problem = f"takes a 2-D index [b, s], got {_words(index, i, False)}"
    elif (dt := dtype_of(index)) is not None and dt not in INTEGER_DTYPES:
        problem = f"takes an integer index, got {_words(index, i or [], False)} of dtype {dt}"
    elif a and b and len(b) != len(a):
        problem = f"takes a source of the input's rank {len(a)}, got {_words(src, b, False)}"
    elif (da := dtype_of(inp)) is not None and (db := dtype_of(src)) is not None and da != db:
        problem = f"takes a source of the input's dtype {da}, got {db}"
    elif a and b and i:
        want = [i[0] * i[1], a[-1]] if len(a) == 2 else [i[0], i[1], 1, a[-1]]
        if b != want:
            problem = (
                f"takes a source of shape {want} for {_words(index, i, False)} into {_words(inp, a, False)}, got {_words(src, b, False)}"
            )
    if problem is None:
        return []
    return [D.error(e.span, "scatter-shapes", f"'{e.op}' {problem}", "one row of the source per index, each as wide as the input")]


def broadcast(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """An elementwise op of two arrays whose shapes cannot combine. A row expansion takes one value
    per row, ``[..., M, 1]`` (``tile.row_expand_add`` also a packed ``[M, 32 B]``), a column
    expansion one per column, ``[..., 1, N]``: PyPTO's type deduction holds tensors and tiles' row
    expansions to that (``src/ir/op/{tile,tensor}_ops/broadcast.cpp``); a tile's column expansion it
    leaves to the hardware, whose ``tcolexpand`` reads the vector's first row, so another shape
    reads what is not there. Other elementwise ops must broadcast: aligned on the right, each pair
    of dimensions equal or one of them 1."""
    if len(e.args) < 2:
        return []
    a, b = shape_of(e.args[0]), shape_of(e.args[1])
    if not a or not b or len(a) < 2:
        return []
    short = e.op.rpartition(".")[2]
    if short.startswith("row_expand") and len(b) >= 2:
        # tile.row_expand_add's second form reads 32 bytes a row (TROWEXPANDADD's mode 2)
        bits = DTYPE_BITS.get(dtype_of(e.args[1]) or "") if short == "row_expand_add" and e.op.startswith("tile.") else None
        fits = b[-2] == a[-2] and (b[-1] == 1 or (bits is not None and b[-1] * bits == 256) or (bits is None and short == "row_expand_add"))
        hint = "a row expansion takes one value per row: [M, 1]" + (" (or 32 bytes a row)" if short == "row_expand_add" else "")
    elif short.startswith("col_expand") and len(b) >= 2:
        fits = b[-2] == 1 and b[-1] == a[-1]
        hint = "a column expansion takes one value per column: [1, N]"
    elif short.startswith(("row_expand", "col_expand")):
        return []  # a vector of one dimension: read by the kernel as its shape allows
    else:
        fits = all(x == y or 1 in (x, y) for x, y in zip(reversed(a), reversed(b), strict=False))
        hint = "the shapes must broadcast: equal, or 1, dimension by dimension from the right"
    if fits:
        return []
    return [
        D.error(
            e.span,
            "broadcast-shapes",
            f"'{e.op}' cannot combine {_words(e.args[0], a, False)} with {_words(e.args[1], b, False)}",
            hint,
        )
    ]


def sel_values(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """``tile.sel(mask, lhs, rhs, tmp)``: the two values broadcast (``DeduceTileSelType``: "requires
    compatible shapes"); torch said ``The size of tensor a (16) must match the size of tensor b (8)``."""
    if len(e.args) < 3:
        return []
    a, b = shape_of(e.args[1]), shape_of(e.args[2])
    if not a or not b or all(x == y or 1 in (x, y) for x, y in zip(reversed(a), reversed(b), strict=False)):
        return []
    return [
        D.error(
            e.span,
            "broadcast-shapes",
            f"'{e.op}' cannot choose between {_words(e.args[1], a, False)} and {_words(e.args[2], b, False)}",
            "the shapes must broadcast: equal, or 1, dimension by dimension from the right",
        )
    ]


def matmul(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """The left's columns against the right's rows, after ``a_trans``/``b_trans``; then the
    accumulator against the product (the last two dims: a batched matmul's leading ones broadcast)."""
    acc_at, lhs_at, rhs_at = MATMUL_OPERANDS[e.op]
    if len(e.args) <= max(lhs_at, rhs_at):
        return []  # the arity check says it
    trans = [e.kwargs.get("a_trans"), e.kwargs.get("b_trans")]
    if any(t is not None and not isinstance(t, Const) for t in trans):
        return []  # a transpose only the run knows
    a_trans, b_trans = (isinstance(t, Const) and bool(t.value) for t in trans)
    lhs, rhs = e.args[lhs_at], e.args[rhs_at]
    a, b = shape_of(lhs), shape_of(rhs)
    operands = [(lhs, a), (rhs, b)] + ([(e.args[acc_at], shape_of(e.args[acc_at]))] if acc_at is not None else [])
    # a tile matmul's operands are 2-D (PyPTO's DeduceTileMatMul*Type); a batched or a tensor
    # matmul's at least 2-D
    exact = e.op.startswith("tile.") and "batch" not in e.op
    for arg, shape in operands:
        if shape and (len(shape) != 2 if exact else len(shape) < 2):
            return [
                D.error(
                    arg.span,
                    "matmul-shapes",
                    f"'{e.op}' takes {'2-D' if exact else 'at least 2-D'} operands, got {_words(arg, shape, False)}",
                    "a matmul multiplies matrices; a vector is a [1, K] or [K, 1] tile",
                )
            ]
    if not a or not b:
        return []
    k_left = a[-2] if a_trans else a[-1]
    k_right = b[-1] if b_trans else b[-2]
    if k_left != k_right:
        return [
            D.error(
                e.span,
                "matmul-shapes",
                f"'{e.op}' cannot multiply {_words(lhs, a, a_trans)} by {_words(rhs, b, b_trans)}: "
                f"the left has {k_left} columns, the right {k_right} rows",
                "a pass or an edit paired the wrong tiles, or dropped a transpose",
            )
        ]
    product = [a[-1] if a_trans else a[-2], b[-2] if b_trans else b[-1]]
    if e.op in MX_SCALES and (wrong := _mx_scales(e, product, k_left, shape_of)):
        return wrong
    if e.op in ("tile.matmul_bias", "tile.gemv_bias") and len(e.args) > 2 and (bias := shape_of(e.args[2])):
        # PyPTO's DeduceTileMatMulBiasType: a 2-D bias of one row, as wide as the product
        if bias != [1, product[1]]:
            return [
                D.error(
                    e.args[2].span,
                    "matmul-shapes",
                    f"'{e.op}' adds {_words(e.args[2], bias, False)} to a {product} product: the bias is [1, {product[1]}]",
                    "one bias value per column of the product",
                )
            ]
    if acc_at is None:
        return []
    acc = shape_of(e.args[acc_at])
    if acc and len(acc) >= 2 and acc[-2:] != product:
        return [
            D.error(
                e.args[acc_at].span,
                "matmul-shapes",
                f"'{e.op}' accumulates a {product} product into {_words(e.args[acc_at], acc, False)}",
                "the accumulator must have the product's shape",
            )
        ]
    return []


def element_index(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """Literal indices outside the array: the device reads or writes another element, or none.
    Another count of indices than the rank is left out: the kernel reads it aligned on the last
    dimensions (:func:`pypto_lsp.exec.kernels.movement.read`)."""
    if len(e.args) < 2 or not isinstance(e.args[1], ListExpr | TupleExpr):
        return []
    shape = shape_of(e.args[0])
    index = fold_ints(e.args[1].items)
    if not shape or index is None or len(index) != len(shape):
        return []
    if all(0 <= i < d for i, d in zip(index, shape, strict=True)):
        return []
    return [
        D.error(
            e.args[1].span,
            "index-out-of-range",
            f"'{e.op}' at {index} is outside {_words(e.args[0], shape, False)}",
            "the element must lie inside the array's shape",
        )
    ]


def reshape_size(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """A reshape or view to another element count: PyPTO's deductions refuse it when both shapes
    are static (``tile.reshape: cannot reshape tile of size ...``, ``src/ir/op/{tile,tensor}_ops/
    transform.cpp``), and ``tensor.view`` takes positive dimensions only. torch said ``shape
    '[-1, -1]' is invalid for input of size 64`` or, for a smaller count, viewed a prefix."""
    if len(e.args) < 2 or not isinstance(e.args[1], ListExpr | TupleExpr):
        return []
    dims = [fold_int(d) for d in e.args[1].items]
    if e.op == "tensor.view":
        for item, d in zip(e.args[1].items, dims, strict=True):
            if d is not None and d <= 0:
                return [
                    D.error(
                        item.span,
                        "reshape-size",
                        f"'{e.op}' takes positive dimensions, got {d}",
                        "a view names each dimension; none is inferred",
                    )
                ]
    source = shape_of(e.args[0])
    if not source or any(d is None or d <= 0 for d in dims) or any(d <= 0 for d in source):
        return []
    have, want = math.prod(source), math.prod(d for d in dims if d is not None)
    if have == want:
        return []
    shown = [d for d in dims if d is not None]
    return [
        D.error(
            e.args[1].span,
            "reshape-size",
            f"'{e.op}' to {shown} ({want} elements) of {_words(e.args[0], source, False)} ({have} elements)",
            "a reshape keeps every element: the new shape's product must be the old one's",
        )
    ]


def _operand(e: OpCall, name: str) -> Expr | None:
    """The operand the catalogue names ``name``, given by position or by keyword."""
    if name in e.kwargs:
        return e.kwargs[name]
    i = _POSITIONS.get((e.op, name), -1)
    return e.args[i] if 0 <= i < len(e.args) else None


def positive_dims(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """A window, a tile or a tensor made with a dimension that is not positive: PyPTO's deductions
    refuse it (``The operator tile.full shape element 0 must be positive``, ``tile.slice shape
    element ...``, ``src/ir/op/tile_ops/{memory,transform}.cpp``); torch said ``Trying to create
    tensor with negative dimension -1``. A reshape is :func:`reshape_size`'s."""
    for name in ("shape", "shapes"):
        dims = _operand(e, name)
        if not isinstance(dims, ListExpr | TupleExpr):
            continue
        for item in dims.items:
            d = fold_int(item)
            if d is not None and d <= 0:
                return [
                    D.error(
                        item.span,
                        "bad-dimension",
                        f"'{e.op}' takes positive dimensions as {name}, got {d}",
                        "every dimension of a window, a tile or a tensor holds at least one element",
                    )
                ]
    return []


def slice_drops(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """``slice(input, shape, offset, valid_shape?, drop_dims?)``: each dropped axis lies inside the
    window's rank, once, and is of size 1, and one axis is kept (``ParseSliceDropDims``,
    ``src/ir/op/type_inference.cpp``). torch said ``shape '[1, 64]' is invalid for input of size
    128`` when the window's dropped axis was 2 wide."""
    drops, shape = _operand(e, "drop_dims"), _operand(e, "shape")
    if not isinstance(drops, ListExpr | TupleExpr) or not isinstance(shape, ListExpr | TupleExpr):
        return []
    dims = [fold_int(d) for d in shape.items]
    rank, seen = len(dims), set()
    for item in drops.items:
        axis = fold_int(item)
        if axis is None:
            continue
        problem = None
        if not 0 <= axis < rank:
            problem = f"drops axis {axis} of a {rank}-D window"
        elif axis in seen:
            problem = f"drops axis {axis} twice"
        elif dims[axis] is not None and dims[axis] != 1:
            problem = f"drops axis {axis} of the window {_shown(dims)}, which is {dims[axis]} wide"
        seen.add(axis)
        if problem is not None:
            return [D.error(item.span, "slice-drops", f"'{e.op}' {problem}", "drop_dims erases axes of size 1 only")]
    if rank and len(seen) >= rank:
        return [D.error(drops.span, "slice-drops", f"'{e.op}' drops every axis of its window", "keep one axis, or read the element")]
    return []


def _shown(dims: list[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def dim_axis(e: OpCall, shape_of: ShapeOf, dtype_of: DtypeOf) -> list[D.Diagnostic]:
    """``tensor.dim(tensor, axis)``: the axis lies in ``[-rank, rank)`` (``DeduceTensorDimType``);
    Python said ``tuple index out of range``."""
    if len(e.args) < 2:
        return []
    shape, axis = shape_of(e.args[0]), fold_int(e.args[1])
    if not shape or axis is None or -len(shape) <= axis < len(shape):
        return []
    return [
        D.error(
            e.args[1].span,
            "index-out-of-range",
            f"'{e.op}' of axis {axis} of {_words(e.args[0], shape, False)}, of rank {len(shape)}",
            "the axis must be one of the tensor's (negative ones count from the last)",
        )
    ]


def _words(e: Expr, shape: list[int], transposed: bool) -> str:
    what = f"'{e.id}' {shape}" if isinstance(e, Name) else str(shape)
    return what + (" transposed" if transposed else "")


Check = Callable[[OpCall, ShapeOf, DtypeOf], "list[D.Diagnostic]"]


RESHAPES = ("tile.reshape", "tensor.reshape", "tensor.view")
# (op, operand name) -> its position, for the operands the checks read by name
_POSITIONS: dict[tuple[str, str], int] = {
    (op, name): spec.params.index(name)
    for op, spec in catalogue.OPS.items()
    for name in ("shape", "shapes", "drop_dims")
    if name in spec.params
}


def _mx_scales(e: OpCall, product: list[int], k: int, shape_of: ShapeOf) -> list[D.Diagnostic]:
    """An MX matmul's scales: the left's ``[M, K/32]`` (one E8M0 value per row and group of 32
    along K), the right's ``[K/32, N]`` (PyPTO ``matmul_mx.cpp``; ``tests/st/runtime/ops/
    test_matmul_mx.py`` builds them so). Another shape made the run fail in torch's words (``The
    size of tensor a (128) must match the size of tensor b (64)``)."""
    groups = -(-k // MX_GROUP)
    for at, want, side in ((MX_SCALES[e.op][0], [product[0], groups], "left"), (MX_SCALES[e.op][1], [groups, product[1]], "right")):
        if len(e.args) <= at or not (got := shape_of(e.args[at])) or got == want:
            continue
        return [
            D.error(
                e.args[at].span,
                "matmul-shapes",
                f"'{e.op}' scales its {side} operand with {_words(e.args[at], got, False)}: a {product} product over K = {k} "
                f"takes a {side} scale of {want}",
                "one E8M0 scale per 32 elements along K: the left's [M, K/32], the right's [K/32, N]",
            )
        ]
    return []


def _by_op() -> dict[str, tuple[Check, ...]]:
    """Which checks each op gets (most get none): one dict lookup per op call."""
    one: dict[str, Check] = {name: broadcast for name, spec in catalogue.OPS.items() if spec.result == "binary"}
    one.update({f"{ns}.{op}": integer_operands for ns in ("tile", "tensor") for op in BITWISE})
    one.update(dict.fromkeys(("tile.cmp", "tensor.cmp"), broadcast))  # elementwise, of a mask's result rule
    one["tile.sel"] = sel_values
    one.update(dict.fromkeys(MATMUL_OPERANDS, matmul))
    one.update(dict.fromkeys(("tile.scatter_update", "tensor.scatter_update"), scatter_update))
    one.update(dict.fromkeys(ELEMENT_OPS, element_index))
    one.update(dict.fromkeys(RESHAPES, reshape_size))
    one.update(dict.fromkeys(("tile.slice", "tensor.slice"), slice_drops))
    one["tensor.dim"] = dim_axis
    checks: dict[str, tuple[Check, ...]] = {op: (check,) for op, check in one.items()}
    for name, spec in catalogue.OPS.items():
        if name not in RESHAPES and ("shape" in spec.params or "shapes" in spec.params):
            checks[name] = (*checks.get(name, ()), positive_dims)
    return checks


_CHECKS = _by_op()
