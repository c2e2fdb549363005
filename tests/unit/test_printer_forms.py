"""The printer-form shortcut (``pypto_lsp.ir.printer_forms``) changes speed, never results.

Every test parses the same text twice, with the shortcut and with every annotation read
through ``ast`` (``printer_forms=False``), and requires equal programs (every span
included) and equal diagnostics. Other tests make sure the shortcut is really taken
where it should be, so that the comparisons compare something.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto_lsp.ir.model import Assign, Const, ExprStmt, OpCall, TileType
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.ir.printer_forms import blank_printer_forms

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
BADINPUT = Path(__file__).resolve().parents[1] / "badinput"

HEAD = "# pypto.program: P\nimport pypto.language as pl\n\n@pl.program\nclass P:\n"
FUNC = "    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)\n"


def program(annotation: str, value: str = "pl.tile.create([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)") -> str:
    return (
        HEAD
        + FUNC
        + f"    def f(self, a: {annotation}, o: pl.Out[{annotation}]) -> {annotation}:\n"
        + f"        t: {annotation} = {value}\n"
        + "        return t\n"
    )


def assert_same(text: str) -> int:
    """Parse both ways, require equal results; return how many forms the shortcut took."""
    fast = parse_text(text, "x.py")
    slow = parse_text(text, "x.py", printer_forms=False)
    assert fast.program == slow.program
    assert [(d.span, d.severity, d.code, d.message) for d in fast.diagnostics] == [
        (d.span, d.severity, d.code, d.message) for d in slow.diagnostics
    ]
    return len(blank_printer_forms(text)[1])


def test_every_fixture_dump_parses_the_same_both_ways() -> None:
    files = sorted(FIXTURES.glob("**/passes_dump/*.py"))
    if not files:
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    taken = sum(assert_same(f.read_text(encoding="utf-8")) for f in files)
    assert taken > 50_000  # the shortcut covers the bulk of the annotations


def test_every_bad_input_parses_the_same_both_ways() -> None:
    files = [f for f in sorted(BADINPUT.iterdir()) if f.suffix == ".py"]
    assert len(files) >= 30
    for f in files:
        try:
            text = f.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert_same(text)


@pytest.mark.parametrize(
    "annotation",
    [
        "pl.Tensor[[64, 128], pl.FP32]",
        "pl.Tensor[[], pl.INT32]",
        "pl.Tensor[[M, 128], pl.BF16]",
        'pl.Tensor[[16, 512], pl.BF16, pl.MemRef("mem_ddr_0", pl.const(0, pl.INT64), 16384)]',
        "pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec]",
        "pl.Tile[[16, 64], pl.FP32, pl.MemRef(mem_vec_3, 0, 4096), pl.Mem.Vec]",
        "pl.Tile[[16, 64], pl.FP32, pl.MemRef(mem_vec_3, pl.const(0, pl.INT64), 4096, 2), pl.Mem.Vec]",
        "pl.Tile[[16, 64], pl.FP32, pl.MemRef(mem_vec_3, 0, 4096), pl.Mem.Vec, pl.TileView(valid_shape=[v__ssa_v0, 64])]",
        "pl.Tile[[16, 64], pl.FP32, pl.Mem.Mat, pl.TileView(blayout=pl.TileLayout.col_major)]",
        "pl.Tile[[16, 64], pl.FP32, pl.TileView(valid_shape=[8, 8], blayout=pl.TileLayout.row_major)]",
        "pl.Scalar[pl.INDEX]",
    ],
)
def test_printer_forms_are_taken_and_read_right(annotation: str) -> None:
    text = program(annotation)
    assert assert_same(text) == 4  # parameter, Out parameter, return type, statement


def test_what_the_shortcut_builds() -> None:
    ann = "pl.Tile[[16, 64], pl.FP32, pl.MemRef(mem_vec_3, 0, 4096), pl.Mem.Vec, pl.TileView(valid_shape=[8, 64])]"
    res = parse_text(program(ann))
    assert res.program is not None
    st0 = res.program.functions[0].body[0]
    assert isinstance(st0, Assign) and st0.target is not None
    t = st0.target.type
    assert isinstance(t, TileType)
    assert (t.dtype, t.memspace, [getattr(d, "value", None) for d in t.shape]) == ("FP32", "Vec", [16, 64])
    assert t.memref is not None and t.memref.base == "mem_vec_3"
    assert isinstance(t.memref.size, Const) and t.memref.size.value == 4096
    line = program(ann).split("\n")[t.span.line - 1]
    assert line[t.span.col : t.span.end_col] == ann
    assert line[t.memref.span.col : t.memref.span.end_col] == "pl.MemRef(mem_vec_3, 0, 4096)"


@pytest.mark.parametrize(
    "annotation",
    [
        "pl.Tensor[[True, 128], pl.FP32]",  # a keyword is a constant, not a dim name
        "pl.Tensor[[016, 128], pl.FP32]",  # leading zero: a syntax error both ways
        "pl.Tensor[[1_024, 128], pl.FP32]",
        "pl.Tensor[[M - 1, 128], pl.FP32]",
        "pl.Tensor[[__M__, 128], pl.FP32]",  # dunder: the grammar error must still be reported
        "pl.Tensor[[64, 128], pl.FP33]",  # unknown dtype: its diagnostic comes from the parser
        "pl.Tensor[[64, 128], pl.FP32, pl.Mem.Vec]",  # a memory space is not a tensor item
        "pl.Tile[[16, 64], pl.FP32, pl.Mem.Nowhere]",
        "pl.Tile[[16, 64], pl.FP32, pl.MemRef(__x__, 0, 4096), pl.Mem.Vec]",
        "pl.Tile[[16, 64], pl.FP32, pl.TileView(pad=pl.PadValue.zero)]",
        "pl.Tile[[16, 64], pl.FP32, pl.TileView(blayout=pl.TileLayout.diagonal)]",
        "pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec, pl.MemRef(m, 0, 4096)]",  # items out of the printer's order
        "pl.Scalar[pl.FP33]",
        "pl.Tile[[16, 64], pl.FP32]  # non-ASCII comment: ×",
    ],
)
def test_other_forms_go_through_ast(annotation: str) -> None:
    assert_same(program(annotation))


def test_crlf_text_goes_through_ast() -> None:
    text = program("pl.Tensor[[64, 128], pl.FP32]").replace("\n", "\r\n")
    assert blank_printer_forms(text)[1] == {}
    assert_same(text)


def test_a_form_outside_an_annotation_falls_back_to_the_text_as_written() -> None:
    # inside a string and as an operand: the placeholder is never consumed, so the parser re-reads the original
    value = 'pl.tensor.foo("x, pl.Scalar[pl.INT32]", pl.Tensor[[4], pl.FP32][0])'
    text = program("pl.Tensor[[4], pl.FP32]", value)
    assert len(blank_printer_forms(text)[1]) == 6
    assert_same(text)
    res = parse_text(text)
    assert res.program is not None
    st0 = res.program.functions[0].body[0]
    assert isinstance(st0, Assign | ExprStmt) and isinstance(st0.value, OpCall)
    arg = st0.value.args[0]
    assert isinstance(arg, Const) and arg.value == "x, pl.Scalar[pl.INT32]"


_DIMS = st.sampled_from(["16", "0", "128", "016", "M", "v__ssa_v0", "True", "None", "__d__", "1_0", "-1", "M * 2", ""])
_DTYPES = st.sampled_from(["pl.FP32", "pl.BF16", "pl.INT64", "pl.INDEX", "pl.FP33", "pl.Mem.Vec", "FP32"])
_ITEMS = st.sampled_from(
    [
        "pl.MemRef(mem_vec_1, 0, 4096)",
        'pl.MemRef("mem_ddr_0", pl.const(0, pl.INT64), 16384)',
        "pl.MemRef(mem_vec_1, 00, 4096)",
        "pl.MemRef(__m__, 0, 1)",
        "pl.MemRef(m, 1.5, 4)",
        "pl.Mem.Vec",
        "pl.Mem.Acc",
        "pl.Mem.Nope",
        "pl.TileView(valid_shape=[8, 8])",
        "pl.TileView(valid_shape=[M, 0], blayout=pl.TileLayout.row_major)",
        "pl.TileView(blayout=pl.TileLayout.col_major)",
        "pl.TileView(pad=pl.PadValue.max)",
        "pl.TensorView(stride=[1, 1], layout=pl.TensorLayout.ND)",
        "pl.ND",
    ]
)


@settings(max_examples=300, derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["pl.Tile", "pl.Tensor", "pl.Scalar", "pl.Tuple"]),
    dims=st.lists(_DIMS, max_size=3),
    dtype=_DTYPES,
    items=st.lists(_ITEMS, max_size=3),
    sep=st.sampled_from([", ", ",", ",  "]),
)
def test_generated_annotations_parse_the_same_both_ways(kind: str, dims: list[str], dtype: str, items: list[str], sep: str) -> None:
    if kind == "pl.Scalar":
        ann = f"pl.Scalar[{dtype}]"
    else:
        ann = f"{kind}[[{sep.join(d for d in dims if d)}]{sep}{dtype}" + "".join(sep + i for i in items) + "]"
    assert_same(program(ann))
