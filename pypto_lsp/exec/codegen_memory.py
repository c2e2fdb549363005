"""What the generated code tells the memory model (:mod:`pypto_lsp.exec.memory`): each placed
value's site, the reads of placed operands, the allocation guard, the sanitizer's global buffers."""

from __future__ import annotations

from typing import Any

from ..ir import alloc_budget
from ..ir.catalogue import NO_NEW_BUFFER, WRITES_INTO, lookup
from ..ir.memory import VIEW_OPS, operand_roles
from ..ir.model import Assign, Const, DTypeRef, Expr, ListExpr, Name, OpCall, Span, TensorType, TileType, TupleExpr
from .codegen_text import literal

__all__ = ["MemoryLowering", "site_literal"]


def site_literal(v: dict[str, Any]) -> str:
    """The ``_pl_mem.Site(...)`` a standalone script spells for one site's keywords."""
    ops = "(" + "".join(literal(o) + ", " for o in v["operands"]) + ")"
    scr = "(" + "".join(f"{i}, " for i in v["scratch"]) + ")"
    shp = "(" + "".join(f"{d}, " for d in v["shape"]) + ")"
    pipe = v["pipe"]
    pp = "None" if pipe is None else f"({pipe[0]}, {pipe[1]}, {pipe[2]})"
    return (
        f"_pl_mem.Site(kind={literal(v['kind'])}, name={literal(v['name'])}, line={v['line']}, space={literal(v['space'])}, "
        f"start={v['start']}, nbytes={v['nbytes']}, dtype={literal(v['dtype'])}, shape={shp}, memref={literal(v['memref'])}, "
        f"operands={ops}, scratch={scr}, view_op={v['view_op']}, pipe={pp})"
    )


class MemoryLowering:
    """Emits for one function's generator ``f`` (an ``exec.codegen._FunctionGen``: its names,
    lines, memory plan and expressions)."""

    def __init__(self, f: Any) -> None:
        self.f = f

    def mem_site(
        self,
        key: int,
        kind: str,
        name: str,
        line: int,
        space: str,
        start: int,
        nbytes: int,
        dtype: str,
        shape: tuple[int, ...],
        memref: str,
        operands: list[str],
        scratch: list[int],
        view_op: bool,
        pipe: tuple[int, int, int] | None,
    ) -> int:
        """Add a site to this function's memory plan (its keywords: :func:`site_literal` spells them); its index. ``key``: the id of the
        statement or op it belongs to (a body emitted twice, as a peeled loop is, shares its sites)."""
        known = self.f.mem_site_of.get(key)
        if known is not None:
            return known
        self.f.mem_site_values.append(
            {
                "kind": kind,
                "name": name,
                "line": line,
                "space": space,
                "start": start,
                "nbytes": nbytes,
                "dtype": dtype,
                "shape": tuple(shape),
                "memref": memref,
                "operands": tuple(operands),
                "scratch": tuple(scratch),
                "view_op": view_op,
                "pipe": pipe,
            }
        )
        self.f.mem_site_of[key] = len(self.f.mem_site_values) - 1
        return len(self.f.mem_site_values) - 1

    def mem_reads(self, e: Expr, line: int) -> tuple[list[str], list[str], list[int]]:
        """Python names, IR names and scratch positions of the operands of ``e`` that may be placed tiles."""
        if self.f.mem is None or not isinstance(e, OpCall):
            return [], [], []
        roles = operand_roles(e, self.f.mem.types)
        return [self.f.py(n) for _, n, _ in roles], [n for _, n, _ in roles], [k for k, (_, _, r) in enumerate(roles) if r == "scratch"]

    def fresh_tensor(self, e: OpCall, value: str, name: str, line: int) -> str:
        """A global buffer the sanitizer follows (exec.sanitizer): unwritten unless ``init_value``."""
        manual = e.kwargs.get("manual_dep")
        md = isinstance(manual, Const) and bool(manual.value)
        hook = "created" if "init_value" in e.kwargs else "fresh"
        return f"_pl_san.{hook}({value}, {line}, {literal(name)}, {md})"

    def alloc_guard(self, s: Assign, ind: int) -> None:
        """Before an op allocating a result whose shape depends on runtime values (dynamic dims,
        scalar parameters): the budget check of :mod:`pypto_lsp.ir.alloc_budget`. Static shapes were checked
        before the run (ir.alloc_static) and get nothing here."""
        v = s.value
        if not isinstance(v, OpCall) or v.op in WRITES_INTO or v.op in VIEW_OPS or v.op in NO_NEW_BUFFER:
            return
        if v.op == "pld.tensor.alloc_window_buffer" and v.args:
            self.window_guard(s, v, ind)
            return
        spec = lookup(v.op)
        t = s.target.type
        if spec is not None and spec.result == "create" and v.args and isinstance(v.args[0], ListExpr | TupleExpr):
            shape, dt = list(v.args[0].items), v.kwargs.get("dtype")
            dtype = dt.name if isinstance(dt, DTypeRef) else (t.dtype if isinstance(t, TensorType | TileType) else "FP32")
        elif isinstance(t, TensorType | TileType):
            shape, dtype = t.shape, t.dtype
        else:
            return
        dims = self.f.dims(shape)
        if dims is None or all(isinstance(d, Const) for d in shape):
            return
        temps = spec.temp_bytes if spec is not None else 0
        what = f"{s.target.name}: {v.printed}" if v.printed else s.target.name
        site = self.f.gen.constant(f"({alloc_budget.itemsize(dtype) + temps}, {literal(what)}, {literal(dtype)}, {temps})")
        self.f.gen.uses_alloc_guard = True
        self.f.emit(ind, f"_pl_ab.check({dims}, {site})", s.span)

    def window_guard(self, s: Assign, v: OpCall, ind: int) -> None:
        """Before a window buffer is made: it is one buffer of its size on every rank, made by one
        op, so the budget counts all of them together (its size is a runtime value as often as not)."""
        size = v.args[0]
        if isinstance(size, ListExpr | TupleExpr):  # the (shape, dtype=) form
            dt = v.kwargs.get("dtype")
            dtype, dims = (dt.name if isinstance(dt, DTypeRef) else "INT32"), self.f.dims(size.items)
        else:
            dtype, dims = "UINT8", f"({self.f.expr(size)}, )"
        if dims is None:
            return
        ranks = "_pl_rt.world_size()"
        site = self.f.gen.constant(
            f"({alloc_budget.itemsize(dtype)}, {literal(f'{s.target.name}: a window buffer on every rank')}, {literal(dtype)}, 0)"
        )
        self.f.gen.uses_alloc_guard = True
        self.f.emit(ind, f"_pl_ab.check(({dims[1:-1]}{ranks}, ), {site})", s.span)

    def mem_read_stmt(self, e: OpCall, span: Span, ind: int) -> None:
        py, names, scratch = self.mem_reads(e, span.line)
        if py:
            idx = self.mem_site(id(e), "r", e.op, span.line, "", 0, 0, "", (), "", names, scratch, False, None)
            self.f.emit(ind, f"_pl_m.rd({idx}, {', '.join(py)})", span)

    def mem_assign(self, s: Assign, value: str, ind: int) -> str:
        """``value`` wrapped so the result lands in its bytes (and its operands are checked)."""
        assert self.f.mem is not None
        site = self.f.mem.sites.get(id(s))
        pop = self.f.mem.pops.get(id(s))
        py, names, scratch = self.mem_reads(s.value, s.span.line)
        if site is not None:
            v = s.value
            view = isinstance(v, OpCall) and v.op in VIEW_OPS and bool(v.args) and isinstance(v.args[0], Name) and bool(names)
            view = view and isinstance(v, OpCall) and isinstance(v.args[0], Name) and names[0] == v.args[0].id
            idx = self.mem_site(
                id(s),
                "w",
                site.name,
                site.line,
                site.space,
                site.start,
                site.nbytes,
                site.dtype,
                site.shape,
                site.memref(),
                names,
                scratch,
                view,
                None,
            )
            return f"_pl_m.wr({value}, {idx}{''.join(', ' + p for p in py)})"
        if pop is not None:
            r = self.f.mem.reserves[pop.reserve]
            memref = f"pipe '{r.name}'"
            idx = self.mem_site(
                id(s),
                "p",
                pop.name,
                pop.line,
                pop.space,
                r.start,
                pop.nbytes,
                pop.dtype,
                pop.shape,
                memref,
                [],
                [],
                False,
                (pop.reserve, r.slot_size, r.slot_num),
            )
            return f"_pl_m.pop({value}, {idx})"
        if py and isinstance(s.value, OpCall):
            self.mem_read_stmt(s.value, s.span, ind)
        return value
