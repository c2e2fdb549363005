"""The text the code generator writes: identifiers made from IR names, literals, op symbols.

Every identifier in a generated script is a sanitised IR name or a ``_pl_`` runtime name, and
every literal is produced here with ``repr`` of a value we parsed: no text of the dump is copied
into the script (:mod:`.codegen`).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import keyword
import math
import re

from ..ir.model import Const, Expr, Name, ScalarType, Span, Target, TensorType, TileType, Type

__all__ = ["CodegenError", "RESERVED", "py_name", "literal", "op_symbol", "Frame", "is_static", "same_dims"]

# names the generated code uses itself; IR names equal to one of these get a suffix
RESERVED = frozenset(
    {"range", "min", "max", "abs", "int", "float", "bool", "len", "None", "True", "False", "print", "self", "object", "type"}
)


class CodegenError(Exception):
    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.span = span


@functools.lru_cache(maxsize=8192)
def py_name(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    if not s or s[0].isdigit():
        s = "v_" + s
    if keyword.iskeyword(s) or s in RESERVED or s.startswith("_pl_"):
        s = s + "_v"
    return s


_REPR_AS_IS = (int, str, bool, type(None))  # exact types: repr is the literal


def literal(v: object) -> str:
    if type(v) in _REPR_AS_IS:
        return repr(v)
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
        return repr(v)
    if isinstance(v, str):
        return repr(v)
    raise CodegenError(f"cannot emit literal of type {type(v).__name__}", None)


def op_symbol(op: str) -> str:
    return "_pl_op_" + re.sub(r"\W", "_", op)


class Frame:
    """A loop or if whose ``pl.yield_`` assigns carried/return values."""

    def __init__(self, kind: str, carried: list[str], targets: list[Target] | None = None) -> None:
        self.kind = kind  # "loop" | "if"
        self.carried = carried  # python names the yield assigns
        self.targets = targets or []  # their IR targets (a loop's iter_args)


def is_static(t: Type | None) -> bool:
    """A type whose shape and valid shape are literal ints (its ResultType is a constant)."""
    if isinstance(t, TensorType | TileType):
        dims = list(t.shape) + list(t.valid_shape or [])
        return all(isinstance(d, Const) and isinstance(d.value, int) for d in dims)
    return isinstance(t, ScalarType)


def same_dims(a: list[Expr], b: list[Expr]) -> bool:
    return len(a) == len(b) and all(
        isinstance(x, Const) and isinstance(y, Const) and x.value == y.value or isinstance(x, Name) and isinstance(y, Name) and x.id == y.id
        for x, y in zip(a, b, strict=True)
    )


# the hooks of traced code (exec.trace_hooks) and which argument of each is the IR line
HOOK_LINE_ARG = {"_pl_tr": 2, "_pl_tw": 2, "_pl_ty": 2, "_pl_loop": 1, "_pl_br": 1, "_pl_at": 0}


def stop_lines(source: str) -> frozenset[int]:
    """IR lines where traced generated code calls a hook (assignments, yields, loops, ifs,
    statements that bind nothing, returns): where a debugged run can stop."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            k = HOOK_LINE_ARG.get(node.func.id)
            if k is not None and len(node.args) > k:
                a = node.args[k]
                if isinstance(a, ast.Constant) and isinstance(a.value, int):
                    lines.add(a.value)
    return frozenset(lines)


# a module-level constant's name (codegen: _ProgramGen.constant); no ``\b`` in front, which would
# keep ``re`` from searching for the literal first (eight times slower on a folder's functions):
# :func:`code_key` checks the character before itself
_CONSTANT = re.compile(r"_pl_k\d+(?!\w)")


def code_key(lines: list[tuple[str, Span | None]], constants: dict[str, str]) -> str:
    """A digest of a function's printed ``lines`` with every module-level constant they name spelt
    out (``constants``: expression -> name). ``_pl_kN`` is numbered per script; the other names the
    lines use mean the same in every script (dtypes, kernels and runtime modules by their own
    names, IR lines as numbers). Two functions with one key run the same code on the same
    placements, whichever dump they come from."""
    exprs = {name: expr for expr, name in constants.items()}

    def spelt(m: re.Match[str]) -> str:
        at, name = m.start(), m.group(0)
        if at and (m.string[at - 1].isalnum() or m.string[at - 1] == "_"):
            return name  # inside a longer name
        return "(" + _CONSTANT.sub(spelt, exprs.get(name, name)) + ")"

    text = _CONSTANT.sub(spelt, "\n".join([t for t, _ in lines]))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
