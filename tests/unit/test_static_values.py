"""Values the types already say are wrong, found before a run: an op's result where it cannot go
(an op that returns nothing assigned to a name, a tile as a block count, a scalar assigned to a
tile), the ``core_num`` of an SPMD call checked as any operand is, matmul operands that cannot be
multiplied, an element read outside its array.

Each of these was found by swapping ops in the dumps of ``../shared/fixtures-coverage`` (stop 60).
Before, ``pypto-lsp check`` said nothing and the run failed in Python's or torch's words:
``TypeError: 'NoneType' object cannot be interpreted as an integer``, ``_binary.<locals>.kernel()
missing 2 required positional arguments``, ``mat1 and mat2 shapes cannot be multiplied (2x64 and
2x1)``, ``index 8 is out of bounds for dimension 1 with size 1``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pypto_lsp.ir.check import check_program
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.engine import run_text

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "examples" / "mixed_matmul" / "passes_dump" / "24_after_SplitVectorKernel.py"
GATHER = ROOT / "examples" / "gather_rows" / "passes_dump" / "04_after_ConvertToSSA.py"

HEAD = "# pypto.program: P\nimport pypto.language as pl\n\n@pl.program\nclass P:\n"
T = "pl.Tensor[[4, 8], pl.FP32]"


def spmd(core_num: str, before: str = "") -> str:
    """An SPMD launch whose ``core_num`` is ``core_num``; ``before``: a statement of the orchestrator."""
    return (
        HEAD
        + "    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)\n"
        + f"    def k(self, a: {T}, out: pl.InOut[{T}]) -> {T}:\n"
        + "        t: pl.Tile[[4, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [0, 0], [4, 8], [4, 8], target_memory=pl.Mem.Vec)\n"
        + f"        o: {T} = pl.tile.store(t, [0, 0], out)\n"
        + "        return o\n"
        + "    @pl.function(type=pl.FunctionType.Spmd)\n"
        + f"    def k_spmd(self, a: {T}, out: pl.InOut[{T}]) -> {T}:\n"
        + f"        r: {T} = self.k(a, out)\n"
        + "        return r\n"
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, a: {T}, out: pl.InOut[{T}]) -> {T}:\n"
        + (f"        {before}\n" if before else "")
        + f'        r: {T} = self.k_spmd(a, out, attrs={{"core_num": {core_num}}})\n'
        + "        return r\n"
    )


def findings(text: str) -> list[tuple[str, int, str]]:
    res = parse_text(text, "sample.py")
    assert res.program is not None and not res.errors, [(d.span.line, d.message) for d in res.errors]
    return [(d.code, d.span.line, d.message) for d in check_program(res.program) if d.severity == "error"]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if needle in line)


def test_a_well_formed_launch_has_no_finding() -> None:
    assert findings(spmd("pl.system.available_aiv_count()")) == []
    assert findings(spmd("4")) == []


def test_the_ops_in_core_num_are_checked_as_any_operand() -> None:
    text = spmd("pl.tile.divs()")
    line = line_of(text, "core_num")
    assert findings(text) == [
        ("wrong-arity", line, "'tile.divs' takes 2 positional arguments (lhs, rhs), got 0"),
        ("bad-core-num", line, "call to 'k_spmd': core_num must be a positive integer, got 'tile.divs' (a tile)"),
    ]


def test_core_num_reads_its_names_where_they_are_bound() -> None:
    text = spmd("n", before="pl.system.bar_all()")
    assert [(c, m) for c, _, m in findings(text)] == [("undefined-name", "undefined name 'n' in function 'main'")]


def test_an_op_that_returns_nothing_as_core_num_or_assigned() -> None:
    text = spmd("pl.system.bar_all()")
    assert [(c, m) for c, _, m in findings(text)] == [
        ("bad-core-num", "call to 'k_spmd': core_num must be a positive integer, but 'system.bar_all' returns nothing")
    ]
    text = spmd("n", before="n: pl.Scalar[pl.INT64] = pl.system.bar_all()")
    assert findings(text) == [
        ("no-result", line_of(text, "n: pl.Scalar"), "'system.bar_all' returns nothing, but its result is assigned to 'n'")
    ]


def test_the_no_result_op_assigned_stops_the_engine_before_the_run() -> None:
    text = spmd("n", before="n: pl.Scalar[pl.INT64] = pl.system.bar_all()")
    a = torch.ones(4, 8)
    fr = run_text(text, {"a": a, "out": torch.zeros(4, 8)}, {"out": a}, filename="x.py")
    assert fr.error is not None and fr.error.kind == "static:no-result" and fr.error.line == line_of(text, "n: pl.Scalar")


def test_matmul_operands_that_cannot_be_multiplied() -> None:
    text = MATMUL.read_text(encoding="utf-8")
    good = "pl.tile.matmul(a__ssa_v0_mat_Left, b__ssa_v0_mat_Right)"
    assert good in text and findings(text) == []
    # [32, 64] x [32, 64]: the left's 64 columns against the right's 32 rows
    bad = text.replace(good, "pl.tile.matmul(a__ssa_v0_mat_Left, a__ssa_v0_mat_Left)")
    assert findings(bad) == [
        (
            "matmul-shapes",
            line_of(text, good),
            "'tile.matmul' cannot multiply 'a__ssa_v0_mat_Left' [32, 64] by 'a__ssa_v0_mat_Left' [32, 64]: "
            "the left has 64 columns, the right 32 rows",
        )
    ]


def test_a_transpose_is_read_before_the_shapes_are_compared() -> None:
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[32, 16], pl.FP32]:\n"
        + "        c: pl.Tensor[[32, 16], pl.FP32] = pl.tensor.matmul(a, b, b_trans=B)\n"
        + "        return c\n"
    )
    assert findings(base.replace("B)", "True)")) == []
    # without the transpose the annotation disagrees with the product too
    assert [c for c, _, _ in findings(base.replace("B)", "False)"))] == ["matmul-shapes", "shape-mismatch"]


def test_an_accumulator_of_another_shape_than_the_product() -> None:
    text = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, acc: pl.Tensor[[32, 8], pl.FP32], a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[64, 16], pl.FP32]) -> pl.Tensor[[32, 8], pl.FP32]:\n"
        + "        c: pl.Tensor[[32, 8], pl.FP32] = pl.tensor.matmul_acc(acc, a, b)\n"
        + "        return c\n"
    )
    assert findings(text) == [("matmul-shapes", 8, "'tensor.matmul_acc' accumulates a [32, 16] product into 'acc' [32, 8]")]


def test_an_element_read_outside_its_array() -> None:
    text = GATHER.read_text(encoding="utf-8")
    good = "pl.tensor.read(rows__ssa_v0, [i__idx_v0])"
    assert good in text and findings(text) == []
    shape = text.split("rows__ssa_v0: pl.Tensor[[", 1)[1].split("]", 1)[0]
    n = int(shape)
    bad = text.replace(good, f"pl.tensor.read(rows__ssa_v0, [{n}])")
    assert findings(bad) == [("index-out-of-range", line_of(text, good), f"'tensor.read' at [{n}] is outside 'rows__ssa_v0' [{n}]")]
    assert findings(text.replace(good, f"pl.tensor.read(rows__ssa_v0, [{n - 1}])")) == []


def test_a_scalar_assigned_to_a_tile() -> None:
    text = MATMUL.read_text(encoding="utf-8")
    good = "pl.tile.muls(acc__tile_Vec, 2.0)"
    bad = text.replace(good, "pl.tile.read(acc__tile_Vec, [0, 0])")
    assert findings(bad) == [("kind-mismatch", line_of(text, good), "'t__tile' is annotated as a tile but 'tile.read' produces a scalar")]


def test_an_element_read_outside_at_run_time_is_said_in_the_ir_terms() -> None:
    """An index only the run knows: the kernel says which element and which shape."""
    text = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, a: pl.Tensor[[4, 8], pl.FP32], i: pl.Scalar[pl.INDEX], out: pl.InOut[pl.Tensor[[4, 8], pl.FP32]]) -> pl.Tensor[[4, 8], pl.FP32]:\n"
        + "        v: pl.Scalar[pl.FP32] = pl.tensor.read(a, [i, 0])\n"
        + "        return out\n"
    )
    a = torch.ones(4, 8)
    fr = run_text(text, {"a": a, "i": torch.tensor(4), "out": a.clone()}, {"out": a}, filename="x.py")
    assert fr.error is not None and fr.error.line == 8
    assert "element [4, 0] is outside the shape [4, 8]" in fr.error.message, fr.error.message


def test_the_rows_pypto_does_not_register_take_the_kinds_of_the_op_they_mirror() -> None:
    """``tensor.rems`` is the reference's, not a registered op: it had no kinds, and a memory space
    as its tensor ran into ``remainder() received an invalid combination of arguments``."""
    from pypto_lsp.ir.catalogue import OPS

    assert OPS["tensor.rems"].operand_kinds == OPS["tensor.adds"].operand_kinds == {"lhs": "tensor", "rhs": "scalar"}
    text = spmd("4", before="p: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.rems(pl.Mem.Vec, 256)")
    assert [(c, m) for c, _, m in findings(text)] == [
        ("wrong-operand", "'tensor.rems' takes a tensor as lhs (operand 1), got pl.Mem.Vec (an enum member)")
    ]


SOFTMAX = ROOT / "examples" / "softmax" / "passes_dump" / "00_frontend.py"


def test_a_row_expansion_takes_one_value_per_row() -> None:
    text = SOFTMAX.read_text(encoding="utf-8")
    good = "pl.tile.row_expand_sub(scaled, mx)"
    assert good in text and findings(text) == []
    assert [c for c, _, _ in findings(text.replace(good, "pl.tile.row_expand_sub(scaled, scaled)"))] == ["broadcast-shapes"]
    # an elementwise op of two shapes that broadcast
    assert findings(text.replace(good, "pl.tile.sub(scaled, mx)")) == []
    # a column expansion takes one value per column: a [1, 128], not the [32, 1] of maxima (torch
    # would broadcast it as a row vector, without a word)
    bad = text.replace(good, "pl.tile.col_expand_sub(scaled, mx)")
    assert findings(bad) == [
        (
            "broadcast-shapes",
            line_of(text, good),
            "'tile.col_expand_sub' cannot combine 'scaled' [32, 128] with 'mx' [32, 1]",
        )
    ]


def test_a_window_computed_on_where_the_host_holds_it() -> None:
    """A compute op of a HOST function given a window (every rank's copy at once): before, the
    run failed with ``'WindowView' object has no attribute 'float'`` or ``cos(): argument 'input'
    must be Tensor, not WindowView``, depending on the op."""
    case = ROOT / "examples" / "allreduce_ranks"
    text = (case / "passes_dump" / "00_frontend.py").read_text(encoding="utf-8")
    window = "signal: pld.DistributedTensor[[4, 1], pl.INT32] = pld.tensor.window(signal_buf, [4, 1], dtype=pl.INT32)"
    assert window in text
    inputs = {k: v for k, v in torch.load(case / "golden" / "inputs.pt").items() if isinstance(v, torch.Tensor)}
    expected = torch.load(case / "golden" / "expected.pt")
    for op in ("pl.tensor.recip(data)", "pl.tensor.cos(data)", "pl.tensor.add(data, data)"):
        bad = text.replace(window, window + f"\n            t: pld.DistributedTensor[[1, 64], pl.FP32] = {op}")
        fr = run_text(bad, {k: v.clone() for k, v in inputs.items()}, expected, filename="x.py")
        assert fr.error is not None and fr.error.kind == "distributed:error", (op, fr.error)
        assert fr.error.line == line_of(bad, op) and "as the host holds it" in fr.error.message, (op, fr.error.message)


def warnings_of(text: str) -> list[tuple[str, int, str]]:
    res = parse_text(text, "sample.py")
    assert res.program is not None
    return [(d.code, d.span.line, d.message) for d in check_program(res.program) if d.severity == "warning"]


def test_a_scope_header_is_held_to_the_keywords_pypto_takes() -> None:
    """Before, ``with pl.at(levl=...)`` or ``level=pl.Mem.Vec`` passed unremarked: a scope is
    transparent to the numbers, so the run ignores it, but PyPTO would not read the dump back."""
    text = SOFTMAX.read_text(encoding="utf-8")
    header = "with pl.at(level=pl.Level.CORE_GROUP):"
    assert header in text and warnings_of(text) == []
    line = line_of(text, header)
    assert warnings_of(text.replace(header, "with pl.at(levl=pl.Level.CORE_GROUP):")) == [
        ("unknown-keyword", line, "pl.at has no keyword 'levl'")
    ]
    assert warnings_of(text.replace(header, "with pl.at(level=pl.Mem.Vec):")) == [
        ("wrong-keyword", line, "pl.at takes a level (pl.Level.X) as level=")
    ]
    assert warnings_of(text.replace(header, 'with pl.at(level=pl.Level.CORE_GROUP, name_hint="blk", allow_early_resolve=True):')) == []
    assert [c for c, _, _ in warnings_of(text.replace(header, "with pl.at(level=pl.Level.CORE_GROUP, name_hint=3):"))] == ["wrong-keyword"]


def test_an_operand_of_either_kind_takes_both_and_nothing_else() -> None:
    """``tensor.cmp``'s rhs is a tensor or a scalar (PyPTO's words): a list there ran into
    ``eq() received an invalid combination of arguments - got (Tensor, list)``."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, a: {T}, b: {T}) -> {T}:\n"
        + f"        c: {T} = pl.tensor.maximum(a, RHS)\n"
        + "        return c\n"
    )
    assert findings(base.replace("RHS", "b")) == findings(base.replace("RHS", "2.0")) == []
    assert findings(base.replace("RHS", "[1, 2]")) == [
        ("wrong-operand", 8, "'tensor.maximum' takes a tensor or a scalar as rhs (operand 2), got a list of scalars")
    ]


def test_arithmetic_of_scalars_is_a_scalar() -> None:
    """``pl.tensor.recip(n * 4)`` ran into ``'int' object has no attribute 'dtype'``."""
    text = spmd("4", before="n: pl.Scalar[pl.INT64] = 2\n        r0: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.recip(n * 4)")
    assert [(c, m) for c, _, m in findings(text)] == [("wrong-operand", "'tensor.recip' takes a tensor as input (operand 1), got a scalar")]


def test_a_bitwise_op_takes_integers() -> None:
    """``tensor.shl`` of FP32 ran into torch's ``"lshift_cpu" not implemented for 'Float'``;
    PyPTO's type deduction takes integer dtypes only."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, a: pl.Tensor[[4, 8], DT], b: pl.Tensor[[4, 8], DT]) -> pl.Tensor[[4, 8], DT]:\n"
        + "        c: pl.Tensor[[4, 8], DT] = pl.tensor.shl(a, b)\n"
        + "        return c\n"
    )
    assert findings(base.replace("DT", "pl.INT32")) == []
    assert findings(base.replace("DT", "pl.FP32")) == [("integer-only", 8, "'tensor.shl' takes integer values, got 'a' of dtype FP32")]


def test_an_array_assigned_to_a_scalar() -> None:
    """``n: pl.Scalar[pl.INDEX] = pl.tensor.minimums(...)`` as a loop bound ran into ``only integer
    tensors of a single element can be converted to an index``."""
    text = GATHER.read_text(encoding="utf-8")
    good = "pl.tensor.read(rows__ssa_v0, [i__idx_v0])"
    target = text.split("\n")[line_of(text, good) - 1].split(":", 1)[0].strip()
    bad = text.replace(good, "pl.tensor.muls(rows__ssa_v0, 2)")
    assert findings(bad) == [
        ("kind-mismatch", line_of(text, good), f"'{target}' is annotated as a scalar but 'tensor.muls' produces a tensor")
    ]


def test_an_integer_division_by_zero_is_said_in_those_words() -> None:
    """torch's whole message was ``RuntimeError: ZeroDivisionError``."""
    from pypto_lsp.exec.kernels import KERNELS

    ints = torch.ones(2, 2, dtype=torch.int32)
    for op in ("tile.divs", "tile.rems", "tile.fmods"):
        try:
            KERNELS[op](ints, 0)
        except ZeroDivisionError as exc:
            assert str(exc).startswith("integer division by zero"), (op, exc)
        else:
            raise AssertionError(f"{op} by 0 raised nothing")
    for op in ("tile.div", "tile.rem", "tile.fmod"):
        try:
            KERNELS[op](ints, torch.zeros(2, 2, dtype=torch.int32))
        except ZeroDivisionError:
            pass
        else:
            raise AssertionError(f"{op} by 0 raised nothing")
    assert torch.isinf(KERNELS["tile.divs"](torch.ones(2, 2), 0.0)).all()  # floats: inf, as the device


def test_a_scalar_division_by_zero_of_the_dump_names_the_expression() -> None:
    """Python's words were ``ZeroDivisionError: integer modulo by zero``: no op, no operand named."""
    text = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}) -> {T}:\n"
        + "        n: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)\n"
        + "        z: pl.Scalar[pl.INDEX] = n - 4\n"
        + "        k: pl.Scalar[pl.INDEX] = (n + 1) % z\n"
        + f"        y: {T} = pl.tensor.adds(x, k)\n"
        + "        return y\n"
    )
    assert findings(text) == []
    r = run_text(text, {"x": torch.zeros(4, 8)}, {"y": torch.zeros(4, 8)})
    assert r.error is not None and r.error.line == line_of(text, "% z")
    assert r.error.message == "ZeroDivisionError: '(n + 1) % z' divides by zero: its divisor is 0 (the device's result is undefined)"


def test_a_handle_operand_takes_a_handle() -> None:
    """``pld.system.rank(ctx)`` takes a CommContext handle (PyPTO's words: "A CommContext handle
    (CommCtxType)"); a tensor there ran into ``int() argument must be ... not 'WindowView'``."""
    text = (ROOT / "examples" / "allreduce_ranks" / "passes_dump" / "00_frontend.py").read_text(encoding="utf-8")
    good = "pld.system.rank(ctx)"
    assert good in text and findings(text) == []
    bad = text.replace(good, "pld.system.rank(data)")
    assert findings(bad) == [
        ("wrong-operand", line_of(text, good), "'pld.system.rank' takes a handle as ctx (operand 1), got 'data' (a tensor)")
    ]


def test_a_tile_matmul_takes_matrices() -> None:
    """A vector as a tile matmul's operand: torch said ``size mismatch, got input (8), mat (8x32),
    vec (256)``; PyPTO's deduction takes 2-D tiles."""
    text = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.InCore)\n"
        + "    def k(self, acc: pl.Tile[[8, 16], pl.FP32, pl.Mem.Acc], a: pl.Tile[[8, 32], pl.BF16, pl.Mem.Left], v: pl.Tile[[256], pl.BF16, pl.Mem.Right]) -> pl.Tile[[8, 16], pl.FP32, pl.Mem.Acc]:\n"
        + "        c: pl.Tile[[8, 16], pl.FP32, pl.Mem.Acc] = pl.tile.matmul_acc(acc, a, v)\n"
        + "        return c\n"
    )
    assert [(c, m) for c, _, m in findings(text)] == [("matmul-shapes", "'tile.matmul_acc' takes 2-D operands, got 'v' [256]")]


def test_a_scatter_update_as_pypto_deduces_it() -> None:
    """One source row per index, as wide as the input; the index 2-D and of integers."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, x: pl.Tensor[[16, 32], pl.FP32], i: pl.Tensor[[2, 4], IDT], s: pl.Tensor[SRC, pl.FP32]) -> pl.Tensor[[16, 32], pl.FP32]:\n"
        + "        y: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.scatter_update(x, i, s)\n"
        + "        return y\n"
    )
    assert findings(base.replace("IDT", "pl.INT32").replace("SRC", "[8, 32]")) == []
    assert findings(base.replace("IDT", "pl.INDEX").replace("SRC", "[8, 32]")) == []  # INDEX is an integer dtype
    assert findings(base.replace("IDT", "pl.INT32").replace("SRC", "[16, 32]")) == [
        ("scatter-shapes", 8, "'tensor.scatter_update' takes a source of shape [8, 32] for 'i' [2, 4] into 'x' [16, 32], got 's' [16, 32]")
    ]
    assert [m for _, _, m in findings(base.replace("IDT", "pl.FP32").replace("SRC", "[8, 32]"))] == [
        "'tensor.scatter_update' takes an integer index, got 'i' [2, 4] of dtype FP32"
    ]
    assert findings(base.replace("IDT", "pl.INT32").replace("SRC", "[8, 32]").replace("(x, i, s)", "(x, i, s, dim=-2)")) == []
    assert [
        m for _, _, m in findings(base.replace("IDT", "pl.INT32").replace("SRC", "[8, 32]").replace("(x, i, s)", "(x, i, s, dim=0)"))
    ] == ["'tensor.scatter_update' takes dim=-2 only, got dim=0"]


def test_a_4d_scatter_update_takes_one_block_row_per_index() -> None:
    """PyPTO's 4-D form: input [blocks, block_size, 1, d], index [b, s], source [b, s, 1, d]."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, x: pl.Tensor[[4, 8, 1, 32], pl.FP32], i: pl.Tensor[[2, 3], pl.INT32], s: pl.Tensor[SRC, pl.FP32]) -> pl.Tensor[[4, 8, 1, 32], pl.FP32]:\n"
        + "        y: pl.Tensor[[4, 8, 1, 32], pl.FP32] = pl.tensor.scatter_update(x, i, s, dim=-2)\n"
        + "        return y\n"
    )
    assert findings(base.replace("SRC", "[2, 3, 1, 32]")) == []
    assert [m for _, _, m in findings(base.replace("SRC", "[6, 1, 1, 32]"))] == [
        "'tensor.scatter_update' takes a source of shape [2, 3, 1, 32] for 'i' [2, 3] into 'x' [4, 8, 1, 32], got 's' [6, 1, 1, 32]"
    ]


def test_a_reshape_or_view_keeps_every_element() -> None:
    """PyPTO's deductions refuse a static reshape to another element count, and a view's
    dimensions must be positive: the fuzz met ``tensor.view(x, [-1, -1])``, which torch refused as
    ``shape '[-1, -1]' is invalid for input of size 32`` (one ``-1`` it quietly inferred)."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}) -> pl.Tensor[[2, 16], pl.FP32]:\n"
        + "        y: pl.Tensor[[2, 16], pl.FP32] = OP\n"
        + "        return y\n"
    )
    assert findings(base.replace("OP", "pl.tensor.view(x, [2, 16])")) == []
    assert findings(base.replace("OP", "pl.tensor.reshape(x, [2, 16])")) == []
    assert findings(base.replace("OP", "pl.tensor.view(x, layout=pl.TensorLayout.ND)").replace("[[2, 16]", "[[4, 8]")) == []
    assert ("reshape-size", 8, "'tensor.view' takes positive dimensions, got -1") in findings(
        base.replace("OP", "pl.tensor.view(x, [-1, 16])")
    )
    assert findings(base.replace("OP", "pl.tensor.reshape(x, [3, 16])").replace("[[2, 16]", "[[3, 16]")) == [
        ("reshape-size", 8, "'tensor.reshape' to [3, 16] (48 elements) of 'x' [4, 8] (32 elements)")
    ]
    # a dimension the dump computes is left to the run
    dyn = base.replace("OP", "pl.tensor.reshape(x, [n - 2, 16])").replace(
        "        y:", "        n: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)\n        y:"
    )
    assert findings(dyn) == []


def test_an_op_of_no_shape_rule_is_still_an_array_of_its_namespace() -> None:
    """The fuzz swapped ``tensor.read`` for ``tensor.fillpad_expand`` in a ``defer_wait`` kernel:
    the tensor went to a scalar, and the run said ``only one element tensors can be converted to
    Python scalars``. Every tile./tensor. op PyPTO registers returns an array of its namespace, but
    ``gather_compare``, which returns a tuple."""
    text = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}) -> {T}:\n"
        + "        e: pl.Scalar[pl.FP32] = pl.tensor.fillpad_expand(x, [4, 8])\n"
        + f"        y: {T} = pl.tensor.adds(x, e)\n"
        + "        return y\n"
    )
    assert findings(text) == [("kind-mismatch", 8, "'e' is annotated as a scalar but 'tensor.fillpad_expand' produces a tensor")]
    pair = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, x: pl.Tensor[[16, 8], pl.INT32]) -> pl.Tensor[[16, 8], pl.INT32]:\n"
        + "        t: pl.Tuple[pl.Tensor[[16, 8], pl.INT32], pl.Tensor[[1, 16], pl.INT32]] = pl.tensor.gather_compare(x, 3, cmp_mode=0, offset=0, out_cols=8)\n"
        + "        return x\n"
    )
    assert findings(pair) == []


def test_an_optional_operand_is_checked_where_no_gap_can_move_it() -> None:
    """``tensor.view(input, shape?, valid_shape?)``: no operand of another kind can sit between, so a
    tile given as its shape is found (the fuzz: torch said ``only one dimension can be inferred``).
    ``pld.tile.put``, whose printer leaves out a middle staging tile, still checks its required
    operands only (``test_operand_kinds.py``)."""
    text = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}, s: {T}) -> {T}:\n"
        + f"        y: {T} = pl.tensor.view(x, s)\n"
        + "        return y\n"
    )
    assert findings(text) == [("wrong-operand", 8, "'tensor.view' takes a list of scalars as shape (operand 2), got 's' (a tensor)")]


# ---------------------------------------------------------------------- number edits (stop 61)
# A fuzz that changes one integer of an op's operands in the dumps of ../shared/fixtures-coverage
# (a shape, an offset, an axis, a mode) met each of these in torch's or Python's words.


def test_a_shape_of_a_dimension_that_is_not_positive() -> None:
    """torch said ``Trying to create tensor with negative dimension -1: [1, 1, -1]``."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}) -> {T}:\n"
        + "        s: pl.Tensor[[2, 8], pl.FP32] = pl.tensor.slice(x, [2, DIM], [0, 0])\n"
        + "        f: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.full([4, 8], dtype=pl.FP32, value=1.0)\n"
        + "        return f\n"
    )
    assert findings(base.replace("DIM", "8")) == []
    assert ("bad-dimension", 8, "'tensor.slice' takes positive dimensions as shape, got -1") in findings(base.replace("DIM", "-1"))
    assert ("bad-dimension", 9, "'tensor.full' takes positive dimensions as shape, got 0") in findings(
        base.replace("DIM", "8").replace("[4, 8], dtype", "[4, 0], dtype")
    )


def test_a_slice_drops_axes_of_size_one_only() -> None:
    """PyPTO's ParseSliceDropDims; torch said ``shape '[1, 64]' is invalid for input of size 128``."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, x: pl.Tensor[[2, 4, 64], pl.FP32]) -> pl.Tensor[[4, 64], pl.FP32]:\n"
        + "        s: pl.Tensor[[4, 64], pl.FP32] = pl.tensor.slice(x, [SHAPE], [0, 0, 0], [], [DROPS])\n"
        + "        return s\n"
    )
    assert findings(base.replace("SHAPE", "1, 4, 64").replace("DROPS", "0")) == []
    msgs = lambda t: [m for c, _, m in findings(t) if c == "slice-drops"]  # noqa: E731
    assert msgs(base.replace("SHAPE", "2, 4, 64").replace("DROPS", "0")) == [
        "'tensor.slice' drops axis 0 of the window [2, 4, 64], which is 2 wide"
    ]
    assert msgs(base.replace("SHAPE", "1, 4, 64").replace("DROPS", "-1")) == ["'tensor.slice' drops axis -1 of a 3-D window"]
    assert msgs(base.replace("SHAPE", "1, 4, 64").replace("DROPS", "0, 0")) == ["'tensor.slice' drops axis 0 twice"]


def test_a_tensor_dim_axis_outside_the_rank() -> None:
    """Python said ``tuple index out of range``."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}) -> {T}:\n"
        + "        n: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, AXIS)\n"
        + f"        y: {T} = pl.tensor.adds(x, n)\n"
        + "        return y\n"
    )
    assert findings(base.replace("AXIS", "-2")) == []
    assert findings(base.replace("AXIS", "2")) == [("index-out-of-range", 8, "'tensor.dim' of axis 2 of 'x' [4, 8], of rank 2")]


def test_a_literal_zero_divisor_and_a_run_time_one_inside_an_op() -> None:
    """``i // 0`` is found before the run; a divisor only the run knows names its expression even
    inside an op's operands (Python said ``tile.load: ZeroDivisionError: integer modulo by zero``)."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}) -> {T}:\n"
        + "        n: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)\n"
        + "        z: pl.Scalar[pl.INDEX] = n - 4\n"
        + "        s: pl.Tensor[[1, 8], pl.FP32] = pl.tensor.slice(x, [1, 8], [n % DIV, 0])\n"
        + f"        y: {T} = pl.tensor.adds(x, 1.0)\n"
        + "        return y\n"
    )
    assert [(c, m) for c, _, m in findings(base.replace("DIV", "0"))] == [("division-by-zero", "'n % 0' divides by zero")]
    text = base.replace("DIV", "z")
    assert findings(text) == []
    r = run_text(text, {"x": torch.zeros(4, 8)}, {"y": torch.ones(4, 8)})
    assert r.error is not None and r.error.line == line_of(text, "n % z")
    assert r.error.message == "ZeroDivisionError: 'n % z' divides by zero: its divisor is 0 (the device's result is undefined)", (
        r.error.message
    )


def test_run_time_operands_a_kernel_cannot_take_are_said_in_the_irs_terms() -> None:
    """Values only the run sees: a drop of a wide axis, a compare mode outside 0..5 (Python said
    ``KeyError: -1``), a paged gather wider than its pool (torch: ``The expanded size of the tensor
    (256) must match the existing size (128)``)."""
    import pytest

    from pypto_lsp.exec.kernels import KERNELS

    with pytest.raises(ValueError, match=r"tensor.slice: drop_dims drops axis 0 of the window \[2, 4\], which is 2 wide"):
        KERNELS["tensor.slice"](torch.zeros(2, 4), [2, 4], [0, 0], None, [0])
    with pytest.raises(ValueError, match=r"tensor.slice: the window \[-1, 4\] has a negative dimension"):
        KERNELS["tensor.slice"](torch.zeros(2, 4), [-1, 4], [0, 0])
    with pytest.raises(ValueError, match=r"cmp_type must be 0..5 \(eq ne lt le gt ge\), got -1"):
        KERNELS["tile.cmps"](torch.zeros(2, 4), 0.0, cmp_type=-1)
    with pytest.raises(ValueError, match=r"tensor.paged_gather: block_size=4, columns \[0, 16\) of a source 8 wide"):
        KERNELS["tensor.paged_gather"](
            torch.zeros(8, 8), torch.zeros(2, dtype=torch.int32), torch.zeros(2, dtype=torch.int32), block_size=4, size=16
        )
    with pytest.raises(IndexError, match=r"tensor.paged_gather: index 9 is outside the 2 blocks of 4 the block table maps"):
        KERNELS["tensor.paged_gather"](
            torch.zeros(8, 8), torch.tensor([1, 9], dtype=torch.int32), torch.zeros(2, dtype=torch.int32), block_size=4
        )
    with pytest.raises(IndexError, match=r"tensor.dim: axis 3 of a 2-D tensor \[2, 4\]"):
        KERNELS["tensor.dim"](torch.zeros(2, 4), 3)


def test_a_name_a_loop_of_no_iteration_never_assigned() -> None:
    """A name assigned in a loop body and read after it (the DSL lets it leak, as the fixture
    ``cross_core_split_aiv_qk_pv`` does): with no iteration Python said ``UnboundLocalError:
    cannot access local variable 'c' where it is not associated with a value``."""
    text = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}) -> {T}:\n"
        + "        n: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)\n"
        + "        for i in pl.range(0, n - 4):\n"
        + f"            c: {T} = pl.tensor.adds(x, 1.0)\n"
        + f"        y: {T} = pl.tensor.adds(c, 1.0)\n"
        + "        return y\n"
    )
    r = run_text(text, {"x": torch.zeros(4, 8)}, {"y": torch.ones(4, 8)})
    assert r.error is not None and r.error.line == line_of(text, "pl.tensor.adds(c, 1.0)")
    assert r.error.message.startswith("'c' is read, but no statement assigned it in this run"), r.error.message


def test_split_aiv_takes_the_hardware_lane_count() -> None:
    """PyPTO's parser: the AIV sub-core count is hardware-fixed at 2."""
    base = (
        HEAD
        + "    @pl.function\n"
        + f"    def main(self, x: {T}) -> {T}:\n"
        + "        for aiv_id in pl.split_aiv(LANES, mode=pl.SplitMode.NONE):\n"
        + f"            y: {T} = pl.tensor.adds(x, 1.0)\n"
        + "        return y\n"
    )
    assert [c for c, _, _ in findings(base.replace("LANES", "2"))] == []
    assert findings(base.replace("LANES", "0")) == [("bad-lane-count", 8, "pl.split_aiv(0): the AIV sub-core count is 2 on the hardware")]


# ---------------------------------------------------------------------- name swaps (stop 61)
# A fuzz that swaps one name an op reads for another name of the same function met each of these
# in Python's or torch's words.

KERNEL = "    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)\n"


def _two_functions(call: str, loop: str = "") -> str:
    return (
        HEAD
        + KERNEL
        + f"    def k(self, x: {T}, n: pl.Scalar[pl.INDEX], out: pl.Out[{T}]) -> {T}:\n"
        + "        t: pl.Tile[[4, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [4, 8], [4, 8], target_memory=pl.Mem.Vec)\n"
        + f"        o: {T} = pl.tile.store(t, [0, 0], out)\n"
        + "        return o\n"
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}, out: pl.Out[{T}]) -> {T}:\n"
        + "        r: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)\n"
        + loop
        + f"        y: {T} = {call}\n"
        + "        return y\n"
    )


def test_a_call_argument_of_another_kind_than_its_parameter() -> None:
    """Python said ``'int' object has no attribute 'dim'`` at the callee's first op."""
    assert findings(_two_functions("self.k(x, r, out)")) == []
    assert findings(_two_functions("self.k(r, r, out)")) == [("wrong-argument", 14, "'k' takes a tensor as x, got 'r' (a scalar)")]
    assert findings(_two_functions("self.k(x, x, out)")) == [("wrong-argument", 14, "'k' takes a scalar as n, got 'x' (a tensor)")]


def test_scalar_arithmetic_of_an_array() -> None:
    """Python said ``a Tensor with 32 elements cannot be converted to Scalar``."""
    text = _two_functions("self.k(x, r * 2, out)")
    assert findings(text) == []
    assert findings(text.replace("r * 2", "x * 2")) == [("scalar-arithmetic", 14, "'x * 2' computes on 'x' (a tensor)")]
    assert findings(text.replace("r * 2", "pl.cast(x, pl.INDEX)")) == [
        ("scalar-arithmetic", 14, "'pl.cast(x, pl.INDEX)' computes on 'x' (a tensor)")
    ]


def test_a_loop_bound_and_a_carried_value_of_another_kind() -> None:
    """Python said ``only integer tensors of a single element can be converted to an index`` and,
    for a scalar carried where the loop carries a tile, ``'int' object has no attribute 'clone'``."""
    loop = "        for i in pl.range(BOUND):\n            z: pl.Scalar[pl.INDEX] = i + 1\n"
    assert findings(_two_functions("self.k(x, r, out)", loop.replace("BOUND", "r"))) == []
    assert findings(_two_functions("self.k(x, r, out)", loop.replace("BOUND", "x"))) == [
        ("bad-loop-bound", 14, "pl.range is bounded by 'x' (a tensor)")
    ]
    carried = (
        "        for i, (acc,) in pl.range(4, init_values=(INIT,)):\n"
        + f"            acc2: {T} = pl.tensor.adds(acc, 1.0)\n"
        + f"            acc3: {T} = pl.yield_(acc2)\n"
    )
    assert findings(_two_functions("self.k(x, r, out)", carried.replace("INIT", "x"))) == []
    assert findings(_two_functions("self.k(x, r, out)", carried.replace("INIT", "r"))) == [
        ("wrong-init-value", 14, "'acc' carries a tensor through the loop, but starts as 'r' (a scalar)")
    ]


def test_a_loop_variable_is_an_index_scalar() -> None:
    """A loop's variable prints without annotation; given where a tensor goes it was unknown, and
    the run said ``'int' object has no attribute 'dim'``."""
    loop = "        for i in pl.range(2):\n            z: pl.Tensor[[2, 8], pl.FP32] = pl.tensor.slice(SRC, [2, 8], [0, 0])\n"
    assert findings(_two_functions("self.k(x, r, out)", loop.replace("SRC", "x"))) == []
    assert findings(_two_functions("self.k(x, r, out)", loop.replace("SRC", "i"))) == [
        ("wrong-operand", 15, "'tensor.slice' takes a tensor as input (operand 1), got 'i' (a scalar)")
    ]


def test_a_store_of_a_tensor_into_itself_reads_before_it_writes() -> None:
    """torch said ``unsupported operation: some elements of the input tensor and the written-to
    tensor refer to a single memory location``."""
    from pypto_lsp.exec.kernels import KERNELS

    x = torch.arange(16.0).reshape(4, 4)
    KERNELS["tile.store"](x[0:2], [2, 0], x)
    assert x[2:].tolist() == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    y = torch.arange(16.0).reshape(4, 4)
    KERNELS["tile.store"](y[0:3], [1, 0], y)  # overlapping: the rows as they were before the store
    assert y[1:].tolist() == torch.arange(12.0).reshape(3, 4).tolist()


def test_an_array_op_takes_a_pl_array() -> None:
    """``array.update_element(array, index, value)``: the registration says ``ArrayType``; a tensor
    there made the run say ``only one element tensors can be converted to Python scalars``."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}) -> {T}:\n"
        + "        a: pl.Array[4, pl.INT32] = pl.array.create(4, dtype=pl.INT32)\n"
        + "        b: pl.Array[4, pl.INT32] = pl.array.update_element(ARR, 1, 7)\n"
        + "        return x\n"
    )
    assert findings(base.replace("ARR", "a")) == []
    assert findings(base.replace("ARR", "x")) == [
        ("wrong-operand", 9, "'array.update_element' takes a pl.Array as array (operand 1), got 'x' (a tensor)")
    ]


def test_an_annotation_dimension_of_a_tensor_and_a_parameter_named_twice() -> None:
    """A tensor in a ``TileView(valid_shape=[...])`` made the run's shape check say ``only one
    element tensors can be converted to Python scalars``; a parameter named twice made the
    generated code fail to compile (``duplicate argument ... in function definition``, no line)."""
    base = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}, n: pl.Scalar[pl.INDEX]) -> {T}:\n"
        + "        s: pl.Tensor[[4, 8], pl.FP32, pl.TensorView(valid_shape=[VR, 8])] = pl.tensor.adds(x, 1.0)\n"
        + "        return s\n"
    )
    assert findings(base.replace("VR", "n")) == []
    assert findings(base.replace("VR", "x")) == [("bad-type", 8, "'s' is annotated with a dimension of 'x' (a tensor)")]
    twice = base.replace("VR", "n").replace("n: pl.Scalar[pl.INDEX]", "x: pl.Scalar[pl.INDEX]").replace("=[n, 8]", "=[4, 8]")
    assert ("duplicate-param", 7, "'main' has two parameters named 'x'") in findings(twice)


def test_a_matmul_bias_row_and_a_compare_of_shapes_that_do_not_broadcast() -> None:
    """torch said ``The size of tensor a (32) must match the size of tensor b (64)``."""
    base = (
        HEAD
        + KERNEL
        + "    def k(self, a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:\n"
        + "        ta: pl.Tile[[16, 32], pl.FP32, pl.Mem.Left] = pl.tile.load(a, [0, 0], [16, 32], [16, 32], target_memory=pl.Mem.Left)\n"
        + "        tb: pl.Tile[[32, 64], pl.FP32, pl.Mem.Right] = pl.tile.load(b, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Right)\n"
        + "        tbias: pl.Tile[[BIAS], pl.FP32, pl.Mem.Bias] = pl.tile.load(b, [0, 0], [BIAS], [BIAS], target_memory=pl.Mem.Bias)\n"
        + "        c: pl.Tile[[16, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul_bias(ta, tb, tbias)\n"
        + "        o: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(c, [0, 0], out)\n"
        + "        return o\n"
    )
    assert [c for c, _, _ in findings(base.replace("BIAS", "1, 64"))] == []
    assert ("matmul-shapes", 11, "'tile.matmul_bias' adds 'tbias' [32, 64] to a [16, 64] product: the bias is [1, 64]") in findings(
        base.replace("BIAS", "32, 64")
    )
    cmp = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, x: pl.Tensor[[4, 64], pl.FP32], y: pl.Tensor[[4, W], pl.FP32]) -> pl.Tensor[[4, 64], pl.BOOL]:\n"
        + "        m: pl.Tensor[[4, 64], pl.BOOL] = pl.tensor.cmp(x, y, cmp_type=2)\n"
        + "        return m\n"
    )
    assert findings(cmp.replace("W", "64")) == []
    assert [c for c, _, _ in findings(cmp.replace("W", "32"))] == ["broadcast-shapes"]


def test_a_yield_of_another_kind_than_the_loop_carries() -> None:
    """``pl.yield_(row)`` where the loop carries a tensor: Python said ``'int' object has no
    attribute 'dim'`` at the next iteration's store."""
    carried = (
        "        for i, (acc,) in pl.range(4, init_values=(x,)):\n"
        + f"            acc2: {T} = pl.tensor.adds(acc, 1.0)\n"
        + f"            acc3: {T} = pl.yield_(VALUE)\n"
    )
    assert findings(_two_functions("self.k(x, r, out)", carried.replace("VALUE", "acc2"))) == []
    assert findings(_two_functions("self.k(x, r, out)", carried.replace("VALUE", "r"))) == [
        ("wrong-yield", 16, "'acc3' carries a tensor, but pl.yield_ hands on 'r' (a scalar)")
    ]


def test_sel_values_broadcast_and_a_scatter_takes_one_index_per_element() -> None:
    """``tile.sel``'s two values must broadcast (torch: ``The size of tensor a (16) must match``);
    a flat scatter's index has its source's shape (torch: ``The shape of the mask [8] at index 0
    does not match the shape of the indexed tensor [64]``)."""
    import pytest

    from pypto_lsp.exec.kernels import KERNELS

    base = (
        HEAD
        + KERNEL
        + "    def k(self, x: pl.Tensor[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:\n"
        + "        a: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 16], [8, 16], target_memory=pl.Mem.Vec)\n"
        + "        b: pl.Tile[[8, COLS], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, COLS], [8, COLS], target_memory=pl.Mem.Vec)\n"
        + "        m: pl.Tile[[8, 32], pl.UINT8, pl.Mem.Vec] = pl.tile.cmps(a, 0.0, cmp_type=4)\n"
        + "        t: pl.Tile[[1, 32], pl.UINT8, pl.Mem.Vec] = pl.tile.create([1, 32], dtype=pl.UINT8, target_memory=pl.Mem.Vec)\n"
        + "        c: pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec] = pl.tile.sel(m, a, b, t)\n"
        + "        o: pl.Tensor[[8, 16], pl.FP32] = pl.tile.store(c, [0, 0], out)\n"
        + "        return o\n"
    )
    assert [c for c, _, _ in findings(base.replace("COLS", "16")) if c == "broadcast-shapes"] == []
    assert ("broadcast-shapes", 12, "'tile.sel' cannot choose between 'a' [8, 16] and 'b' [8, 8]") in findings(base.replace("COLS", "8"))
    with pytest.raises(ValueError, match=r"tile.scatter: \[8\] indices for a \[64\] source; one index per source element"):
        KERNELS["tile.scatter"](torch.zeros(64), torch.ones(64), torch.zeros(8, dtype=torch.int32))


def test_shapes_through_nested_ops_and_unannotated_yields() -> None:
    """``pl.tensor.mul(pl.tensor.exp(pl.tensor.adds(x, 1.0)), y)`` with ``x`` and ``y`` of other
    widths: torch said ``The size of tensor a (64) must match the size of tensor b (32)``; a
    scalar yielded where the loop carries a tensor, through ``a, b = pl.yield_(...)``."""
    nested = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + "    def main(self, x: pl.Tensor[[4, 64], pl.FP32], y: pl.Tensor[[4, COLS], pl.FP32]) -> pl.Tensor[[4, 64], pl.FP32]:\n"
        + "        p: pl.Tensor[[4, 64], pl.FP32] = pl.tensor.mul(pl.tensor.exp(pl.tensor.adds(x, 1.0)), y)\n"
        + "        return p\n"
    )
    assert findings(nested.replace("COLS", "64")) == []
    assert [c for c, _, _ in findings(nested.replace("COLS", "32"))] == ["broadcast-shapes"]
    unpacked = (
        "        for i, (acc, n) in pl.range(4, init_values=(x, r)):\n"
        + f"            acc2: {T} = pl.tensor.adds(acc, 1.0)\n"
        + "            acc3, n2 = pl.yield_(VALUE, n)\n"
    )
    assert findings(_two_functions("self.k(x, r, out)", unpacked.replace("VALUE", "acc2"))) == []
    assert findings(_two_functions("self.k(x, r, out)", unpacked.replace("VALUE", "n"))) == [
        ("wrong-yield", 16, "'acc' carries a tensor, but pl.yield_ hands on 'n' (a scalar)")
    ]


def test_a_sel_mask_that_cannot_choose_between_its_values() -> None:
    """torch said ``The size of tensor a (8) must match the size of tensor b (16)``."""
    import pytest

    from pypto_lsp.exec.kernels import KERNELS

    with pytest.raises(
        ValueError, match=r"sel: a mask of \[8, 8\] \(as \[8, 8\] predicates\) cannot choose between \[8, 16\] and \[8, 16\] values"
    ):
        KERNELS["tile.sel"](torch.ones(8, 8, dtype=torch.bool), torch.zeros(8, 16), torch.ones(8, 16))


def test_what_an_op_with_no_value_gave_is_not_a_number() -> None:
    """``pl.UnknownType`` is what PyPTO gives ``pld.system.notify``/``wait``/``pld.tile.put``'s
    result; no real dump reads one. Read as a number, Python said ``int() argument must be a
    string, a bytes-like object or a real number, not 'NoneType'``."""
    text = _two_functions("self.k(x, VALUE, out)", "        u: pl.UnknownType = pld.system.notify(x, 0, [0, 0], 1)\n")
    assert [c for c, _, _ in findings(text.replace("VALUE", "r"))] == []
    assert findings(text.replace("VALUE", "u")) == [
        ("wrong-argument", 15, "'k' takes a scalar as n, got 'u' (pl.UnknownType: what an op with no value gave)")
    ]


# ---------------------------------------------------------------- stop 62: seeds 4-6 of bench_damaged_dumps

ALLREDUCE = ROOT / "examples" / "allreduce_ranks"


def _task_ids(use: str) -> str:
    """A chain of tasks carrying the previous task id (``task_invalid_branch_chain``); ``use``
    is the statement of the loop body that reads ``prev``."""
    return (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}, out: pl.Out[{T}]) -> {T}:\n"
        + "        prev: pl.Scalar[pl.TASK_ID] = pl.system.task_invalid()\n"
        + "        for step in pl.range(4):\n"
        + "            row: pl.Scalar[pl.INDEX] = step * 1\n"
        + f"            {use}\n"
        + "        return out\n"
    )


def test_a_task_id_is_not_a_number() -> None:
    """A task id orders tasks: as an offset or a bound Python said ``int() argument must be ...
    not 'NoneType'`` (``system.task_invalid``) or ``... not 'TaskToken'`` (a launch's id). An array
    of task ids and ``system.task_is_valid`` take one."""
    load = "t: pl.Tile[[4, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [ROW, 0], [4, 8], [4, 8], target_memory=pl.Mem.Vec)"
    assert findings(_task_ids(load.replace("ROW", "row"))) == []
    text = _task_ids(load.replace("ROW", "prev"))
    assert findings(text) == [
        (
            "wrong-operand",
            line_of(text, "pl.tile.load"),
            "'tile.load' takes a list of scalars as offsets (operand 2), got 'prev' (a task id) in it",
        )
    ]
    assert findings(_task_ids("ok: pl.Scalar[pl.BOOL] = pl.system.task_is_valid(prev)")) == []
    assert (
        findings(
            _task_ids(
                "arr: pl.Array[4, pl.TASK_ID] = pl.array.create(4, dtype=pl.TASK_ID)\n"
                "            arr2: pl.Array[4, pl.TASK_ID] = pl.array.update_element(arr, row, prev)"
            )
        )
        == []
    )
    bound = _task_ids("for j in pl.range(prev):\n                pass")
    assert [c for c, _, _ in findings(bound)] == ["bad-loop-bound"]
    as_count = _task_ids("n: pl.Scalar[pl.INDEX] = pl.system.task_invalid()")
    assert findings(as_count) == [
        (
            "kind-mismatch",
            line_of(as_count, "n: pl"),
            "'n' is annotated as a pl.Scalar[pl.INDEX] but 'system.task_invalid' produces a task id",
        )
    ]


def test_a_pipe_buffer_address_only_initialises_a_pipe() -> None:
    """``system.reserve_buffer``/``import_peer_buffer`` give an INT32 address the allocator chose,
    which pypto-lsp does not model (the run had None: ``int() argument must be ... not
    'NoneType'``). Used to initialise the pipe it is fine; as an offset it is said on its line."""
    text = MATMUL.read_text(encoding="utf-8")
    good = "pl.tile.store(t__tile, [0 + subblock_idx * 16, 0], c__ssa_v0)"
    assert good in text and findings(text) == []
    bad = text.replace(good, "pl.tile.store(t__tile, [0 + subblock_idx * 16, mm_scale_c2v_slot_buffer], c__ssa_v0)")
    assert findings(bad) == [
        (
            "wrong-operand",
            line_of(text, good),
            "'tile.store' takes a list of scalars as offsets (operand 2), got 'mm_scale_c2v_slot_buffer' (the address of a pipe "
            "buffer, from pl.system.reserve_buffer, whose value pypto-lsp does not model) in it",
        )
    ]


def test_a_condition_of_a_tensor_has_no_truth_value() -> None:
    """``not t``, ``a and t``, ``if t:`` of a tensor: Python said ``Boolean value of Tensor with
    more than one value is ambiguous``."""
    body = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        + f"    def main(self, x: {T}, out: pl.Out[{T}]) -> {T}:\n"
        + "        n: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)\n"
        + "        if COND:\n"
        + f"            y: {T} = pl.tensor.adds(x, 1.0)\n"
        + "        return out\n"
    )
    assert findings(body.replace("COND", "n > 2 and not n == 3")) == []
    line = line_of(body, "COND")
    assert findings(body.replace("COND", "x")) == [("bad-condition", line, "the condition tests 'x' (a tensor), which has no truth value")]
    assert findings(body.replace("COND", "n > 2 and not x")) == [
        ("bad-condition", line, "'not' tests 'x' (a tensor), which has no truth value")
    ]
    assert findings(body.replace("COND", "x or n > 2")) == [("bad-condition", line, "'or' tests 'x' (a tensor), which has no truth value")]


def test_mx_scales_and_a_packed_row_vector() -> None:
    """An MX matmul's scales are the left's ``[M, K/32]`` and the right's ``[K/32, N]``; a row
    expansion add's packed vector is 32 bytes a row. torch said ``The size of tensor a (128) must
    match the size of tensor b (64)``."""
    mx = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)\n"
        + "    def k(self, a: pl.Tile[[64, 128], pl.FP8E4M3FN, pl.Mem.Left], sa: pl.Tile[[SA], pl.FP8E8M0, pl.Mem.LeftScale], "
        + "b: pl.Tile[[128, 32], pl.FP8E4M3FN, pl.Mem.Right], sb: pl.Tile[[4, 32], pl.FP8E8M0, pl.Mem.RightScale]) "
        + "-> pl.Tile[[64, 32], pl.FP32, pl.Mem.Acc]:\n"
        + "        c: pl.Tile[[64, 32], pl.FP32, pl.Mem.Acc] = pl.tile.matmul_mx(a, sa, b, sb)\n"
        + "        return c\n"
    )
    assert findings(mx.replace("SA", "64, 4")) == []
    bad = mx.replace("SA", "32, 4")
    assert findings(bad) == [
        (
            "matmul-shapes",
            line_of(bad, "pl.tile.matmul_mx("),
            "'tile.matmul_mx' scales its left operand with 'sa' [32, 4]: a [64, 32] product over K = 128 takes a left scale of [64, 4]",
        )
    ]
    rows = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)\n"
        + "    def k(self, t: pl.Tile[[8, 8], pl.INT32, pl.Mem.Vec], v: pl.Tile[[8, WIDTH], pl.INT32, pl.Mem.Vec]) -> pl.Tile[[8, 8], pl.INT32, pl.Mem.Vec]:\n"
        + "        s: pl.Tile[[8, 8], pl.INT32, pl.Mem.Vec] = pl.tile.row_expand_add(t, v)\n"
        + "        return s\n"
    )
    assert findings(rows.replace("WIDTH", "1")) == [] and findings(rows.replace("WIDTH", "8")) == []  # 8 INT32 = 32 bytes
    assert [c for c, _, _ in findings(rows.replace("WIDTH", "16"))] == ["broadcast-shapes"]


def test_a_rank_that_runs_on_a_tensor_and_a_rank_that_reads_what_no_statement_assigned() -> None:
    """``device=`` names a rank (Python said ``int() argument must be ... not 'WindowView'``); a
    rank's run reading a name no statement assigned keeps its ``rank 0 (fn):`` head and says so."""
    from pypto_lsp.validate.golden import load_bundle

    dump = ALLREDUCE / "passes_dump" / "00_frontend.py"
    text = dump.read_text(encoding="utf-8")
    good = "signal, device=r)"
    assert good in text and findings(text) == []
    assert findings(text.replace(good, "signal, device=data)")) == [
        ("wrong-keyword", line_of(text, good), "'per_rank' runs on the rank 'data' (a tensor)")
    ]
    unbound = text.replace(
        "        for peer in pl.range(4):\n",
        "        for q in pl.range(0):\n"
        "            w: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.adds(local, 1.0)\n"
        "        for peer in pl.range(4):\n",
    ).replace("pl.tile.add(local, r1)", "pl.tile.add(w, r1)")
    assert findings(unbound) == []
    inputs, expected = load_bundle(ALLREDUCE / "golden" / "inputs.pt"), load_bundle(ALLREDUCE / "golden" / "expected.pt")
    r = run_text(unbound, inputs, expected, filename="00_frontend.py", timeout=30)
    assert r.error is not None and r.error.line == line_of(unbound, "pl.tile.add(w, r1)")
    assert r.error.message.startswith("rank ") and "'w' is read, but no statement assigned it in this run" in r.error.message, (
        r.error.message
    )


def test_a_yield_of_other_dims_and_an_argument_of_another_dtype_or_no_window() -> None:
    """A [16, 64] chunk yielded where the loop carries [32, 64], an INT32 flag passed for an FP32
    inbox, a rank's own tensor passed for a window: the run failed later, on the line that read it
    (``shape mismatch for 'y_next'``, ``dtype mismatch for 'got'``, ``a remote op's target is not a
    window``). A call's argument may have other dims than its parameter (issue 34's view)."""
    returns = (ROOT / "examples" / "returns" / "passes_dump" / "00_frontend.py").read_text(encoding="utf-8")
    good = "pl.yield_(y_next)"
    assert good in returns and findings(returns) == []
    assert findings(returns.replace(good, "pl.yield_(chunk)")) == [
        (
            "wrong-yield",
            line_of(returns, good),
            "'y_final' carries a [32, 64] FP32 tensor, but pl.yield_ hands on 'chunk', a [16, 64] FP32 tensor",
        )
    ]
    fence = (ROOT / "examples" / "broken_ranks_fence" / "passes_dump" / "48_after_InsertCommFence.py").read_text(encoding="utf-8")
    call = "inbox, flag, device=r)"
    at = line_of(fence, call)
    assert findings(fence) == []
    assert findings(fence.replace(call, "flag, flag, device=r)")) == [
        ("wrong-argument", at, "'per_rank' takes a tensor of FP32 as inbox, got 'flag', a tensor of INT32")
    ]
    # a rank's own tensor for a window: a warning (a remote op on it fails; one read only here would work)
    local = parse_text(fence.replace(call, "x, flag, device=r)"), "sample.py").program
    assert local is not None
    assert [(d.severity, d.code, d.span.line, d.message) for d in check_program(local)] == [
        (
            "warning",
            "argument-window",
            at,
            "'per_rank' takes a window (pld.DistributedTensor) as inbox, got 'x', a tensor of this rank only",
        ),
        ("error", "wrong-argument", at, "'per_rank' takes a 2-D [1, 64] array as inbox, got 'x', a 3-D [4, 1, 64] one"),
    ]


def test_a_push_takes_a_tile_and_a_tile_loop_starts_from_one_of_its_dims() -> None:
    """A tensor pushed (the gm pipe buffer for the accumulator) was popped as what it is not
    (``shape mismatch for 'acc__tile_Vec': annotated [16, 64], computed [1]``, in the other
    kernel); a [64, 64] tensor as a [16, 64] tile loop's first value failed at the add inside."""
    push = (MATMUL.parent / "25_after_StampTfreeSplit.py").read_text(encoding="utf-8")
    good = "pl.tile.tpush_to_aiv(acc__tile, split=1)"
    assert good in push and findings(push) == []
    assert findings(push.replace(good, "pl.tile.tpush_to_aiv(__gm_pipe_buffer, split=1)")) == [
        ("wrong-operand", line_of(push, good), "'tile.tpush_to_aiv' takes a tile as tile (operand 1), got '__gm_pipe_buffer' (a tensor)")
    ]
    loop = (
        HEAD
        + "    @pl.function(type=pl.FunctionType.InCore)\n"
        + "    def kernel(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:\n"
        + "        init: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.full([16, 64], dtype=pl.FP32, value=0.0)\n"
        + "        for i, (acc,) in pl.range(4, init_values=(INIT,)):\n"
        + "            t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [i * 16, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)\n"
        + "            acc2: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc, t)\n"
        + "            res: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.yield_(acc2)\n"
        + "        out: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(res, [0, 0], c)\n"
        + "        return out\n"
    )
    assert findings(loop.replace("INIT", "init")) == []
    assert findings(loop.replace("INIT", "a")) == [
        (
            "wrong-init-value",
            line_of(loop, "INIT"),
            "'acc' carries a [16, 64] FP32 tile through the loop, but starts as 'a', a [64, 64] FP32 tensor",
        )
    ]


def test_sort32_takes_one_index_per_value() -> None:
    """torch said ``The expanded size of the tensor (64) must match the existing size (32)``."""
    import pytest

    from pypto_lsp.exec.kernels import KERNELS

    with pytest.raises(ValueError, match=r"an index of \[64, 32\] for values of \[32, 64\]: sort32 takes one index per value"):
        KERNELS["tile.sort32"](torch.zeros(32, 64), torch.zeros(64, 32, dtype=torch.int32))


def test_an_argument_of_another_rank_or_dims_and_a_handle_made_by_an_array_op() -> None:
    """A 1-D tensor for a 2-D parameter failed inside the callee (``store/assemble: 2 offsets for a
    2-D source and a 1-D target``): an error at the call. Other dims of the same rank are a
    warning (a kernel may be given a smaller view: issue 34). A ``pl.Ptr`` made by
    ``pl.array.create`` failed at its window (``pld.tensor.window needs a buffer from ...``)."""
    text = _two_functions(
        "self.k(ARG, r, out)",
        "        flat: pl.Tensor[[32], pl.FP32] = pl.tensor.reshape(x, [32])\n        half: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.slice(x, [4, 4], [0, 0])\n",
    )
    at = line_of(text, "self.k(ARG")
    assert findings(text.replace("ARG", "x")) == []
    assert findings(text.replace("ARG", "flat")) == [
        ("wrong-argument", at, "'k' takes a 2-D [4, 8] array as x, got 'flat', a 1-D [32] one")
    ]
    res = parse_text(text.replace("ARG", "half"), "sample.py")
    assert res.program is not None
    assert [(d.severity, d.code, d.message) for d in check_program(res.program)] == [
        ("warning", "argument-shape", "'k' takes [4, 8] as x, got 'half' of [4, 4]: its ops read and write [4, 8]")
    ]
    fence = (ROOT / "examples" / "allreduce_ranks" / "passes_dump" / "00_frontend.py").read_text(encoding="utf-8")
    good = "pld.tensor.alloc_window_buffer(pl.const(256, pl.INT64))"
    assert good in fence and findings(fence) == []
    assert findings(fence.replace(good, "pl.array.create(4, dtype=pl.INT32)")) == [
        ("kind-mismatch", line_of(fence, good), "'data_buf' is annotated as a Ptr but 'array.create' produces a pl.Array")
    ]


def test_a_yield_against_a_carried_type_taken_from_the_first_value_points_at_that_value() -> None:
    """No annotation says what an iter_arg carries: its first value did (here through an outer
    loop's). A yield of another kind is said at the yield, with the first value as related
    information: which of the two a pass got wrong, only the reader knows."""
    text = _two_functions(
        "self.k(x, r, out)",
        "        arr: pl.Array[4, pl.INT32] = pl.array.create(4, dtype=pl.INT32)\n"
        + "        for i, (a,) in pl.range(2, init_values=(FIRST,)):\n"
        + "            for j, (b,) in pl.range(2, init_values=(a,)):\n"
        + "                b2: pl.Array[4, pl.INT32] = pl.array.update_element(b, j, 1)\n"
        + "                b3 = pl.yield_(b2)\n"
        + "            a2 = pl.yield_(b3)\n",
    )
    assert findings(text.replace("FIRST", "arr")) == []
    res = parse_text(text.replace("FIRST", "x"), "sample.py")
    assert res.program is not None
    (d,) = [d for d in check_program(res.program) if d.code == "wrong-yield"]  # (and the update of a tensor, line 17)
    assert (d.code, d.span.line) == ("wrong-yield", line_of(text, "b3 = pl.yield_(b2)")), d
    assert [(r.span.line, r.message) for r in d.related] == [
        (line_of(text, "init_values=(FIRST,)"), "'b' is a tensor from its first value here")
    ]


def test_a_tuple_result_is_checked_item_by_item_on_its_line() -> None:
    """A launch's (or gather_compare's) tuple result of other dims than annotated: read from the
    tuple on the next line, the run said ``shape mismatch for 'dst'`` there, one line late."""
    text = _two_functions(
        "pr[0]",
        "        pr: pl.Tuple[pl.Tensor[[4, ROWS], pl.FP32], pl.Scalar[pl.TASK_ID]] = pl.submit(self.k, x, r, out)\n",
    ).replace(
        "        y: pl.Tensor[[4, 8], pl.FP32] = pr[0]", "        y: pl.Tensor[[4, ROWS], pl.FP32] = pr[0]"
    )  # (as the tuple says: only the run sees it)
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    ok = run_text(text.replace("ROWS", "8"), {"x": x, "out": torch.zeros(4, 8)}, {"out": x})
    assert ok.error is None and ok.status == "pass", ok.error
    r = run_text(text.replace("ROWS", "4"), {"x": x, "out": torch.zeros(4, 8)}, {"out": x})
    assert r.error is not None and r.error.line == line_of(text, "pl.submit("), r.error
    assert r.error.message == "shape mismatch for 'pr[0]': annotated [4, 4], computed [4, 8]"


def test_the_editor_gets_a_findings_related_lines() -> None:
    """The language server sends a static finding's related spans as LSP related information (the
    loop's first value, for a yield checked against the type it gave)."""
    from pypto_lsp.server.results import ir_diagnostic

    text = _two_functions(
        "self.k(x, r, out)",
        "        for i, (a,) in pl.range(2, init_values=(x,)):\n"
        + "            a2: pl.Array[4, pl.INT32] = pl.array.create(4, dtype=pl.INT32)\n"
        + "            a3 = pl.yield_(a2)\n",
    )
    res = parse_text(text, "sample.py")
    assert res.program is not None
    (d,) = [d for d in check_program(res.program) if d.code == "wrong-yield"]
    lsp = ir_diagnostic(d, text.splitlines(), "utf-16", "file:///sample.py")
    assert lsp.range.start.line == line_of(text, "a3 = pl.yield_") - 1
    assert lsp.related_information is not None
    (rel,) = lsp.related_information
    assert (rel.location.uri, rel.location.range.start.line) == ("file:///sample.py", line_of(text, "init_values=(x,)") - 1)
    assert rel.message == "'a' is a tensor from its first value here"


def test_a_task_id_in_deps_read_before_the_statement_that_assigns_it() -> None:
    """Two statements swapped: a launch waits on an id the next line assigns. Only a task waiting
    on its own id (the same statement assigns it) is left to the dependency check; before, this
    one was too, and the run said ``UnboundLocalError`` in Python's words."""
    launch = f"pl.Tuple[{T}, pl.Scalar[pl.TASK_ID]]"
    body = (
        f"        r1: {launch} = pl.submit(self.k, x, r, out)\n"
        + "        t1: pl.Scalar[pl.TASK_ID] = r1[1]\n"
        + f"        r2: {launch} = pl.submit(self.k, x, r, out, deps=[t1])\n"
    )
    assert findings(_two_functions("r2[0]", body)) == []
    lines = body.split("\n")
    swapped = _two_functions("r2[0]", "\n".join([lines[0], lines[2], lines[1], ""]))
    assert findings(swapped) == [
        (
            "used-before-assigned",
            line_of(swapped, "deps=[t1]"),
            f"'t1' is read before it is assigned: the first statement that assigns it is on line {line_of(swapped, 't1: pl.Scalar')}",
        )
    ]


def test_a_store_and_a_call_annotated_with_another_type_than_they_give() -> None:
    """A store or an assemble gives back its destination, a call what its callee returns: an
    annotation of other dims or another dtype made the run convert or fail later, where the value
    was next read (a yield, a call taking it, the output's compare with no line)."""
    returns = (ROOT / "examples" / "returns" / "passes_dump" / "00_frontend.py").read_text(encoding="utf-8")
    good = "y_next: pl.Tensor[[32, 64], pl.FP32] = pl.tensor.assemble"
    at = line_of(returns, good)
    assert findings(returns.replace(good, good.replace("pl.FP32", "pl.FP16"))) == [
        ("dtype-mismatch", at, "'y_next' is annotated with dtype FP16 but 'tensor.assemble' produces FP32")
    ]
    assert findings(returns.replace(good, good.replace("[32, 64]", "[32, 128]")))[0] == (
        "shape-mismatch",
        at,
        "'y_next' is annotated with shape [32, 128] but 'tensor.assemble' produces [32, 64]",
    )  # (and the yield of it, on the next line)
    call = _two_functions("self.k(x, r, out)").replace(f"        y: {T} = self.k", "        y: pl.Tensor[[4, 8], pl.BF16] = self.k")
    assert findings(call) == [("dtype-mismatch", line_of(call, "= self.k("), "'y' is annotated with dtype BF16 but 'k' produces FP32")]


def test_a_slice_and_a_tuple_item_annotated_with_another_type_than_they_give() -> None:
    """A slice is a view of its input, of its dtype; an item of a tuple is what the tuple's own
    annotation says. Another dtype or other dims made the run fail where the value was passed on
    (``'k' takes a tensor of FP32 as x``, a yield one line later)."""
    sliced = _two_functions("self.k(part, r, out)", "        part: pl.Tensor[[4, 8], pl.DT] = pl.tensor.slice(x, [4, 8], [0, 0])\n")
    assert findings(sliced.replace("pl.DT", "pl.FP32")) == []
    at = line_of(sliced, "pl.tensor.slice(")
    assert findings(sliced.replace("pl.DT", "pl.FP16"))[0] == (
        "dtype-mismatch",
        at,
        "'part' is annotated with dtype FP16 but 'tensor.slice' produces FP32",
    )
    launch = f"pl.Tuple[{T}, pl.Scalar[pl.TASK_ID]]"
    item = _two_functions("res", f"        r1: {launch} = pl.submit(self.k, x, r, out)\n        res: pl.Tensor[[DIMS], pl.FP32] = r1[0]\n")
    assert findings(item.replace("DIMS", "4, 8")) == []
    assert findings(item.replace("DIMS", "4, 7")) == [
        ("shape-mismatch", line_of(item, "= r1[0]"), "'res' is annotated with shape [4, 7] but 'r1[0]' produces [4, 8]")
    ]


def test_a_remote_load_annotated_with_another_element_count_than_its_shape() -> None:
    """Ops of no result rule that make an array of their ``shape`` operand (a remote load, a
    window, an extract ...) are held as a load is: the same element count. An edited annotation was
    met by the add that read it, three lines later."""
    dump = (ALLREDUCE / "passes_dump" / "11_after_ConvertTensorToTileOps.py").read_text(encoding="utf-8")
    good = "r1: pl.Tile[[1, 64], pl.FP32] = pld.tile.remote_load(data_v1, p1, [0, 0], [1, 64])"
    assert good in dump and findings(dump) == []
    bad = dump.replace(good, good.replace("r1: pl.Tile[[1, 64]", "r1: pl.Tile[[1, 65]"))
    assert findings(bad)[0] == (
        "shape-mismatch",
        line_of(dump, good),
        "'r1' is annotated with shape [1, 65] but 'pld.tile.remote_load' produces [1, 64]",
    )


def test_an_aiv_shard_is_the_ceil_half_along_its_split_axis() -> None:
    """A lane's part of the cube's tile: half the rows under ``pl.split_aiv(2, mode=UP_DOWN)`` or
    ``split=1``, half the columns under ``split=2`` (PyPTO's DeduceSplitReshape). The run fits the
    part to the annotation, so a wrong one was met a line later, by the op that read it."""
    dump = (ROOT / "examples" / "split_rows" / "passes_dump" / "00_frontend.py").read_text(encoding="utf-8")
    good = "shard: pl.Tensor[[8, 32], pl.FP32] = pl.tensor.aiv_shard(acc)"
    assert good in dump and findings(dump) == []
    bad = dump.replace(good, good.replace("[[8, 32]", "[[16, 32]"))
    assert findings(bad)[0] == (
        "shape-mismatch",
        line_of(dump, good),
        "'shard' is annotated with shape [16, 32] but 'tensor.aiv_shard' produces [8, 32]",
    )
    # split=2 halves the columns
    cols = dump.replace(good, "shard: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.aiv_shard(acc, split=2)")
    assert [c for c, line, _ in findings(cols) if line == line_of(dump, good)] == []
