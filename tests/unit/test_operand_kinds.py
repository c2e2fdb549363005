"""What kind of value each operand of an op is (a tile, a tensor, a scalar, a list of scalars)
and what each keyword attribute takes (a dtype, a memory space, a flag ...), as PyPTO's
registration of the op says it (``op_registry.json``, written by ``tools/gen_op_registry.py``),
and the static checks that hold a dump to them.

Before this check a scalar passed where a tile goes, or a list where a tensor goes, failed at run
time in Python's words (``AttributeError: 'float' object has no attribute 'shape'``), and
``pypto-lsp check`` said nothing: the damaged runs of ``tests/adversarial/test_mutated_runs.py``
found 22 of them in 196 ops swapped for another of the catalogue. A keyword of another kind
mostly ran and passed (67 of 120 keyword values swapped on the examples: ``dtype=[16, 16]``,
``b_trans=pl.BF16``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from pypto_lsp.ir import diagnostics as D
from pypto_lsp.ir.catalogue import OPS
from pypto_lsp.ir.check import check_program
from pypto_lsp.ir.keyword_values import fits as _keyword_fits
from pypto_lsp.ir.model import NOWHERE, Const, DTypeRef, EnumRef, ListExpr, UnaryOp
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.golden import load_bundle

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ELEMENTWISE = EXAMPLES / "elementwise" / "passes_dump" / "00_frontend.py"
SLICE = "x_chunk: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.slice(x, [32, 128], [r, 0])"


def wrong_operands(text: str) -> list[tuple[int, int, str]]:
    res = parse_text(text, "sample.py")
    assert res.program is not None and not res.errors, [(d.span.line, d.message) for d in res.errors]
    return [(d.span.line, d.span.col, d.message) for d in check_program(res.program) if d.code == "wrong-operand"]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if needle in line)


def test_the_catalogue_holds_the_registered_kinds() -> None:
    assert OPS["tile.adds"].operand_kinds == {"lhs": "tile", "rhs": "scalar"}
    assert OPS["tile.load"].operand_kinds == {"tensor": "tensor", "offsets": "tuple", "shapes": "tuple", "valid_shape": "tuple"}
    # an index operand is a tile, not an index scalar (the word "Index" once read as INDEX)
    assert OPS["tile.gather"].operand_kinds["indices"] == "tile"
    # either of two kinds: both are accepted, nothing else; a handle takes a handle
    assert OPS["tensor.maximum"].operand_kinds["rhs"] == "tensor|scalar"
    assert OPS["pld.system.rank"].operand_kinds == {"ctx": "handle"}


def test_the_example_dumps_pass_the_check() -> None:
    for dump in sorted(EXAMPLES.glob("*/passes_dump/*.py")):
        assert wrong_operands(dump.read_text(encoding="utf-8")) == [], dump


def test_a_scalar_where_a_tensor_goes_is_an_error_on_the_operand() -> None:
    text = ELEMENTWISE.read_text(encoding="utf-8")
    bad = SLICE.replace("pl.tensor.slice(x,", "pl.tensor.slice(2.5,")
    assert SLICE in text
    found = wrong_operands(text.replace(SLICE, bad))
    line = line_of(text, SLICE)
    src = text.split("\n")[line - 1].replace(SLICE, bad)
    assert found == [(line, src.index("2.5"), "'tensor.slice' takes a tensor as input (operand 1), got 2.5 (a scalar)")]


def test_a_tensor_where_a_scalar_goes_and_one_inside_a_list_of_scalars() -> None:
    text = ELEMENTWISE.read_text(encoding="utf-8")
    adds = "pl.tensor.adds(x_chunk, 1.0)"
    assert adds in text
    bad = text.replace(adds, "pl.tensor.adds(x_chunk, y)").replace(SLICE, SLICE.replace("[r, 0])", "[r, y])"))
    messages = [m for _, _, m in wrong_operands(bad)]
    assert messages == [
        "'tensor.slice' takes a list of scalars as offset (operand 3), got 'y' (a tensor) in it",
        "'tensor.adds' takes a scalar as rhs (operand 2), got 'y' (a tensor)",
    ]


def test_a_memory_space_or_a_dtype_where_a_list_goes() -> None:
    text = ELEMENTWISE.read_text(encoding="utf-8")
    bad = text.replace(SLICE, SLICE.replace("[32, 128], [r, 0])", "pl.Mem.Vec, pl.FP32)"))
    assert [m for _, _, m in wrong_operands(bad)] == [
        "'tensor.slice' takes a list of scalars as shape (operand 2), got pl.Mem.Vec (an enum member)",
        "'tensor.slice' takes a list of scalars as offset (operand 3), got pl.FP32 (a dtype)",
    ]


def test_an_optional_operand_left_out_of_the_middle_is_not_misread() -> None:
    """``pld.tile.put`` prints its region without its second staging tile: the list after the
    first staging tile is the region's offsets, not the staging tile ``stage2``; with every operand
    given, each is known by its position."""
    head = "dst, 1, src, stage"
    region = "[0, 0], [0, 0], [1, 64]"
    text = f"""\
# pypto.program: P
import pypto.language as pl
import pypto.language.distributed as pld

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, dst: pld.DistributedTensor[[4, 64], pl.FP32], src: pl.Tensor[[1, 64], pl.FP32]) -> pl.Tensor[[1, 64], pl.FP32]:
        stage: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.create([1, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        done: pl.UnknownType = pld.tile.put({head}, {region})
        return src
"""
    assert wrong_operands(text) == []
    all_given = text.replace(f"put({head}, {region})", f"put({head}, {region}, [1, 64])")
    assert [m for _, _, m in wrong_operands(all_given)] == [
        "'pld.tile.put' takes a tile as stage2 (operand 5), got a list of scalars",
    ]


def test_a_run_stops_at_the_check_with_the_line() -> None:
    """The engine does not start a run the check refuses: the error is the check's, on its line."""
    text = ELEMENTWISE.read_text(encoding="utf-8")
    golden = EXAMPLES / "elementwise" / "golden"
    inputs = {k: v for k, v in load_bundle(golden / "inputs.pt").items() if isinstance(v, torch.Tensor)}
    r = run_text(
        text.replace("pl.tensor.adds(x_chunk, 1.0)", "pl.tensor.adds(x_chunk, [1.0])"), inputs, load_bundle(golden / "expected.pt")
    )
    assert r.status == "error" and r.error is not None
    assert r.error.kind == "static:wrong-operand"
    assert r.error.line == line_of(text, "pl.tensor.adds(x_chunk, 1.0)")


def _generator() -> object:
    spec = importlib.util.spec_from_file_location("gen_op_registry", ROOT / "tools" / "gen_op_registry.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    ("words", "kind"),
    [
        ("Input tile (TileType)", "tile"),
        ("the index tile (INT32)", "tile"),
        ("a window-bound DistributedTensor", "tensor"),
        ("Shift (ScalarType, integer)", "scalar"),
        ("row offset (ScalarType INDEX)", "scalar"),
        ("per-dimension offsets (MakeTuple of scalars)", "tuple"),
        ("a tensor (TensorType) or a scalar (ScalarType)", "tensor|scalar"),
        ("Right-hand side tile or scalar", "tile|scalar"),
        ("an opaque handle to a context", "handle"),
        ("A CommContext handle (CommCtxType)", "handle"),
        ("Source array (ArrayType)", "array"),
        ("a transfer extent (TupleType of ScalarType). May be a runtime Scalar[INDEX]", None),
    ],
)
def test_the_generator_reads_a_kind_from_the_words(words: str, kind: str | None) -> None:
    assert _generator().operand_kind(words) == kind  # type: ignore[attr-defined]


def test_the_check_is_an_error() -> None:
    text = ELEMENTWISE.read_text(encoding="utf-8").replace("pl.tensor.adds(x_chunk, 1.0)", "pl.tensor.adds(x_chunk, x)")
    res = parse_text(text, "sample.py")
    assert res.program is not None
    found = [d for d in check_program(res.program) if d.code == "wrong-operand"]
    assert [d.severity for d in found] == [D.ERROR]


MATMUL = EXAMPLES / "mixed_matmul" / "passes_dump" / "11_after_ConvertTensorToTileOps.py"
LOAD_MAT = "[32, 64], [32, 64], target_memory=pl.Mem.Mat,"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("pl.BF16", "'tile.load' takes a memory space (pl.Mem.X) as target_memory=, got pl.BF16 (a dtype)"),
        ("True", "'tile.load' takes a memory space (pl.Mem.X) as target_memory=, got True (a scalar)"),
        ("pl.PadValue.zero", "'tile.load' takes a memory space (pl.Mem.X) as target_memory=, got pl.PadValue.zero (an enum member)"),
    ],
)
def test_a_keyword_of_another_kind_is_an_error_on_its_value(value: str, message: str) -> None:
    """Before this check such a value ran: tile.load placed its tile wherever the value said
    nothing against, and the run passed."""
    text = MATMUL.read_text(encoding="utf-8")
    assert LOAD_MAT in text
    bad = text.replace(LOAD_MAT, LOAD_MAT.replace("pl.Mem.Mat", value), 1)
    res = parse_text(bad, "sample.py")
    assert res.program is not None
    found = [(d.span.line, d.message) for d in check_program(res.program) if d.code == "wrong-keyword"]
    assert found == [(line_of(text, LOAD_MAT), message)]


def test_keywords_take_what_the_printer_prints() -> None:
    """An int attribute printed as an enum member or by name (atomic=pl.AtomicType.None_, a
    cast's mode="round"), a flag, a negative integer: all fit."""
    assert OPS["tile.store"].keyword_kinds["atomic"] == "int"
    assert _keyword_fits("int", EnumRef("AtomicType", "None_", NOWHERE)) is True
    assert _keyword_fits("int", Const("round", NOWHERE)) is True
    assert _keyword_fits("int", UnaryOp("-", Const(1, NOWHERE), NOWHERE)) is True
    assert _keyword_fits("bool", Const(False, NOWHERE)) is True
    assert _keyword_fits("int", EnumRef("Mem", "Vec", NOWHERE)) is False
    assert _keyword_fits("int", Const(1.5, NOWHERE)) is False
    assert _keyword_fits("bool", ListExpr([], NOWHERE)) is False
    assert _keyword_fits("dtype", DTypeRef("FP32", NOWHERE)) is True
    assert _keyword_fits("dtype", Const(7, NOWHERE)) is False
