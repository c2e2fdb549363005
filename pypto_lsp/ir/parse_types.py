"""Pass-dump type annotations -> :mod:`pypto_lsp.ir.model` types, with ``ast`` only.

``pl.Tensor[...]``, ``pl.Tile[...]`` with their memory space, memref, valid shape and layout,
``pl.Scalar``, ``pl.Tuple``, ``pl.Array`` and the opaque types; the printer's most common
annotations arrive already read by :mod:`.printer_forms`. Nothing here executes dump text.
"""

from __future__ import annotations

import ast

from .model import (
    ArrayType,
    Const,
    EnumRef,
    Expr,
    MemRefInfo,
    OpaqueType,
    ScalarType,
    Span,
    TensorType,
    TileType,
    TupleType,
    Type,
)
from .names import BARE_LAYOUTS, DTYPES
from .parse_exprs import ExprParser, dotted, is_dunder

__all__ = ["TypeParser"]


class TypeParser(ExprParser):
    """:class:`~.parse_exprs.ExprParser` plus the type annotations of the dump grammar."""

    def type(self, node: ast.expr) -> Type | None:
        if type(node) is ast.Name and self._forms:
            key = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
            if type(self._forms.get(key)) is not MemRefInfo:
                parsed = self._forms.pop(key, None)
                if parsed is not None:
                    return parsed  # type: ignore[return-value]
        span = Span.of(node)
        if isinstance(node, ast.Attribute | ast.Name):
            dd = dotted(node)
            if dd in (
                ["pl", "Ptr"],
                ["pl", "MemRefType"],
                ["pl", "UnknownType"],
                ["pl", "PrefetchAsyncContext"],
                ["pl", "AsyncEvent"],
                ["pl", "AsyncSession"],
                ["pld", "WindowBufferType"],
                ["pld", "CommCtxType"],
            ):
                assert dd is not None
                return OpaqueType(dd[-1], span)
            if dd == ["pl", "Tensor"] or dd == ["pl", "Tile"]:
                self.err(node, "bad-type", f"{'.'.join(dd)} needs [shape, dtype]")
                return None
            self.err(node, "unknown-type", f"unknown type '{ast.unparse(node)}'")
            return None
        if isinstance(node, ast.Subscript):
            dd = dotted(node.value)
            items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            if dd in (["pl", "Tensor"], ["pld", "DistributedTensor"], ["pl", "Tile"]):
                return self._shaped(dd[-1], items, span, distributed=dd[0] == "pld")
            if dd == ["pl", "Scalar"]:
                dt = self._dtype(items[0]) if len(items) == 1 else None
                if len(items) != 1:
                    self.err(node, "bad-type", "pl.Scalar takes exactly one dtype")
                return ScalarType(dt or "INDEX", span)
            if dd == ["pl", "Tuple"]:
                if len(items) == 1 and isinstance(items[0], ast.Tuple) and not items[0].elts:
                    return TupleType([], span)
                return TupleType([t for t in (self.type(i) for i in items) if t is not None], span)
            if dd == ["pl", "Array"]:
                if len(items) < 2:
                    self.err(node, "bad-type", "pl.Array takes dims and a dtype")
                    return None
                dt = self._dtype(items[-1]) or "INT32"
                return ArrayType([self.expr(i) for i in items[:-1]], dt, span)
            if dd in (["pl", "Out"], ["pl", "InOut"]):
                self.err(node, "misplaced-direction", f"{'.'.join(dd)}[...] is only allowed on function parameters")
                return self.type(node.slice)
        self.err(node, "unknown-type", f"unknown type '{ast.unparse(node)[:60]}'")
        return None

    def _dtype(self, node: ast.expr) -> str | None:
        dd = dotted(node)
        if dd and len(dd) == 2 and dd[0] == "pl":
            if dd[1] in DTYPES:
                return dd[1]
            self.err(node, "unknown-dtype", f"unknown dtype 'pl.{dd[1]}'", "known dtypes: " + ", ".join(sorted(DTYPES)))
            return None
        self.err(node, "unknown-dtype", f"expected a dtype (pl.FP32, ...), got '{ast.unparse(node)[:40]}'")
        return None

    def _dims(self, node: ast.expr) -> list[Expr]:
        if isinstance(node, ast.List | ast.Tuple):
            return [self.expr(e) for e in node.elts]
        self.err(node, "bad-type", "expected a list of dimensions")
        return []

    def _shaped(self, kind: str, items: list[ast.expr], span: Span, distributed: bool) -> Type | None:
        if len(items) < 2:
            self.err(span, "bad-type", f"{kind} needs [shape, dtype]")
            return None
        shape = self._dims(items[0])
        dt = self._dtype(items[1]) or "FP32"
        if kind == "Tile":
            tile = TileType(shape, dt, span)
            for it in items[2:]:
                self._tile_item(tile, it)
            return tile
        tensor = TensorType(shape, dt, span, distributed=distributed)
        for it in items[2:]:
            self._tensor_item(tensor, it)
        return tensor

    def _memref(self, node: ast.expr) -> MemRefInfo | None:
        call = node.value if isinstance(node, ast.Subscript) else node
        if not (isinstance(call, ast.Call) and dotted(call.func) == ["pl", "MemRef"]):
            return None
        base: str | None = None
        off: Expr | None = None
        size: Expr | None = None
        if call.args:
            b = call.args[0]
            if isinstance(b, ast.Name):
                base = b.id
            elif isinstance(b, ast.Constant) and isinstance(b.value, str):
                base = b.value
            else:
                self.err(b, "bad-memref", "pl.MemRef base must be a name or a string")
        # offsets and sizes are addresses: numerically irrelevant, kept only when they are plain literals
        for i, a in enumerate(call.args[1:3]):
            if isinstance(a, ast.Constant) and isinstance(a.value, int | float):
                if i == 0:
                    off = Const(a.value, Span.of(a))
                else:
                    size = Const(a.value, Span.of(a))
            elif (
                i == 0
                and isinstance(a, ast.Call)
                and not a.keywords
                and len(a.args) == 2
                and dotted(a.func) == ["pl", "const"]
                and isinstance(a.args[0], ast.Constant)
                and type(a.args[0].value) is int
                and dotted(a.args[1]) == ["pl", "INT64"]
            ):
                # the byte address after AllocateMemoryAddr: pl.const(N, pl.INT64)
                off = Const(a.args[0].value, Span.of(a.args[0]), "INT64")
        for a in call.args[1:]:
            if isinstance(a, ast.Constant) or (
                isinstance(a, ast.Call)
                and not a.keywords
                and len(a.args) == 2
                and isinstance(a.args[0], ast.Constant)
                and dotted(a.func) == ["pl", "const"]
            ):
                continue  # the printer's literal forms: nothing to inspect
            for sub in ast.walk(a):
                if isinstance(sub, ast.Name) and is_dunder(sub.id) or isinstance(sub, ast.Attribute) and is_dunder(sub.attr):
                    self.grammar(sub, "a dunder name")
        return MemRefInfo(base, off, size, Span.of(node))

    def _view_kwargs(self, node: ast.Call) -> dict[str, ast.expr]:
        for a in node.args:
            self.err(a, "bad-type", "views take keyword arguments only")
        return {kw.arg: kw.value for kw in node.keywords if kw.arg}

    def _placeholder_memref(self, it: ast.expr) -> MemRefInfo | None:
        if type(it) is ast.Name and self._forms:
            key = (it.lineno, it.col_offset)
            if type(self._forms.get(key)) is MemRefInfo:
                return self._forms.pop(key)  # type: ignore[return-value]
        return None

    def _tile_item(self, tile: TileType, it: ast.expr) -> None:
        mr = self._placeholder_memref(it) or self._memref(it)
        if mr is not None:
            tile.memref = mr
            return
        dd = dotted(it)
        if dd and len(dd) == 3 and dd[0] == "pl" and dd[1] in ("Mem", "MemorySpace") and isinstance(it, ast.Attribute):
            e = self.attribute(it)  # validates the member
            if isinstance(e, EnumRef):
                tile.memspace = e.member
            return
        if isinstance(it, ast.Call) and dotted(it.func) == ["pl", "TileView"]:
            kw = self._view_kwargs(it)
            if "valid_shape" in kw:
                tile.valid_shape = self._dims(kw["valid_shape"])
            for k, v in kw.items():
                if k == "blayout":
                    e = self.expr(v)
                    tile.blayout = e.member if isinstance(e, EnumRef) else None
                elif k not in ("valid_shape",):
                    self.expr(v)
            return
        self.err(it, "bad-type", f"unexpected tile type item '{ast.unparse(it)[:60]}'")

    def _tensor_item(self, tensor: TensorType, it: ast.expr) -> None:
        mr = self._placeholder_memref(it) or self._memref(it)
        if mr is not None:
            tensor.memref = mr
            return
        if isinstance(it, ast.Call) and dotted(it.func) == ["pl", "TensorView"]:
            kw = self._view_kwargs(it)
            if "valid_shape" in kw:
                tensor.valid_shape = self._dims(kw["valid_shape"])
            if "layout" in kw:
                e = self.expr(kw["layout"])
                tensor.layout = e.member if isinstance(e, EnumRef) else None
            for k, v in kw.items():
                if k not in ("valid_shape", "layout"):
                    self.expr(v)
            return
        if isinstance(it, ast.Constant) and isinstance(it.value, str):
            return  # "window_buffer=<name>" marker of EXPLICIT dumps
        dd = dotted(it)
        if dd and len(dd) == 2 and dd[0] == "pl" and dd[1] in BARE_LAYOUTS:
            tensor.layout = dd[1]
            return
        self.err(it, "bad-type", f"unexpected tensor type item '{ast.unparse(it)[:60]}'")
