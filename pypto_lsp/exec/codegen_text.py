"""The text the code generator writes: identifiers made from IR names, literals, op symbols.

Every identifier in a generated script is a sanitised IR name or a ``_pl_`` runtime name, and
every literal is produced here with ``repr`` of a value we parsed: no text of the dump is copied
into the script (:mod:`.codegen`).
"""

from __future__ import annotations

import keyword
import math
import re

from ..ir.model import Span

__all__ = ["CodegenError", "RESERVED", "py_name", "literal", "op_symbol"]

# names the generated code uses itself; IR names equal to one of these get a suffix
RESERVED = frozenset(
    {"range", "min", "max", "abs", "int", "float", "bool", "len", "None", "True", "False", "print", "self", "object", "type"}
)


class CodegenError(Exception):
    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.span = span


def py_name(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    if not s or s[0].isdigit():
        s = "v_" + s
    if keyword.iskeyword(s) or s in RESERVED or s.startswith("_pl_"):
        s = s + "_v"
    return s


def literal(v: object) -> str:
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
