"""Tests for the navigation logic: pypto_lsp.ir.symbols (index, definition, references, outline) and
pypto_lsp.server.hover_text (hover)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pypto_lsp.ir import model as M
from pypto_lsp.ir.model import Span
from pypto_lsp.ir.name_docs import dtype_doc
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.ir.symbols import SymbolIndex, SymbolInfo, definition, document_symbols, references
from pypto_lsp.server.hover_text import hover_text, op_signature

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"

# A Group/AIC/AIV triple, an orchestrator with a loop carrying an iter_arg through an
# if/else yield, a pl.at scope, a task launch, a pre-SSA function and an SSA while loop.
SAMPLE = """\
# pypto.program: Demo
import pypto.language as pl

M = pl.dynamic("M")

@pl.program
class Demo:
    @pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)
    def mm_aic(a: pl.Tensor[[16, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16]):
        ta: pl.Tile[[16, 64], pl.BF16, pl.Mem.Mat] = pl.tile.load(a, [0, 0], [16, 64], [16, 64], target_memory=pl.Mem.Mat)
        tb: pl.Tile[[64, 64], pl.BF16, pl.Mem.Mat] = pl.tile.load(b, [0, 0], [64, 64], [64, 64], target_memory=pl.Mem.Mat)
        acc: pl.Tile[[16, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(ta, tb)
        pl.tile.tpush_to_aiv(acc, split=0)
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def mm_aiv(out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        pl.func_attr({"split": pl.SplitMode.UP_DOWN, "dual_aiv_dispatch": True})
        buf: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name="buf", peer_func="mm_aic")
        mem_vec_0: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 4096)
        t: pl.Tile[[8, 64], pl.FP32, pl.MemRef(mem_vec_0, 0, 2048), pl.Mem.Vec, pl.TileView(valid_shape=[8, 32])] = pl.tile.tpop_from_aic(split=1)
        out_1: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(t, [0, 0], out)
        return out_1
    @pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)
    def mm(a: pl.Tensor[[16, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        self.mm_aic(a, b)
        r: pl.Tensor[[16, 64], pl.FP32] = self.mm_aiv(out)
        return r
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, x: pl.Tensor[[M, 64], pl.FP32], a: pl.Tensor[[16, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16], y: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        acc0: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.create([16, 64], dtype=pl.FP32)
        for i, (acc,) in pl.range(8, init_values=(acc0,)):
            if i == 0:
                v: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.muls(acc, 2.0)
                w = pl.yield_(v)
            else:
                w = pl.yield_(acc)
            acc_next: pl.Tensor[[16, 64], pl.FP32] = pl.yield_(w)
        with pl.at(level=pl.Level.CORE_GROUP):
            z: pl.Tensor[[16, 64], pl.FP32] = self.mm(a, b, acc_next)
        res, tid = pl.submit(self.mm_aiv, y)
        q: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.frobnicate(z)
        return z
    @pl.function
    def pre_ssa(x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
        s: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.exp(x)
        for k in pl.range(2):
            s: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.add(s, x)
        return s
    @pl.function
    def count(n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:
        i0: pl.Scalar[pl.INDEX] = 0
        for (i,) in pl.while_(init_values=(i0,)):
            pl.cond(i < n)
            i1: pl.Scalar[pl.INDEX] = i + 1
            i_out: pl.Scalar[pl.INDEX] = pl.yield_(i1)
        return i_out
"""
LINES = SAMPLE.split("\n")


def ln(fragment: str) -> int:
    """1-based number of the only SAMPLE line containing ``fragment``."""
    hits = [i + 1 for i, text in enumerate(LINES) if fragment in text]
    assert len(hits) == 1, (fragment, hits)
    return hits[0]


def tok(line: int, token: str, nth: int = 0) -> Span:
    """Exact span of the nth whole-word ``token`` on 1-based ``line``."""
    found = list(re.finditer(rf"(?<![\w.]){re.escape(token)}(?!\w)", LINES[line - 1]))
    m = found[nth]
    return Span(line, m.start(), line, m.end())


def lsp(span: Span, shift: int = 0) -> tuple[int, int]:
    """LSP position (0-based line, character) at a span's start (+ shift characters)."""
    return span.line - 1, span.col + shift


@pytest.fixture(scope="module")
def prog() -> M.Program:
    res = parse_text(SAMPLE, "demo.py")
    assert res.diagnostics == []
    assert res.program is not None
    return res.program


@pytest.fixture(scope="module")
def idx(prog: M.Program) -> SymbolIndex:
    return SymbolIndex.build(prog)


def hover(prog: M.Program, idx: SymbolIndex, span: Span, shift: int = 0, stats: dict | None = None) -> str:
    text = hover_text(prog, *lsp(span, shift), stats=stats, index=idx)
    assert text is not None, span
    return text


# --------------------------------------------------------------------------- definition


def test_definition_of_iter_arg_use(prog: M.Program, idx: SymbolIndex) -> None:
    use = tok(ln("pl.tensor.muls(acc, 2.0)"), "acc")
    assert definition(prog, *lsp(use), index=idx) == [Span(30, 16, 30, 19)]
    assert tok(ln("for i, (acc,)"), "acc") == Span(30, 16, 30, 19)
    # the same answer without a prebuilt index, and from the definition itself
    assert definition(prog, *lsp(use)) == [Span(30, 16, 30, 19)]
    assert definition(prog, 29, 17, index=idx) == [Span(30, 16, 30, 19)]


def test_definition_of_if_result_lists_both_branches(prog: M.Program, idx: SymbolIndex) -> None:
    use = tok(ln("acc_next: pl.Tensor"), "w")
    then_def = tok(ln("w = pl.yield_(v)"), "w")
    else_def = tok(ln("w = pl.yield_(acc)"), "w")
    assert definition(prog, *lsp(use), index=idx) == [then_def, else_def]
    assert then_def == Span(33, 16, 33, 17)


def test_definition_of_reassigned_pre_ssa_name(prog: M.Program, idx: SymbolIndex) -> None:
    use = tok(ln("return s"), "s")
    first = tok(ln("pl.tensor.exp(x)"), "s")
    second = tok(ln("pl.tensor.add(s, x)"), "s")
    assert definition(prog, *lsp(use), index=idx) == [first, second]


def test_definition_of_parameter_is_per_function(prog: M.Program, idx: SymbolIndex) -> None:
    # `a` in mm_aic's body resolves to mm_aic's parameter, `a` in main's to main's
    in_aic = tok(ln("pl.tile.load(a,"), "a")
    assert definition(prog, *lsp(in_aic), index=idx) == [Span(9, 15, 9, 16)]
    in_main = tok(ln("self.mm(a, b, acc_next)"), "a")
    main_line = ln("def main(")
    assert definition(prog, *lsp(in_main), index=idx) == [tok(main_line, "a")]
    out_use = tok(ln("pl.tile.store(t, [0, 0], out)"), "out")
    assert definition(prog, *lsp(out_use), index=idx) == [tok(ln("def mm_aiv("), "out")]


def test_definition_of_loop_var_while_iter_arg_and_dynamic_dim(prog: M.Program, idx: SymbolIndex) -> None:
    assert definition(prog, *lsp(tok(ln("if i == 0"), "i")), index=idx) == [tok(ln("for i, (acc,)"), "i")]
    cond = ln("pl.cond(i < n)")
    assert definition(prog, *lsp(tok(cond, "i")), index=idx) == [tok(ln("for (i,) in pl.while_"), "i")]
    assert definition(prog, *lsp(tok(cond, "n")), index=idx) == [tok(ln("def count("), "n")]
    assert definition(prog, *lsp(tok(ln("return i_out"), "i_out")), index=idx) == [tok(ln("i_out: pl.Scalar"), "i_out")]
    # a pl.dynamic dim used in a parameter type -> the module-level declaration
    m_use = tok(ln("def main("), "M")
    assert definition(prog, *lsp(m_use), index=idx) == [Span(4, 0, 4, 1)]


def test_definition_of_functions(prog: M.Program, idx: SymbolIndex) -> None:
    aiv_def = Span(15, 8, 15, 14)
    assert tok(ln("def mm_aiv("), "mm_aiv") == aiv_def
    call = ln("r: pl.Tensor[[16, 64], pl.FP32] = self.mm_aiv(out)")
    assert definition(prog, *lsp(tok(call, "self.mm_aiv")), index=idx) == [aiv_def]  # on "self"
    assert definition(prog, *lsp(tok(call, "self.mm_aiv"), 6), index=idx) == [aiv_def]  # on "mm_aiv"
    submit = ln("pl.submit(self.mm_aiv, y)")
    assert definition(prog, *lsp(tok(submit, "self.mm_aiv"), 5), index=idx) == [aiv_def]
    assert definition(prog, *lsp(aiv_def), index=idx) == [aiv_def]
    # peer_func="mm_aic" names a function too
    peer = ln('peer_func="mm_aic"')
    col = LINES[peer - 1].index('"mm_aic"') + 1
    assert definition(prog, peer - 1, col, index=idx) == [tok(ln("def mm_aic("), "mm_aic")]


def test_definition_of_memref_base(prog: M.Program, idx: SymbolIndex) -> None:
    use = tok(ln("pl.MemRef(mem_vec_0"), "mem_vec_0")
    assert definition(prog, *lsp(use), index=idx) == [tok(ln("mem_vec_0: pl.Ptr"), "mem_vec_0")]


def test_definition_nothing_on_blank_keyword_or_op(prog: M.Program, idx: SymbolIndex) -> None:
    assert definition(prog, 2, 0, index=idx) == []  # blank line
    assert definition(prog, ln("return r") - 1, 8, index=idx) == []  # "return" keyword
    assert definition(prog, *lsp(tok(ln("pl.tile.matmul(ta, tb)"), "pl.tile.matmul")), index=idx) == []
    assert definition(prog, 999, 0, index=idx) == []


# --------------------------------------------------------------------------- references


def test_references_of_variable(prog: M.Program, idx: SymbolIndex) -> None:
    use = tok(ln("w = pl.yield_(acc)"), "acc")
    want_uses = [tok(ln("pl.tensor.muls(acc, 2.0)"), "acc"), use]
    decl = tok(ln("for i, (acc,)"), "acc")
    assert references(prog, *lsp(use), index=idx) == [decl, *want_uses]
    assert references(prog, *lsp(decl), include_declaration=False, index=idx) == want_uses


def test_references_stay_in_the_function(prog: M.Program, idx: SymbolIndex) -> None:
    refs = references(prog, *lsp(tok(ln("self.mm_aic(a, b)"), "b")), index=idx)
    group_line = ln("def mm(")
    assert refs == [tok(group_line, "b"), tok(ln("self.mm_aic(a, b)"), "b")]


def test_references_of_function_across_program(prog: M.Program, idx: SymbolIndex) -> None:
    aiv_def = Span(15, 8, 15, 14)
    call = tok(ln("= self.mm_aiv(out)"), "self.mm_aiv")
    submit = tok(ln("pl.submit(self.mm_aiv, y)"), "self.mm_aiv")
    name_only = [Span(call.line, call.col + 5, call.line, call.end_col), Span(submit.line, submit.col + 5, submit.line, submit.end_col)]
    assert references(prog, *lsp(aiv_def), index=idx) == [aiv_def, *name_only]
    assert references(prog, *lsp(call), include_declaration=False, index=idx) == name_only
    # mm_aic: its def, the peer_func string (inside the quotes) and the Group's call
    peer = ln('peer_func="mm_aic"')
    pcol = LINES[peer - 1].index('"mm_aic"') + 1
    aic_call = tok(ln("self.mm_aic(a, b)"), "self.mm_aic")
    assert references(prog, 8, 10, index=idx) == [
        Span(9, 8, 9, 14),
        Span(peer, pcol, peer, pcol + 6),
        Span(aic_call.line, aic_call.col + 5, aic_call.line, aic_call.end_col),
    ]


def test_references_of_dynamic_dim_memref_base_and_op(prog: M.Program, idx: SymbolIndex) -> None:
    m_use = tok(ln("def main("), "M")
    assert references(prog, *lsp(m_use), index=idx) == [Span(4, 0, 4, 1), m_use]
    base = tok(ln("mem_vec_0: pl.Ptr"), "mem_vec_0")
    assert references(prog, *lsp(base), index=idx) == [base, tok(ln("pl.MemRef(mem_vec_0"), "mem_vec_0")]
    load = tok(ln("ta: pl.Tile"), "pl.tile.load")
    assert references(prog, *lsp(load), index=idx) == [load, tok(ln("tb: pl.Tile"), "pl.tile.load")]


# --------------------------------------------------------------------------- hover


def test_hover_parameters_show_direction_and_type(prog: M.Program, idx: SymbolIndex) -> None:
    text = hover(prog, idx, tok(ln("pl.tile.store(t, [0, 0], out)"), "out"))
    assert text.startswith("**`out`**: parameter (out) of `mm_aiv`")
    assert "`pl.Tensor[[16, 64], pl.FP32]`" in text
    assert "- shape `[16, 64]`" in text
    assert "- dtype `FP32`: 32-bit IEEE-754 single-precision float" in text
    assert "- memory `DDR`" in text
    y = hover(prog, idx, tok(ln("pl.submit(self.mm_aiv, y)"), "y"))
    assert y.startswith("**`y`**: parameter (inout) of `main`")
    x = hover(prog, idx, tok(ln("def main("), "x"))
    assert "`pl.Tensor[[M, 64], pl.FP32]`" in x
    assert "- shape `[M, 64]` (dynamic: `M`)" in x


def test_hover_tile_shows_memory_valid_shape_and_memref(prog: M.Program, idx: SymbolIndex) -> None:
    text = hover(prog, idx, tok(ln("pl.tile.store(t,"), "t"))
    assert text.startswith("**`t`**: variable")
    assert "`pl.Tile[[8, 64], pl.FP32, pl.Mem.Vec]`" in text
    assert "- memory `Vec`: vector core's Unified Buffer (UB)" in text
    assert "- valid_shape `[8, 32]`" in text
    assert "- memref base `mem_vec_0`, offset 0, size 2048 B" in text
    assert f"defined at line {ln('t: pl.Tile')}" in text
    assert "last run" not in text


def test_hover_stats_line(prog: M.Program, idx: SymbolIndex) -> None:
    stats = {"t": {"shape": [8, 64], "dtype": "float32", "min": -1.5, "max": 2.25, "mean": 0.123456789, "nan": 0, "inf": 0}}
    text = hover(prog, idx, tok(ln("pl.tile.store(t,"), "t"), stats=stats)
    assert text.endswith("**last run**: shape `[8, 64]` · float32 · min -1.5 · max 2.25 · mean 0.123457 · NaN 0 · Inf 0")
    stats["t"]["nan"] = 3
    text = hover(prog, idx, tok(ln("pl.tile.store(t,"), "t"), stats=stats)
    assert "⚠ NaN 3 · Inf 0" in text
    # stats of other names do not leak in
    assert "last run" not in hover(prog, idx, tok(ln("return out_1"), "out_1"), stats=stats)


def test_hover_iter_arg_loop_var_and_yield_targets(prog: M.Program, idx: SymbolIndex) -> None:
    acc = hover(prog, idx, tok(ln("w = pl.yield_(acc)"), "acc"))
    assert acc.startswith("**`acc`**: iter_arg #0 of `for i` (line 30)")
    assert "`pl.Tensor[[16, 64], pl.FP32]` *(type of the loop's return var `acc_next`)*" in acc
    i = hover(prog, idx, tok(ln("if i == 0"), "i"))
    assert i.startswith("**`i`**: loop variable")
    assert "`pl.Scalar[pl.INDEX]` *(loop counter)*" in i
    w = hover(prog, idx, tok(ln("acc_next: pl.Tensor"), "w"))
    assert w.startswith("**`w`**: result of a loop/if (`pl.yield_` target)")
    assert "`pl.Tensor[[16, 64], pl.FP32]` *(type of the yielded value)*" in w
    assert "defined 2× at lines 33, 35" in w
    wi = hover(prog, idx, tok(ln("for (i,) in pl.while_"), "i"))
    assert wi.startswith("**`i`**: iter_arg #0 of `pl.while_`")
    assert "`pl.Scalar[pl.INDEX]` *(type of the loop's return var `i_out`)*" in wi


def test_hover_task_launch_results(prog: M.Program, idx: SymbolIndex) -> None:
    line = ln("res, tid = pl.submit")
    res = hover(prog, idx, tok(line, "res"))
    assert "`pl.Tensor[[16, 64], pl.FP32]` *(return type of `mm_aiv`)*" in res
    tid = hover(prog, idx, tok(line, "tid"))
    assert "`pl.Scalar[pl.TASK_ID]` *(task id of the launch)*" in tid


def test_hover_op_catalogue_row(prog: M.Program, idx: SymbolIndex) -> None:
    text = hover(prog, idx, tok(ln("ta: pl.Tile"), "pl.tile.load"), shift=8)
    assert text.split("\n") == [
        # the catalogue row makes valid_shape required (printed dumps always pass it)
        "**`tile.load(tensor: tensor, offsets: tuple, shapes: tuple, valid_shape: tuple) {target_memory: memory_space, clamp: bool}`**",
        "",
        "copy a tensor window into a new tile; outside valid_shape the tile is zero",
        "",
        "result: shape from the positional 'shapes' arg (arg 2); dtype of arg 0",
        "",
        "executor: supported",
    ]
    noop = hover(prog, idx, tok(ln("import_peer_buffer"), "pl.system.import_peer_buffer"))
    assert "executor: no-op" in noop
    assert "result: given by the assignment's annotation" in noop
    unknown = hover(prog, idx, tok(ln("frobnicate"), "pl.tensor.frobnicate"))
    assert unknown == "**`pl.tensor.frobnicate`**: unknown op (not in the PyPTO op catalogue)"
    assert op_signature("tile.matmul") == "tile.matmul(lhs: tile, rhs: tile)"
    # the operands' kinds, as PyPTO's registration of the op says them
    assert op_signature("pl.tile.store") == "tile.store(tile: tile, offsets: tuple, output_tensor: tensor, shapes?: tuple) {atomic: int}"
    assert op_signature("tile.adds") == "tile.adds(lhs: tile, rhs: scalar)"
    assert op_signature("pld.system.rank") == "pld.system.rank(ctx: handle)"
    assert op_signature("tensor.maximum") == "tensor.maximum(lhs: tensor, rhs: tensor|scalar)"
    assert op_signature("tile.reinterpret_view") == "tile.reinterpret_view(data: tile) {dtype: dtype, shape}"  # shape: no kind said
    assert op_signature("nope.nope") is None


def test_hover_unsupported_op() -> None:
    # every op PyPTO registers runs (issue 31) but its registry self-test ops (test.*)
    text = "@pl.function\ndef f(a: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec]):\n    b: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.test.op(a, a)\n"
    res = parse_text(text)
    assert res.program is not None
    out = hover_text(res.program, 2, 50)
    assert out is not None and "executor: not supported by pypto-lsp yet" in out


def test_hover_function_def_and_call(prog: M.Program, idx: SymbolIndex) -> None:
    text = hover(prog, idx, Span(15, 8, 15, 14))
    assert text.split("\n") == [
        "**`mm_aiv`**: AIV function · level AIV · role SubWorker",
        "",
        "attrs: `split=pl.SplitMode.UP_DOWN`, `dual_aiv_dispatch=True`",
        "",
        "```python",
        "def mm_aiv(out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]",
        "```",
        "",
        "called 2× from `mm`, `main`",
    ]
    assert hover(prog, idx, tok(ln("= self.mm_aiv(out)"), "self.mm_aiv"), shift=7) == text
    assert hover(prog, idx, tok(ln("= self.mm_aiv(out)"), "self.mm_aiv"), shift=1) == text
    group = hover(prog, idx, tok(ln("self.mm(a, b, acc_next)"), "self.mm"), shift=5)
    assert group.startswith("**`mm`**: Group function · level CORE_GROUP · role SubWorker")
    # long signatures go one parameter per line
    assert "def mm(\n    a: pl.Tensor[[16, 64], pl.BF16],\n" in group
    assert "    out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],\n) -> pl.Tensor[[16, 64], pl.FP32]" in group
    opaque = hover(prog, idx, tok(ln("def pre_ssa("), "pre_ssa"))
    assert opaque.startswith("**`pre_ssa`**: Opaque function\n")


def test_hover_dtypes_enums_and_constructs(prog: M.Program, idx: SymbolIndex) -> None:
    fp32 = "`pl.FP32`: 32-bit IEEE-754 single-precision float"
    assert hover(prog, idx, tok(ln("pl.tensor.create"), "pl.FP32", 1)) == fp32  # kwarg dtype=pl.FP32
    assert hover(prog, idx, tok(ln("pl.tensor.create"), "pl.FP32", 0), shift=4) == fp32  # inside an annotation
    assert hover(prog, idx, tok(ln("def mm_aic("), "pl.BF16")).startswith("`pl.BF16`: bfloat16")
    vec = hover(prog, idx, tok(ln("pl.tile.alloc"), "pl.Mem.Vec"), shift=8)
    assert vec == "`pl.Mem.Vec`: memory space Vec: vector core's Unified Buffer (UB): operands of vector tile ops"
    aiv = hover(prog, idx, tok(ln("FunctionType.AIV"), "pl.FunctionType.AIV"), shift=17)
    assert aiv == "`pl.FunctionType.AIV`: function kind AIV: vector-core kernel"
    split = hover(prog, idx, tok(ln("pl.func_attr"), "pl.SplitMode.UP_DOWN"))
    assert split.startswith("`pl.SplitMode.UP_DOWN`: AIV split mode UP_DOWN: ")
    assert hover(prog, idx, tok(ln("for k in pl.range(2)"), "pl.range")).startswith("`pl.range`: sequential loop")
    assert "approximates it with float32" in dtype_doc("FP8E4M3FN")


def test_hover_none_and_word_end(prog: M.Program, idx: SymbolIndex) -> None:
    assert hover_text(prog, 2, 0, index=idx) is None
    assert hover_text(prog, ln("return r") - 1, 9, index=idx) is None
    assert hover_text(prog, 0, 3, index=idx) is None  # the header comment
    # a cursor right after the word still hovers it
    acc0 = tok(ln("acc0: pl.Tensor"), "acc0")
    assert hover(prog, idx, acc0, shift=4).startswith("**`acc0`**: variable")


def test_hover_reassigned_parameter_and_loop_kwargs() -> None:
    text = (
        "@pl.function\n"
        "def f(o: pl.Out[pl.Tensor[[4, 4], pl.FP32]]) -> pl.Tensor[[4, 4], pl.FP32]:\n"
        "    for j in pl.pipeline(0, 4, 2, stage=2):\n"
        "        o: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.adds(o, 1.0)\n"
        "    return o\n"
    )
    res = parse_text(text)
    assert res.program is not None
    out = hover_text(res.program, 4, 12)
    assert out is not None and out.startswith("**`o`**: parameter (out) of `f`")
    assert out.endswith("re-assigned at lines 4")
    assert definition(res.program, 4, 11) == [Span(2, 6, 2, 7), Span(4, 8, 4, 9)]
    (f,) = document_symbols(res.program)
    assert f.children[0].detail == "pl.pipeline(0, 4, 2, stage=2)"


def test_hover_undefined_name() -> None:
    text = "@pl.function\ndef f(a: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:\n    return i__iter_v1_1__FREE_VAR\n"
    res = parse_text(text)
    assert res.program is not None
    out = hover_text(res.program, 2, 12)
    assert out == "**`i__iter_v1_1__FREE_VAR`**: no definition in `f` (a free variable the printer emitted)"
    assert definition(res.program, 2, 12) == []
    assert references(res.program, 2, 12) == [Span(3, 11, 3, 33)]


# --------------------------------------------------------------------------- outline


def _tree(symbols: list[SymbolInfo]) -> list:
    return [(s.kind, s.name, s.detail, _tree(s.children)) for s in symbols]


def test_document_symbols_tree(prog: M.Program) -> None:
    syms = document_symbols(prog)
    assert _tree(syms) == [
        ("function", "mm_aic", "AIC · level AIC · role SubWorker", []),
        ("function", "mm_aiv", "AIV · level AIV · role SubWorker", []),
        ("function", "mm", "Group · level CORE_GROUP · role SubWorker", []),
        (
            "function",
            "main",
            "Orchestration · level CHIP · role Orchestrator",
            [
                (
                    "loop",
                    "for i",
                    "pl.range(8) carrying acc",
                    [("variable", "acc", "iter_arg", []), ("if", "if i == 0", "if/else", [])],
                ),
                ("scope", "pl.at", "pl.at(level=pl.Level.CORE_GROUP)", []),
            ],
        ),
        ("function", "pre_ssa", "Opaque", [("loop", "for k", "pl.range(2)", [])]),
        ("function", "count", "Opaque", [("loop", "while", "pl.while_ while i < n carrying i", [("variable", "i", "iter_arg", [])])]),
    ]


def test_document_symbols_spans(prog: M.Program) -> None:
    main = document_symbols(prog)[3]
    assert main.selection == Span(28, 8, 28, 12)
    assert main.span.line == 28 and main.span.end_line == ln("        return z")
    loop, scope = main.children
    assert loop.selection == Span(30, 12, 30, 13)
    assert loop.span == Span(30, 8, 36, len(LINES[35]))
    acc, branch = loop.children
    assert acc.span == acc.selection == Span(30, 16, 30, 19)
    assert branch.selection == Span(31, 12, 31, 14)
    assert branch.span == Span(31, 12, 35, len(LINES[34]))
    assert scope.selection == Span(37, 13, 37, 18)
    assert scope.span == Span(37, 8, 38, len(LINES[37]))
    for sym in _walk(document_symbols(prog)):
        assert _inside(sym.selection, sym.span), sym


def _walk(symbols: list[SymbolInfo]):  # type: ignore[no-untyped-def]
    for s in symbols:
        yield s
        yield from _walk(s.children)


def _inside(a: Span, b: Span) -> bool:
    return (b.line, b.col) <= (a.line, a.col) and (a.end_line, a.end_col) <= (b.end_line, b.end_col)


def test_document_symbols_scope_with_as_name_and_elif() -> None:
    text = (
        "@pl.function\n"
        "def f(a: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:\n"
        "    with pl.spmd(4) as blk:\n"
        "        if a == 0:\n"
        "            pass\n"
        "        elif a == 1:\n"
        "            pass\n"
        "    return a\n"
    )
    res = parse_text(text)
    assert res.program is not None
    (f,) = document_symbols(res.program)
    (scope,) = f.children
    assert (scope.name, scope.detail, scope.selection) == ("pl.spmd as blk", "pl.spmd(4) as blk", Span(3, 9, 3, 16))
    blk, branch = scope.children
    assert (blk.kind, blk.name, blk.selection) == ("variable", "blk", Span(3, 23, 3, 26))
    assert branch.name == "if a == 0" and branch.children[0].name == "elif a == 1"
    assert branch.children[0].selection == Span(6, 8, 6, 12)


# --------------------------------------------------------------------------- index mechanics


def test_index_finds_every_occurrence_by_binary_search(prog: M.Program, idx: SymbolIndex) -> None:
    assert len(idx.occurrences) > 50
    for occ in idx.occurrences:
        found = idx.at(occ.line - 1, occ.col)
        assert found is not None and found.span == occ.span, occ
        if occ.end_col - occ.col > 1:
            mid = idx.at(occ.line - 1, occ.col + 1)
            assert mid is not None and mid.span == occ.span, occ


def test_index_is_rebuilt_for_another_program(prog: M.Program, idx: SymbolIndex) -> None:
    other = parse_text("@pl.function\ndef g(q: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:\n    return q\n").program
    assert other is not None
    assert definition(other, 2, 11, index=idx) == [Span(2, 6, 2, 7)]


def test_module_stays_free_of_lsp_and_torch() -> None:
    code = (
        "import sys, pypto_lsp.ir.symbols, pypto_lsp.server.hover_text\n"
        "bad = [m for m in ('torch', 'pygls', 'lsprotocol') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_sample_build_and_hover_answers(prog: M.Program) -> None:
    # speed is measured by benchmarks/, not asserted here; this checks the timed path works
    assert _timed(prog, 28, 20) >= 0.0


def _timed(prog: M.Program, line0: int, col0: int) -> float:
    t0 = time.perf_counter()
    idx = SymbolIndex.build(prog)
    hover_text(prog, line0, col0, index=idx)
    return time.perf_counter() - t0


# --------------------------------------------------------------------------- real dumps


def _cases() -> list:
    if not FIXTURES.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"shared fixtures not found at {FIXTURES}"))]
    dirs = sorted({p.parent for p in FIXTURES.glob("**/passes_dump/*.py")})
    return [pytest.param(d, id=str(d.parent.relative_to(FIXTURES))) for d in dirs]


def _stmt_exprs(s: M.Stmt):  # type: ignore[no-untyped-def]
    if isinstance(s, M.Assign | M.Unpack | M.ExprStmt):
        yield s.value
    elif isinstance(s, M.Yield | M.Return):
        yield from s.values
    elif isinstance(s, M.For):
        yield from (e for e in (s.start, s.stop, s.step) if e is not None)
        yield from s.init_values
        yield from s.kwargs.values()
    elif isinstance(s, M.While):
        yield s.cond
        yield from s.init_values
    elif isinstance(s, M.If):
        yield s.cond
    elif isinstance(s, M.Scope):
        yield from s.args
        yield from s.kwargs.values()


@pytest.mark.conformance
@pytest.mark.parametrize("dump_dir", _cases())
def test_real_dumps_resolve_every_name_and_hover_every_op(dump_dir: Path) -> None:
    parsed = 0
    for path in sorted(dump_dir.glob("*.py")):
        program = parse_text(path.read_text(encoding="utf-8"), str(path)).program
        if program is None:
            continue
        parsed += 1
        idx = SymbolIndex.build(program)
        document_symbols(program)
        for fn in program.functions:
            lo, hi = fn.span.line, fn.span.end_line
            for s in M.walk_stmts(fn.body):
                for e in _stmt_exprs(s):
                    for x in M.walk_expr(e):
                        if isinstance(x, M.Name):
                            if "__FREE_VAR" in x.id or x.id in program.dynamic_dims:
                                continue
                            where = f"{path.name}:{x.span.line}:{x.span.col} {x.id} in {fn.name}"
                            defs = definition(program, x.span.line - 1, x.span.col, index=idx)
                            assert defs, f"no definition for {where}"
                            assert all(lo <= d.line <= hi for d in defs), f"definition outside the function: {where}"
                            assert x.span in references(program, x.span.line - 1, x.span.col, index=idx), where
                        elif isinstance(x, M.OpCall):
                            h = hover_text(program, x.name_span.line - 1, x.name_span.col, index=idx)
                            assert h, f"no hover for {x.printed} at {path.name}:{x.name_span.line}"
    assert parsed, f"no dump in {dump_dir} parsed"


@pytest.mark.conformance
def test_largest_dump_index_and_hover_under_budget() -> None:
    if not FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    path = FIXTURES / "qwen3_scope3_910b" / "passes_dump" / "32_after_InitMemRef.py"
    if not path.is_file():
        path = max(FIXTURES.glob("**/passes_dump/*.py"), key=lambda p: p.stat().st_size)
    program = parse_text(path.read_text(encoding="utf-8")).program
    assert program is not None
    # hover an op call name in the middle of the file
    calls = [
        x
        for fn in program.functions
        for s in M.walk_stmts(fn.body)
        for e in _stmt_exprs(s)
        for x in M.walk_expr(e)
        if isinstance(x, M.OpCall)
    ]
    target = calls[len(calls) // 2].name_span
    # the time itself is reported by benchmarks/bench_navigation.py, never asserted in a test
    assert hover_text(program, target.line - 1, target.col) is not None
