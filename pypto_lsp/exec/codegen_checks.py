"""Printing the checks of an assignment: its annotation's shape, dtype and valid region
(``check_value``; a static one named once at module level, ``check_spec``), a tuple's items, and the
result types the kernels that build a tile are handed. What is checked is the IR's annotation;
nothing here decides whether the checks are on (``Options.check_shapes``)."""

from __future__ import annotations

from typing import Any

from ..ir.model import Const, Expr, FuncCall, Name, OpCall, ScalarType, Target, TensorType, TileType, TupleType, Type, walk_expr
from .codegen_text import literal, same_dims


class CheckLowering:
    """Emits for one function's generator ``f`` (an ``exec.codegen._FunctionGen``: its names,
    expressions and its program's module-level names)."""

    def __init__(self, f: Any) -> None:
        self.f = f

    def checked(self, value: str, target: Target) -> str:
        """``value`` as assigned to ``target``: through its annotation's check."""
        f = self.f
        t = target.type
        if isinstance(t, TupleType) and f.gen.check_shapes and not f.sweep_mode:  # each array item, on this line
            items = "".join(f"({self.args(i)}), " if isinstance(i, TensorType | TileType) else "None, " for i in t.items)
            return f"_pl_rt.check_items({value}, ({items}), {literal(target.name)})" if "(" in items else value
        if not isinstance(t, TensorType | TileType):
            return value
        if f.gen.check_shapes:
            spec = self.spec(t)
            if spec is not None:  # a static annotation: one module-level constant names it
                return f"{'_pl_sweep.chs' if f.sweep_mode else '_pl_chs'}({value}, {spec}, {literal(target.name)})"
            return f"{'_pl_sweep.chk' if f.sweep_mode else '_pl_chk'}({value}, {self.args(t)}, {literal(target.name)})"
        valid = f.dims(t.valid_shape) if t.valid_shape is not None and not same_dims(t.valid_shape, t.shape) else None
        return value if valid is None else f"_pl_rt.with_valid({value}, {valid})"

    def args(self, t: TensorType | TileType) -> str:
        """``shape, dtype, valid`` as :meth:`checked` passes them to ``check_value``."""
        f = self.f
        valid = f.dims(t.valid_shape) if t.valid_shape is not None else "None"
        if valid is None or (t.valid_shape is not None and same_dims(t.valid_shape, t.shape)):
            valid = "None"
        return f"{self.loose_dims(t.shape)}, {f.gen.dtype(t.dtype)}, {valid}"

    def loose_dims(self, dims: list[Expr]) -> str:
        """Like ``dims`` but unbound dims become None (not checked)."""
        f = self.f
        parts = []
        for d in dims:
            ok = type(d) is Const or all(
                not (isinstance(x, Name) and x.id not in f.defined) and not isinstance(x, OpCall | FuncCall) for x in walk_expr(d)
            )
            parts.append(f.expr(d) if ok else "None")
        return "(" + "".join(p + ", " for p in parts) + ")"

    def spec(self, t: TensorType | TileType) -> str | None:
        """The module-level name of ``(shape, dtype, valid)`` for an annotation whose dims and valid
        dims are all integer literals (None for any other): ``_pl_chs(value, spec, name)`` is
        ``check_value(value, *spec, name)``. Named by what it holds, not numbered, so a function prints
        the same text in every dump (its compiled block is shared: ``exec.script_code``); a fifth
        fewer nodes for ``compile`` than the shape, dtype and valid region spelt out on every line."""
        gen = self.f.gen
        dims = _int_dims(t.shape)
        if dims is None:
            return None
        valid = None
        if t.valid_shape is not None and not same_dims(t.valid_shape, t.shape):
            valid = _int_dims(t.valid_shape)
            if valid is None:
                return None
        dt = gen.dtype(t.dtype)
        name = "_pl_c_" + "x".join(str(d).replace("-", "m") for d in dims) + dt[len("_pl_dt") :]
        if valid is not None:
            name += "_v" + "x".join(str(d).replace("-", "m") for d in valid)
        if name not in gen.check_specs:
            shape = "(" + "".join(f"{d}, " for d in dims) + ")"
            vtext = "None" if valid is None else "(" + "".join(f"{d}, " for d in valid) + ")"
            gen.check_specs[name] = f"({shape}, {dt}, {vtext})"
        return name

    def rtype(self, t: Type | None) -> str:
        """The ``ResultType`` a kernel that builds a tile is handed (its shape, dtype, valid region, layout, space)."""
        f = self.f
        if isinstance(t, TensorType | TileType):
            shape = f.dims(t.shape) or "None"
            valid = f.dims(t.valid_shape) if t.valid_shape is not None else None
            layout = literal(t.layout) if isinstance(t, TensorType) else literal(t.blayout)
            space = literal(t.memspace) if isinstance(t, TileType) else "'DDR'"
            return f"_pl_rt.ResultType({shape}, {f.gen.dtype(t.dtype)}, {valid or 'None'}, {layout}, {space})"
        if isinstance(t, ScalarType):
            return f"_pl_rt.ResultType(None, {f.gen.dtype(t.dtype)}, None, None, None)"
        return "None"


def _int_dims(dims: list[Expr]) -> list[int] | None:
    """``dims`` when every one is an integer literal, else None."""
    out = []
    for d in dims:
        if type(d) is not Const or type(d.value) is not int:
            return None
        out.append(d.value)
    return out
