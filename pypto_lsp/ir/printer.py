"""The IR printed back as compact DSL text: expressions and types as the hover and the outline
show them (``pl.const(0, pl.INT64)`` -> ``0``; a tile type without its memref).

Pure functions over :mod:`pypto_lsp.ir.model` (no torch, no LSP).
"""

from __future__ import annotations

from .model import (
    ArrayType,
    BinOp,
    Const,
    DictExpr,
    DTypeRef,
    EnumRef,
    Expr,
    FuncCall,
    Intrinsic,
    ListExpr,
    Name,
    OpaqueType,
    OpCall,
    Param,
    ScalarType,
    Subscript,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    Type,
    UnaryOp,
)

__all__ = ["dims_str", "expr_str", "param_str", "type_str"]

PRECEDENCE = {
    "or": 1,
    "and": 2,
    "==": 4,
    "!=": 4,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "|": 5,
    "^": 6,
    "&": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "//": 10,
    "%": 10,
    "**": 12,
}


def expr_str(e: Expr | None, depth: int = 0) -> str:
    """Compact DSL rendering of an expression (``pl.const(0, pl.INT64)`` -> ``0``)."""
    if e is None:
        return ""
    if depth > 20:
        return "…"
    d = depth + 1
    if isinstance(e, Name):
        return e.id
    if isinstance(e, Const):
        if isinstance(e.value, str):
            return repr(e.value)
        return "None" if e.value is None else str(e.value)
    if isinstance(e, DTypeRef):
        return f"pl.{e.name}"
    if isinstance(e, EnumRef):
        return f"pl.{e.enum}.{e.member}"
    if isinstance(e, BinOp):
        p = PRECEDENCE.get(e.op, 0)
        left, right = expr_str(e.left, d), expr_str(e.right, d)
        if isinstance(e.left, BinOp) and PRECEDENCE.get(e.left.op, 0) < p:
            left = f"({left})"
        if isinstance(e.right, BinOp) and PRECEDENCE.get(e.right.op, 0) <= p:
            right = f"({right})"
        return f"{left} {e.op} {right}"
    if isinstance(e, UnaryOp):
        sep = " " if e.op == "not" else ""
        inner = expr_str(e.operand, d)
        if isinstance(e.operand, BinOp):
            inner = f"({inner})"
        return f"{e.op}{sep}{inner}"
    if isinstance(e, ListExpr):
        return "[" + ", ".join(expr_str(i, d) for i in e.items) + "]"
    if isinstance(e, TupleExpr):
        items = [expr_str(i, d) for i in e.items]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(e, DictExpr):
        return "{" + ", ".join(f"{expr_str(k, d)}: {expr_str(v, d)}" for k, v in zip(e.keys, e.values)) + "}"
    if isinstance(e, Subscript):
        return f"{expr_str(e.value, d)}[{expr_str(e.index, d)}]"
    if isinstance(e, Intrinsic):
        head = "abs" if e.name == "abs" else f"pl.{e.name}"
        return f"{head}(" + ", ".join(expr_str(a, d) for a in e.args) + ")"
    if isinstance(e, OpCall | FuncCall):
        args = [expr_str(a, d) for a in e.args] + [f"{k}={expr_str(v, d)}" for k, v in e.kwargs.items()]
        head = e.printed if isinstance(e, OpCall) else (f"pl.{e.submit}(self.{e.func}, " if e.submit else f"self.{e.func}(")
        if isinstance(e, OpCall):
            head += "("
        return head + ", ".join(args) + ")"
    return "?"  # pragma: no cover


def dims_str(dims: list[Expr]) -> str:
    return "[" + ", ".join(expr_str(x) for x in dims) + "]"


def type_str(t: Type | None) -> str:
    """Short DSL rendering of a type, without memref: ``pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec]``."""
    if t is None:
        return "?"
    if isinstance(t, TensorType):
        head = "pld.DistributedTensor" if t.distributed else "pl.Tensor"
        return f"{head}[{dims_str(t.shape)}, pl.{t.dtype}]"
    if isinstance(t, TileType):
        mem = f", pl.Mem.{t.memspace}" if t.memspace else ""
        return f"pl.Tile[{dims_str(t.shape)}, pl.{t.dtype}{mem}]"
    if isinstance(t, ScalarType):
        return f"pl.Scalar[pl.{t.dtype}]"
    if isinstance(t, TupleType):
        return "pl.Tuple[" + ", ".join(type_str(i) for i in t.items) + "]"
    if isinstance(t, ArrayType):
        return f"pl.Array[{', '.join(expr_str(x) for x in t.shape)}, pl.{t.dtype}]"
    if isinstance(t, OpaqueType):
        return f"pld.{t.name}" if t.name in ("WindowBufferType", "CommCtxType") else f"pl.{t.name}"
    return "?"  # pragma: no cover


def param_str(p: Param) -> str:
    t = type_str(p.type)
    if p.direction == "out":
        t = f"pl.Out[{t}]"
    elif p.direction == "inout":
        t = f"pl.InOut[{t}]"
    return f"{p.name}: {t}"
