"""The dump model built by ``pypto_lsp.ir.parser``: spans, types, statements, calls.

Small IR samples written for these tests, plus one sweep over the real dumps of
``../shared/fixtures`` (skipped when absent).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pypto_lsp.ir import diagnostics as D
from pypto_lsp.ir.check import check_program
from pypto_lsp.ir.model import (
    Assign,
    BinOp,
    Const,
    DictExpr,
    DTypeRef,
    EnumRef,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    ListExpr,
    Name,
    OpaqueType,
    OpCall,
    Program,
    Return,
    ScalarType,
    Scope,
    Span,
    TensorType,
    TileType,
    Unpack,
    While,
    Yield,
    trailing_yield,
    walk_stmts,
)
from pypto_lsp.ir.parser import load, loads, parse_bytes, parse_text

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


def parse_ok(text: str) -> Program:
    res = parse_text(text, "sample.py")
    assert res.program is not None
    assert not res.errors, [(d.span.line, d.code, d.message) for d in res.errors]
    return res.program


def col_of(text: str, line: int, needle: str, nth: int = 0) -> int:
    """0-based column of the nth ``needle`` on 1-based ``line``."""
    src = text.split("\n")[line - 1]
    col = -1
    for _ in range(nth + 1):
        col = src.index(needle, col + 1)
    return col


# ---------------------------------------------------------------------- samples

KERNEL = """\
# pypto.program: Sample
import pypto.language as pl

M = pl.dynamic("M")
N = pl.dynamic("N")

@pl.program
class Sample:
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def kernel(x: pl.Tensor[[M, 64], pl.FP32, pl.TensorView(stride=[1, M], layout=pl.TensorLayout.DN)], y: pl.InOut[pl.Tensor[[M, 64], pl.FP32]], out: pl.Out[pl.Tensor[[M, 64], pl.FP32, pl.MemRef("mem_ddr_0", 0, 16384)]]) -> pl.Tensor[[M, 64], pl.FP32]:
        pl.func_attr({"split": pl.SplitMode.UP_DOWN, "dual_aiv_dispatch": True, "slot_num": 4})
        mem_vec_0: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 16384)
        t: pl.Tile[[64, 64], pl.FP32, pl.MemRef(mem_vec_0, 0, 16384), pl.Mem.Vec, pl.TileView(valid_shape=[36, 64], blayout=pl.TileLayout.row_major)] = pl.tile.load(x, [0, 0], [64, 64], [36, 64], target_memory=pl.Mem.Vec)
        m: pl.Tile[[64, 64], pl.INT32, pl.Mem.Vec] = pl.tile.and_(t, t)
        c: pl.Scalar[pl.INT32] = pl.const(-3, pl.INT32)
        h: pl.Scalar[pl.FP16] = pl.const(0.5, pl.FP16)
        k: pl.Scalar[pl.INDEX] = pl.min(pl.const(33, pl.INDEX) - N * 17, 17)
        out__ssa_v1: pl.Tensor[[M, 64], pl.FP32] = pl.tile.store(t, [0, 0], out)
        return out__ssa_v1
"""

FLOW = """\
# pypto.program: Flow
import pypto.language as pl

@pl.program
class Flow:
    @pl.function(type=pl.FunctionType.InCore)
    def body(self, n: pl.Scalar[pl.INDEX], x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i, (acc, cnt) in pl.range(0, 64, 16, init_values=(y, 0)):
            t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [i, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
            acc__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(t, [i, 0], acc)
            acc__rv_v2, cnt__rv_v2 = pl.yield_(acc__ssa_v1, cnt + 1)
        for (k, s) in pl.while_(init_values=(0, 1)):
            pl.cond(k < n)
            k__rv_v1, s__rv_v1 = pl.yield_(k + 1, s * 2)
        if n > 0:
            r: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(acc__rv_v2)
        else:
            r: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(y)
        with pl.scope():
            for b in pl.spmd(4, name_hint="blk"):
                idx: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pass
        return r

    @pl.function(type=pl.FunctionType.InCore, role=pl.Role.SubWorker)
    def helper(w: pl.Tensor[[64, 64], pl.FP32]) -> pl.Tensor[[64, 64], pl.FP32]:
        ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, n: pl.Scalar[pl.INDEX], x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k0") as tid:
            r: pl.Tensor[[64, 64], pl.FP32] = self.body(n, x, y, attrs={"arg_directions": [pl.adir.scalar, pl.adir.input, pl.adir.output]})
        r2, task = pl.submit(self.body, n, x, r, deps=[tid])
        w: pld.DistributedTensor[[64, 64], pl.FP32] = pld.tensor.window(r2, [64, 64])
        pld.tensor.barrier(w)
        return r2
"""

# FLOW as ruff would format it at a short line length: multi-line calls, magic trailing
# commas, parenthesised right-hand sides, `for (k, s)` written `for k, s`.
FLOW_FORMATTED = """\
# pypto.program: Flow
import pypto.language as pl


@pl.program
class Flow:
    @pl.function(type=pl.FunctionType.InCore)
    def body(
        self,
        n: pl.Scalar[pl.INDEX],
        x: pl.Tensor[[64, 64], pl.FP32],
        y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        for i, (acc, cnt) in pl.range(
            0,
            64,
            16,
            init_values=(y, 0),
        ):
            t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = (
                pl.tile.load(
                    x,
                    [i, 0],
                    [16, 64],
                    [16, 64],
                    target_memory=pl.Mem.Vec,
                )
            )
            acc__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = (
                pl.tile.store(t, [i, 0], acc)
            )
            acc__rv_v2, cnt__rv_v2 = pl.yield_(
                acc__ssa_v1,
                cnt + 1,
            )
        for k, s in pl.while_(init_values=(0, 1)):
            pl.cond(k < n)
            k__rv_v1, s__rv_v1 = pl.yield_(k + 1, s * 2)
        if n > 0:
            r: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(
                acc__rv_v2
            )
        else:
            r: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(y)
        with pl.scope():
            for b in pl.spmd(4, name_hint="blk"):
                idx: pl.Scalar[pl.INDEX] = (
                    pl.tile.get_block_idx()
                )
            for aiv_id in pl.split_aiv(
                2, mode=pl.SplitMode.UP_DOWN
            ):
                pass
        return r

    @pl.function(
        type=pl.FunctionType.InCore,
        role=pl.Role.SubWorker,
    )
    def helper(
        w: pl.Tensor[[64, 64], pl.FP32],
    ) -> pl.Tensor[[64, 64], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        n: pl.Scalar[pl.INDEX],
        x: pl.Tensor[[64, 64], pl.FP32],
        y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(
            level=pl.Level.CORE_GROUP,
            name_hint="k0",
        ) as tid:
            r: pl.Tensor[[64, 64], pl.FP32] = self.body(
                n,
                x,
                y,
                attrs={
                    "arg_directions": [
                        pl.adir.scalar,
                        pl.adir.input,
                        pl.adir.output,
                    ]
                },
            )
        r2, task = pl.submit(
            self.body, n, x, r, deps=[tid]
        )
        w: pld.DistributedTensor[[64, 64], pl.FP32] = (
            pld.tensor.window(r2, [64, 64])
        )
        pld.tensor.barrier(w)
        return r2
"""


@pytest.fixture(scope="module")
def kernel() -> Function:
    return parse_ok(KERNEL).functions[0]


@pytest.fixture(scope="module")
def flow() -> Program:
    return parse_ok(FLOW)


# ---------------------------------------------------------------------- program / header


def test_program_name_comes_from_the_header() -> None:
    assert parse_ok(KERNEL).name == "Sample"
    # the header wins over the class name; without a header the class name is used
    assert parse_ok(KERNEL.replace("# pypto.program: Sample", "# pypto.program: FromHeader")).name == "FromHeader"
    assert parse_ok(KERNEL.replace("# pypto.program: Sample\n", "")).name == "Sample"


def test_dynamic_dims(kernel: Function) -> None:
    prog = parse_ok(KERNEL)
    assert set(prog.dynamic_dims) == {"M", "N"}
    assert prog.dynamic_dims["M"].line == 4 and prog.dynamic_dims["M"].col == 0
    x = kernel.params[0].type
    assert isinstance(x, TensorType)
    assert isinstance(x.shape[0], Name) and x.shape[0].id == "M"
    assert isinstance(x.shape[1], Const) and x.shape[1].value == 64


def test_program_span_and_source() -> None:
    prog = parse_ok(FLOW)
    assert prog.span.line == 1 and prog.span.end_line >= FLOW.count("\n")
    assert prog.source == FLOW and prog.filename == "sample.py"


# ---------------------------------------------------------------------- spans


def test_function_name_span(flow: Program) -> None:
    main = flow.function("main")
    assert main is not None
    line = (
        FLOW.split("\n").index(
            "    def main(self, n: pl.Scalar[pl.INDEX], x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:"
        )
        + 1
    )
    assert main.name_span == Span(line, 8, line, 12)
    # the function span starts at the def (decorators are above it)
    assert main.span.line == line


def test_function_name_span_after_form_feed_and_cr_lines() -> None:
    # \f is not a line break for Python, \r is: the def-name span must follow Python's numbering
    text = KERNEL.replace("\n\n@pl.program", "\n\x0c\n@pl.program").replace("# pypto.program: Sample\n", "# pypto.program: Sample\r")
    fn = parse_ok(text).functions[0]
    assert fn.name_span == Span(10, 8, 10, 14)


def test_op_call_and_target_spans(kernel: Function) -> None:
    t = kernel.body[2]
    assert isinstance(t, Assign) and t.target.name == "t"
    assert t.target.span == Span(13, 8, 13, 9)
    call = t.value
    assert isinstance(call, OpCall) and call.op == "tile.load"
    c0 = col_of(KERNEL, 13, "pl.tile.load(")
    assert call.name_span == Span(13, c0, 13, c0 + len("pl.tile.load"))
    assert call.span.line == 13 and call.span.col == c0 and call.span.end_col == len(KERNEL.split("\n")[12])
    arg = call.args[0]
    assert isinstance(arg, Name) and arg.id == "x" and arg.span.col == c0 + len("pl.tile.load(")


def test_multiline_spans() -> None:
    fn = parse_ok(FLOW_FORMATTED).function("body")
    assert fn is not None
    load_stmt = next(s for s in walk_stmts(fn.body) if isinstance(s, Assign) and s.target.name == "t")
    lines = FLOW_FORMATTED.split("\n")
    start = lines.index("            t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = (") + 1
    assert load_stmt.target.span.line == start
    call = load_stmt.value
    assert isinstance(call, OpCall)
    assert call.name_span.line == start + 1 and call.span.end_line == start + 7
    assert fn.name_span.line == lines.index("    def body(") + 1


# ---------------------------------------------------------------------- functions


def test_function_kind_level_role_and_attrs(kernel: Function) -> None:
    assert (kernel.kind, kernel.level, kernel.role) == ("AIV", "AIV", "SubWorker")
    assert set(kernel.attrs) == {"split", "dual_aiv_dispatch", "slot_num"}
    split = kernel.attrs["split"]
    assert isinstance(split, EnumRef) and (split.enum, split.member) == ("SplitMode", "UP_DOWN")
    assert isinstance(kernel.attrs["dual_aiv_dispatch"], Const) and kernel.attrs["dual_aiv_dispatch"].value is True
    assert isinstance(kernel.attrs["slot_num"], Const) and kernel.attrs["slot_num"].value == 4


def test_decorator_attrs_keyword_and_auto_scope() -> None:
    text = KERNEL.replace(
        "role=pl.Role.SubWorker)",
        'role=pl.Role.SubWorker, attrs={"legacy": 1}, auto_scope=False)',
    )
    fn = parse_ok(text).functions[0]
    assert {"legacy", "auto_scope", "split"} <= set(fn.attrs)


def test_opaque_function_without_type() -> None:
    text = FLOW.replace("@pl.function(type=pl.FunctionType.InCore)\n    def body", "@pl.function\n    def body")
    body = parse_ok(text).function("body")
    assert body is not None and body.kind == "Opaque" and body.level is None and body.role is None


def test_subworker_without_self(flow: Program) -> None:
    helper = flow.function("helper")
    assert helper is not None
    assert helper.has_self is False and helper.role == "SubWorker" and helper.abstract is True and helper.body == []
    assert [p.name for p in helper.params] == ["w"]
    body = flow.function("body")
    assert body is not None and body.has_self is True and [p.name for p in body.params] == ["n", "x", "y"]


def test_params_directions(kernel: Function) -> None:
    assert [(p.name, p.direction) for p in kernel.params] == [("x", "in"), ("y", "inout"), ("out", "out")]
    assert kernel.params[0].span.line == 10


def test_return_types(kernel: Function) -> None:
    assert len(kernel.returns) == 1 and isinstance(kernel.returns[0], TensorType)
    text = FLOW.replace(
        ") -> pl.Tensor[[64, 64], pl.FP32]:\n        for i", ") -> tuple[pl.Tensor[[64, 64], pl.FP32], pl.Scalar[pl.INDEX]]:\n        for i"
    )
    body = parse_ok(text).function("body")
    assert body is not None
    assert [type(t).__name__ for t in body.returns] == ["TensorType", "ScalarType"]


# ---------------------------------------------------------------------- types


def test_tile_type_memref_memspace_and_view(kernel: Function) -> None:
    t = kernel.body[2]
    assert isinstance(t, Assign)
    tt = t.target.type
    assert isinstance(tt, TileType)
    assert [d.value for d in tt.shape] == [64, 64]  # type: ignore[union-attr]
    assert tt.dtype == "FP32" and tt.memspace == "Vec" and tt.blayout == "row_major"
    assert tt.valid_shape is not None and [d.value for d in tt.valid_shape] == [36, 64]  # type: ignore[union-attr]
    assert tt.memref is not None and tt.memref.base == "mem_vec_0"
    assert isinstance(tt.memref.size, Const) and tt.memref.size.value == 16384


def test_tile_without_view_has_no_valid_shape(kernel: Function) -> None:
    m = kernel.body[3]
    assert isinstance(m, Assign) and isinstance(m.target.type, TileType)
    assert m.target.type.valid_shape is None and m.target.type.memref is None and m.target.type.dtype == "INT32"


def test_tensor_view_layout_dn_and_string_memref(kernel: Function) -> None:
    x, y, out = (p.type for p in kernel.params)
    assert isinstance(x, TensorType) and x.layout == "DN" and x.valid_shape is None
    assert isinstance(y, TensorType) and y.layout is None
    assert isinstance(out, TensorType) and out.memref is not None and out.memref.base == "mem_ddr_0"


def test_memory_space_alias_and_bare_layout() -> None:
    text = KERNEL.replace("pl.Tile[[64, 64], pl.INT32, pl.Mem.Vec]", "pl.Tile[[64, 64], pl.INT32, pl.MemorySpace.Vec]")
    text = text.replace("y: pl.InOut[pl.Tensor[[M, 64], pl.FP32]]", "y: pl.InOut[pl.Tensor[[M, 64], pl.FP32, pl.NZ]]")
    fn = parse_ok(text).functions[0]
    m = fn.body[3]
    assert isinstance(m, Assign) and isinstance(m.target.type, TileType) and m.target.type.memspace == "Vec"
    y = fn.params[1].type
    assert isinstance(y, TensorType) and y.layout == "NZ"


def test_scalar_and_opaque_types(kernel: Function) -> None:
    ptr = kernel.body[1]
    assert isinstance(ptr, Assign) and isinstance(ptr.target.type, OpaqueType) and ptr.target.type.name == "Ptr"
    c = kernel.body[4]
    assert isinstance(c, Assign) and isinstance(c.target.type, ScalarType) and c.target.type.dtype == "INT32"


def test_distributed_tensor(flow: Program) -> None:
    main = flow.function("main")
    assert main is not None
    w = next(s for s in main.body if isinstance(s, Assign) and s.target.name == "w")
    assert isinstance(w.target.type, TensorType) and w.target.type.distributed is True


# ---------------------------------------------------------------------- expressions


def test_typed_and_negative_constants(kernel: Function) -> None:
    c, h = kernel.body[4], kernel.body[5]
    assert isinstance(c, Assign) and c.value == Const(-3, c.value.span, "INT32")
    assert isinstance(h, Assign) and isinstance(h.value, Const) and h.value.value == 0.5 and h.value.dtype == "FP16"
    # a bare literal carries no dtype (INDEX / FP32 by the printer's defaults)
    k = kernel.body[6]
    assert isinstance(k, Assign)
    seventeen = k.value.args[1]  # type: ignore[union-attr]
    assert seventeen == Const(17, seventeen.span, None)


def test_scalar_intrinsics_and_typed_constant_trees(kernel: Function) -> None:
    k = kernel.body[6]
    assert isinstance(k, Assign)
    e = k.value
    assert type(e).__name__ == "Intrinsic" and e.name == "min"  # type: ignore[union-attr]
    diff = e.args[0]  # type: ignore[union-attr]
    assert isinstance(diff, BinOp) and diff.op == "-"
    assert isinstance(diff.left, Const) and diff.left.value == 33 and diff.left.dtype == "INDEX"
    assert isinstance(diff.right, BinOp) and diff.right.op == "*"


def test_keyword_op_names_lose_the_underscore(kernel: Function) -> None:
    m = kernel.body[3]
    assert isinstance(m, Assign) and isinstance(m.value, OpCall)
    assert m.value.op == "tile.and" and m.value.printed == "pl.tile.and_"
    for printed, ir in (("or_", "or"), ("not_", "not")):
        fn = parse_ok(KERNEL.replace("pl.tile.and_(t, t)", f"pl.tile.{printed}(t, t)")).functions[0]
        call = fn.body[3].value  # type: ignore[union-attr]
        assert isinstance(call, OpCall) and call.op == f"tile.{ir}" and call.printed == f"pl.tile.{printed}"


def test_op_kwargs_and_dtype_refs(kernel: Function) -> None:
    load_call = kernel.body[2].value  # type: ignore[union-attr]
    assert isinstance(load_call, OpCall)
    tm = load_call.kwargs["target_memory"]
    assert isinstance(tm, EnumRef) and (tm.enum, tm.member) == ("Mem", "Vec")
    assert all(isinstance(a, ListExpr) for a in load_call.args[1:])
    text = KERNEL.replace("pl.tile.and_(t, t)", "pl.tile.cast(t, target_type=pl.INT32, mode='rint')")
    cast = parse_ok(text).functions[0].body[3].value  # type: ignore[union-attr]
    assert isinstance(cast, OpCall) and isinstance(cast.kwargs["target_type"], DTypeRef) and cast.kwargs["target_type"].name == "INT32"
    assert cast.kwargs["mode"] == Const("rint", cast.kwargs["mode"].span)


def test_pld_roots(flow: Program) -> None:
    main = flow.function("main")
    assert main is not None
    window = next(s for s in main.body if isinstance(s, Assign) and s.target.name == "w").value
    assert isinstance(window, OpCall) and window.op == "pld.tensor.window" and window.printed == "pld.tensor.window"
    barrier = next(s for s in main.body if isinstance(s, ExprStmt)).value
    assert isinstance(barrier, OpCall) and barrier.op == "pld.tensor.barrier"


def test_bare_xor_word() -> None:
    text = FLOW.replace("pl.cond(k < n)", "pl.cond(k < n and s xor k)")
    body = parse_ok(text).function("body")
    assert body is not None
    w = next(s for s in walk_stmts(body.body) if isinstance(s, While))
    assert isinstance(w.cond, BinOp) and w.cond.op == "and"
    x = w.cond.right
    assert isinstance(x, BinOp) and x.op == "^"
    line = text.split("\n").index("            pl.cond(k < n and s xor k)") + 1
    # columns are the original ones: the rewrite keeps every character in place
    assert isinstance(x.left, Name) and x.left.span == Span(line, col_of(text, line, "s xor"), line, col_of(text, line, "s xor") + 1)
    assert isinstance(x.right, Name) and x.right.span.col == col_of(text, line, "xor k") + 4
    assert not [d for d in check_program(parse_ok(text)) if d.severity == D.ERROR]


def test_xor_inside_strings_and_names_is_left_alone() -> None:
    text = KERNEL.replace('"slot_num": 4', '"slot_num": 4, "note": "a xor b"').replace("h: pl.Scalar", "xor_v: pl.Scalar")
    fn = parse_ok(text).functions[0]
    assert isinstance(fn.attrs["note"], Const) and fn.attrs["note"].value == "a xor b"


# ---------------------------------------------------------------------- statements


def test_for_iter_args_init_values_and_yield(flow: Program) -> None:
    body = flow.function("body")
    assert body is not None
    loop = body.body[0]
    assert isinstance(loop, For) and loop.kind == "range"
    assert loop.var is not None and loop.var.name == "i"
    assert [t.name for t in loop.iter_args] == ["acc", "cnt"]
    assert [type(v).__name__ for v in loop.init_values] == ["Name", "Const"]
    assert isinstance(loop.start, Const) and loop.start.value == 0
    assert isinstance(loop.stop, Const) and loop.stop.value == 64
    assert isinstance(loop.step, Const) and loop.step.value == 16
    y = trailing_yield(loop.body)
    assert isinstance(y, Yield) and [t.name for t in y.targets] == ["acc__rv_v2", "cnt__rv_v2"] and len(y.values) == 2
    assert loop.header_span.line == loop.span.line == 8 and loop.span.end_line == 11


def test_single_iter_arg_and_defaults() -> None:
    text = FLOW.replace("for i, (acc, cnt) in pl.range(0, 64, 16, init_values=(y, 0)):", "for i, (acc,) in pl.range(64, init_values=(y,)):")
    text = text.replace(
        "acc__rv_v2, cnt__rv_v2 = pl.yield_(acc__ssa_v1, cnt + 1)", "acc__rv_v2: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(acc__ssa_v1)"
    )
    loop = parse_ok(text).function("body").body[0]  # type: ignore[union-attr]
    assert isinstance(loop, For) and loop.start is None and loop.step is None
    assert isinstance(loop.stop, Const) and loop.stop.value == 64
    y = trailing_yield(loop.body)
    assert y is not None and len(y.targets) == 1 and isinstance(y.targets[0].type, TensorType)


def test_ssa_while_with_cond(flow: Program) -> None:
    body = flow.function("body")
    assert body is not None
    w = body.body[1]
    assert isinstance(w, While) and w.ssa is True
    assert [t.name for t in w.iter_args] == ["k", "s"]
    assert [v.value for v in w.init_values] == [0, 1]  # type: ignore[union-attr]
    assert isinstance(w.cond, BinOp) and w.cond.op == "<"
    assert w.cond_span.line == w.span.line + 1
    # pl.cond is consumed: the body starts after it
    assert isinstance(w.body[0], Yield) and [t.name for t in w.body[0].targets] == ["k__rv_v1", "s__rv_v1"]


def test_plain_while_is_not_ssa() -> None:
    text = FLOW.replace(
        "        for (k, s) in pl.while_(init_values=(0, 1)):\n            pl.cond(k < n)\n            k__rv_v1, s__rv_v1 = pl.yield_(k + 1, s * 2)\n",
        "        while n > 0:\n            break\n",
    )
    w = parse_ok(text).function("body").body[1]  # type: ignore[union-attr]
    assert isinstance(w, While) and w.ssa is False and w.iter_args == []


def test_if_else_yields(flow: Program) -> None:
    body = flow.function("body")
    assert body is not None
    node = body.body[2]
    assert isinstance(node, If)
    assert isinstance(node.cond, BinOp) and node.cond.op == ">"
    a, b = trailing_yield(node.then), trailing_yield(node.orelse)
    assert a is not None and b is not None
    assert [t.name for t in a.targets] == [t.name for t in b.targets] == ["r"]
    assert isinstance(a.targets[0].type, TensorType)


def test_scopes_spmd_and_split_aiv(flow: Program) -> None:
    body = flow.function("body")
    assert body is not None
    scope = body.body[3]
    assert isinstance(scope, Scope) and scope.kind == "scope" and scope.as_name is None
    spmd, split = scope.body
    assert isinstance(spmd, For) and spmd.kind == "spmd" and spmd.var is not None and spmd.var.name == "b"
    assert isinstance(spmd.stop, Const) and spmd.stop.value == 4
    assert spmd.kwargs["name_hint"] == Const("blk", spmd.kwargs["name_hint"].span)
    assert isinstance(split, For) and split.kind == "split_aiv" and split.var is not None and split.var.name == "aiv_id"
    mode = split.kwargs["mode"]
    assert isinstance(mode, EnumRef) and mode.member == "UP_DOWN"
    main = flow.function("main")
    assert main is not None
    at = main.body[0]
    assert isinstance(at, Scope) and at.kind == "at" and at.as_name is not None and at.as_name.name == "tid"
    assert isinstance(at.kwargs["level"], EnumRef) and at.kwargs["level"].member == "CORE_GROUP"


def test_with_spmd_and_cluster_scopes() -> None:
    text = FLOW.replace("with pl.scope():", 'with pl.cluster(name_hint="c"):').replace(
        '            for b in pl.spmd(4, name_hint="blk"):', "            with pl.spmd(4, sync_start=True) as sp:"
    )
    body = parse_ok(text).function("body")
    assert body is not None
    cluster = body.body[3]
    assert isinstance(cluster, Scope) and cluster.kind == "cluster"
    spmd = cluster.body[0]
    assert isinstance(spmd, Scope) and spmd.kind == "spmd" and spmd.as_name is not None
    assert isinstance(spmd.args[0], Const) and spmd.args[0].value == 4


def test_self_call_with_attrs(flow: Program) -> None:
    main = flow.function("main")
    assert main is not None
    call = main.body[0].body[0].value  # type: ignore[union-attr]
    assert isinstance(call, FuncCall) and call.func == "body" and call.submit is None
    assert [a.id for a in call.args] == ["n", "x", "y"]  # type: ignore[union-attr]
    attrs = call.kwargs["attrs"]
    assert isinstance(attrs, DictExpr) and attrs.keys[0] == Const("arg_directions", attrs.keys[0].span)
    dirs = attrs.values[0]
    assert isinstance(dirs, ListExpr) and [e.member for e in dirs.items] == ["scalar", "input", "output"]  # type: ignore[union-attr]
    line = FLOW.split("\n").index(next(ln for ln in FLOW.split("\n") if "self.body(n, x, y" in ln)) + 1
    assert call.name_span == Span(line, col_of(FLOW, line, "self.body"), line, col_of(FLOW, line, "self.body") + len("self.body"))


def test_submit(flow: Program) -> None:
    main = flow.function("main")
    assert main is not None
    unpack = main.body[1]
    assert isinstance(unpack, Unpack) and [t.name for t in unpack.targets] == ["r2", "task"]
    call = unpack.value
    assert isinstance(call, FuncCall) and call.submit == "submit" and call.func == "body"
    assert [a.id for a in call.args] == ["n", "x", "r"]  # type: ignore[union-attr]
    assert "deps" in call.kwargs
    spmd = parse_ok(FLOW.replace("pl.submit(self.body, n, x, r, deps=[tid])", "pl.spmd_submit(self.body, n, x, r, core_num=4)"))
    call2 = spmd.function("main").body[1].value  # type: ignore[union-attr]
    assert isinstance(call2, FuncCall) and call2.submit == "spmd_submit" and isinstance(call2.kwargs["core_num"], Const)


def test_flow_checks_clean(flow: Program) -> None:
    errors = [d for d in check_program(flow) if d.severity == D.ERROR]
    assert not errors, [(d.span.line, d.code, d.message) for d in errors]


def test_a_read_above_the_assignment_is_an_error_on_its_line() -> None:
    """The loop body's load moved below the store that reads its tile: the store's read is an
    error there, naming the load's line (loop variables, iter_args and a while's condition stay
    clean: test_flow_checks_clean)."""
    load = "            t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [i, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)\n"
    store = "            acc__ssa_v1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(t, [i, 0], acc)\n"
    assert load + store in FLOW
    errors = [d for d in check_program(parse_ok(FLOW.replace(load + store, store + load))) if d.severity == D.ERROR]
    assert [(d.code, d.span.line, d.span.col) for d in errors] == [("used-before-assigned", 9, store.index("(t,") + 1)]
    assert "on line 10" in errors[0].message


def test_return_values(flow: Program) -> None:
    body = flow.function("body")
    assert body is not None
    ret = body.body[-1]
    assert isinstance(ret, Return) and [v.id for v in ret.values] == ["r"]  # type: ignore[union-attr]


# ---------------------------------------------------------------------- formatting does not matter


SPAN_FIELDS = {"span", "name_span", "header_span", "cond_span", "first_line"}


def structure(obj: Any) -> Any:
    """The model without positions (and without the raw source)."""
    if isinstance(obj, Span):
        return None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (
            type(obj).__name__,
            {
                f.name: structure(getattr(obj, f.name))
                for f in dataclasses.fields(obj)
                if f.name not in SPAN_FIELDS | {"source", "filename"}
            },
        )
    if isinstance(obj, list | tuple):
        return [structure(x) for x in obj]
    if isinstance(obj, dict):
        return {k: structure(v) for k, v in obj.items()}
    return obj


def test_ruff_formatted_and_raw_dumps_parse_to_the_same_model() -> None:
    raw, formatted = parse_ok(FLOW), parse_ok(FLOW_FORMATTED)
    assert structure(raw) == structure(formatted)
    # and the positions differ, so the comparison above is not vacuous
    assert raw.function("main").name_span != formatted.function("main").name_span  # type: ignore[union-attr]


def _ruff() -> str | None:
    exe = Path(sys.executable).with_name("ruff")
    return str(exe) if exe.exists() else shutil.which("ruff")


def _ruff_format(text: str, line_length: int = 60) -> str:
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed")
    proc = subprocess.run(
        [ruff, "format", "--isolated", "--line-length", str(line_length), "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_real_ruff_format_keeps_the_model() -> None:
    formatted = _ruff_format(KERNEL)
    assert formatted != KERNEL and ",\n" in formatted
    assert structure(parse_ok(KERNEL)) == structure(parse_ok(formatted))


@pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"real dumps not available: {FIXTURES} is absent")
def test_real_dump_ruff_formatted_keeps_the_model() -> None:
    for rel in (
        "ops/cc_mixed_updown_odd_m33/passes_dump/49_after_MaterializeValidShapeSymbols.py",
        "cross_core_split_aiv_qk_pv/passes_dump/04_after_ConvertToSSA.py",
    ):
        path = FIXTURES / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        formatted = _ruff_format(text)
        assert formatted != text
        assert structure(parse_ok(text)) == structure(parse_ok(formatted)), rel


# ---------------------------------------------------------------------- entry points


def test_loads_and_load(tmp_path: Path) -> None:
    prog = loads(FLOW, "flow.py")
    assert [f.name for f in prog.functions] == ["body", "helper", "main"]
    with pytest.raises(D.IRSyntaxError) as exc:
        loads(FLOW.replace("pl.cond(k < n)", "pl.cond(k < n"), "flow.py")
    assert exc.value.line == 13 and "flow.py:13:" in str(exc.value)
    with pytest.raises(D.IRError):
        loads(FLOW.replace("pl.FP32], y: pl.Out", "pl.FP64], y: pl.Out", 1))
    p = tmp_path / "flow.py"
    p.write_text(FLOW, encoding="utf-8")
    assert load(p).name == "Flow"


def test_parse_bytes_accepts_a_utf8_signature_and_crlf() -> None:
    data = b"\xef\xbb\xbf" + FLOW.replace("\n", "\r\n").encode("utf-8")
    res = parse_bytes(data, "bom.py")
    assert res.program is not None and not res.errors, res.diagnostics
    assert structure(res.program) == structure(parse_ok(FLOW))
    assert res.program.function("main").name_span == parse_ok(FLOW).function("main").name_span  # type: ignore[union-attr]


def test_parse_errors_keep_going() -> None:
    # two unrelated problems in one file: both reported
    text = FLOW.replace("pl.tile.get_block_idx()", "pl.tile.get_block_idx(lambda: 0)").replace('name_hint="k0"', 'name_hint=f"k{0}"')
    lines = text.split("\n")
    want = [lines.index(next(ln for ln in lines if needle in ln)) + 1 for needle in ("get_block_idx(lambda", 'name_hint=f"k')]
    res = parse_text(text)
    assert res.program is not None
    assert sorted(d.span.line for d in res.errors) == sorted(want)


# ---------------------------------------------------------------------- real dumps


def _verdicts() -> dict[tuple[str, str], str]:
    path = FIXTURES / "verdicts.json"
    if not path.is_file():
        return {}
    out = {}
    for case in json.loads(path.read_text(encoding="utf-8")).values():
        for fname, v in case.get("files", {}).items():
            out[(case["dir"], fname)] = v.get("status", "")
    return out


CASES = sorted(str(p.parent.relative_to(FIXTURES)) for p in FIXTURES.glob("**/passes_dump")) if FIXTURES.is_dir() else []
_PARSED: dict[str, list[tuple[int, str, str]]] = {}  # content hash -> error diagnostics (many passes print the same text)


@pytest.mark.conformance
@pytest.mark.skipif(not CASES, reason=f"real dumps not available: {FIXTURES} is absent")
@pytest.mark.parametrize("case", CASES or ["<none>"])
def test_real_dumps_parse_without_errors(case: str) -> None:
    verdicts = _verdicts()
    if not verdicts:
        pytest.skip("verdicts.json is absent: cannot tell which dumps are expected to be broken")
    files = sorted((FIXTURES / case / "passes_dump").glob("*.py"))
    assert files
    bad = []
    for f in files:
        data = f.read_bytes()
        key = hashlib.blake2b(data, digest_size=16).hexdigest()
        if key not in _PARSED:
            res = parse_bytes(data, str(f))  # every file, broken ones included, must parse without raising
            _PARSED[key] = [(d.span.line, d.code, d.message) for d in res.errors]
            assert res.program is not None or _PARSED[key]
        # a file whose verdict is `error` may legitimately have a parse error; no other may
        if _PARSED[key] and verdicts.get((case, f.name)) != "error":
            bad.append((f.name, _PARSED[key][:3]))
    assert not bad, bad
