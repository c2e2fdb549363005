"""What value each kind of keyword takes, as PyPTO declares it: an op's attributes (``.set_attr<T>``,
read into ``op_registry.json``: :func:`pypto_lsp.ir.check` holds a call's keywords to them) and a
scope header's (:mod:`.scope_keywords`). One place says whether a printed value fits a kind."""

from __future__ import annotations

from .model import BinOp, Const, DTypeRef, EnumRef, Expr, FuncCall, Intrinsic, Name, OpCall, Subscript, UnaryOp

# the enums of attributes that are not integers (an int attribute may be printed as an enum member:
# atomic=pl.AtomicType.None_, or by name: a cast's mode="round")
NON_INT_ENUMS = frozenset({"Mem", "MemorySpace", "PadValue", "TileLayout", "TensorLayout"})
# a kind whose values are members of these enums (by the member's middle segment: pl.Mem.Vec)
KEYWORD_ENUMS = {
    "memory_space": ("Mem", "MemorySpace"),
    "pad_value": ("PadValue",),
    "layout": ("TileLayout", "TensorLayout"),
    "level": ("Level",),
    "role": ("Role",),
    "scope_mode": ("ScopeMode",),
}
KEYWORD_WORDS = {
    "dtype": "a dtype",
    "bool": "True or False",
    "int": "an integer",
    "number": "a number",
    "memory_space": "a memory space (pl.Mem.X)",
    "pad_value": "a pad value (pl.PadValue.X)",
    "layout": "a layout",
    "string": "a string",
    "level": "a level (pl.Level.X)",
    "role": "a role (pl.Role.X)",
    "scope_mode": "a scope mode (pl.ScopeMode.X)",
}


def fits(want: str, v: Expr) -> bool | None:
    """Whether ``v`` fits a keyword of kind ``want``; None when only the run can say (a name,
    an expression)."""
    if isinstance(v, Name | BinOp | Subscript | OpCall | FuncCall | Intrinsic):
        return None
    if want in KEYWORD_ENUMS:
        return isinstance(v, EnumRef) and v.enum in KEYWORD_ENUMS[want]
    if want == "dtype":
        return isinstance(v, DTypeRef)
    if want == "string":
        return isinstance(v, Const) and isinstance(v.value, str)
    if isinstance(v, UnaryOp):
        return want in ("int", "number")
    if want == "bool":
        return isinstance(v, Const) and (isinstance(v.value, bool) or v.value in (0, 1))
    if want == "int":
        if isinstance(v, EnumRef):
            return v.enum not in NON_INT_ENUMS
        return isinstance(v, Const) and isinstance(v.value, int | str)
    if want == "number":
        return isinstance(v, Const) and isinstance(v.value, int | float) and not isinstance(v.value, bool)
    return None
