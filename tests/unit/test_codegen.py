"""``torch_codegen`` / ``generate``: standalone scripts, the source map, sanitised names, escaped literals."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch

from pypto_lsp import load, loads, torch_codegen
from pypto_lsp.exec.codegen import GeneratedCode, generate
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.golden import load_bundle
from pypto_lsp.validate.returned import returned_tensors
from pypto_lsp.validate.run_errors import locate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLE_DUMPS = sorted(EXAMPLES.glob("*/passes_dump/*.py"))

ORCH_DECO = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"
INCORE_DECO = "@pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)"


def program(name: str, *functions: str) -> str:
    body = ""
    for fn in functions:
        for line in fn.strip("\n").splitlines():
            body += ("    " + line if line.strip() else "") + "\n"
    return f"# pypto.program: {name}\nimport pypto.language as pl\n\n@pl.program\nclass {name}:\n" + body


def fn(deco: str, signature: str, *body: str) -> str:
    return "\n".join([deco, f"def {signature}:", *("    " + b for b in body)])


def line_of(text: str, needle: str) -> int:
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def _goldens(dump: Path) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    from pypto_lsp.validate.config import discover_dumps, find_case
    from pypto_lsp.validate.differential import for_case

    case = find_case(dump)
    if case.has_goldens:
        assert case.inputs is not None and case.expected is not None
        return load_bundle(case.inputs), load_bundle(case.expected)
    # an example without goldens (gather_rows): its frontend on synthesized inputs, as validate does
    ref = for_case(discover_dumps(dump.parent), case, entry=case.settings.entry, timeout=None, use_cache=False)
    return ref.inputs, ref.expected


def _entry_args(gen: GeneratedCode, text: str, tensors: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """Entry arguments by parameter name (``x__ssa_v0`` -> ``x``), as the debug guide passes them."""
    prog = loads(text)
    assert gen.entry is not None
    entry = prog.function(gen.entry)
    assert entry is not None
    return [tensors[re.sub(r"__ssa_v\d+$", "", p.name)] for p in entry.params]


# ---------------------------------------------------------------------- standalone scripts


@pytest.mark.parametrize("dump", [p for p in EXAMPLE_DUMPS if "broken" not in str(p)], ids=lambda p: f"{p.parents[1].name}/{p.stem}")
def test_generated_script_runs_standalone_like_the_debug_guide(dump: Path) -> None:
    text = dump.read_text()
    program_ = load(dump)
    inputs, expected = _goldens(dump)
    tensors = {k: v.clone() for k, v in inputs.items()}
    gen = generate(program_)
    code = torch_codegen(program_)
    assert code == gen.source
    ns: dict[str, object] = {}
    exec(code, ns)  # exactly as PyPTO's debug guide does it
    entry = ns[gen.entry]  # type: ignore[index]
    returned = returned_tensors(entry(*_entry_args(gen, text, tensors)))  # type: ignore[operator]
    got = {**tensors, **returned}  # a program that returns its result: under 'return' (docs/goldens.md)
    for key, want in expected.items():
        assert torch.allclose(got[key], want, rtol=5e-2, atol=5e-2), (key, (got[key] - want).abs().max())
        if key in inputs:
            assert not torch.equal(tensors[key], inputs[key])  # the output was mutated in place
    for key, before in inputs.items():
        if key not in expected:
            assert torch.equal(tensors[key], before)  # inputs untouched


def test_broken_example_script_runs_but_differs() -> None:
    dump = EXAMPLES / "broken_elementwise" / "passes_dump" / "11_after_ConvertTensorToTileOps.py"
    inputs, expected = _goldens(dump)
    tensors = {k: v.clone() for k, v in inputs.items()}
    ns: dict[str, object] = {}
    exec(torch_codegen(load(dump)), ns)
    ns["exp_add_mul"](tensors["x"], tensors["y"], tensors["out"])  # type: ignore[operator]
    assert torch.allclose(tensors["out"][:32], expected["out"][:32], rtol=5e-2, atol=5e-2)
    assert not torch.allclose(tensors["out"][32:], expected["out"][32:], rtol=5e-2, atol=5e-2)


def test_script_imports_its_runtime_instead_of_a_preamble() -> None:
    dump = EXAMPLES / "elementwise" / "passes_dump" / "11_after_ConvertTensorToTileOps.py"
    code = torch_codegen(load(dump))
    assert "import pypto_lsp.exec.runtime as _pl_rt" in code.splitlines()
    ir_lines = len(dump.read_text().splitlines())
    # the loop twice: over all its iterations at once (exec.sweep), and as written
    assert "_pl_sweeps.Sweep(" in code
    assert len(code.splitlines()) < 3 * ir_lines + 20
    tree = ast.parse(code)
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [a.name for n in imports for a in n.names] == ["pypto_lsp.exec.runtime", "pypto_lsp.exec.sweep"]
    # the script as written, for the editor's "show generated code" with exact on
    exact = generate(load(dump), exact=True).source
    assert len(exact.splitlines()) < 2 * ir_lines + 20 and "_pl_sweeps" not in exact


def test_check_shapes_false_omits_the_checks() -> None:
    dump = EXAMPLES / "elementwise" / "passes_dump" / "11_after_ConvertTensorToTileOps.py"
    prog = load(dump)
    checked = torch_codegen(prog, check_shapes=True)
    assert "_pl_chs(" in checked  # (static annotations: one constant names each; see the next test)
    code = torch_codegen(prog, check_shapes=False)
    assert "_pl_chk(" not in code and "_pl_chs(" not in code
    inputs, expected = _goldens(dump)
    tensors = {k: v.clone() for k, v in inputs.items()}
    ns: dict[str, object] = {}
    exec(code, ns)
    ns["exp_add_mul"](tensors["x"], tensors["y"], tensors["out"])  # type: ignore[operator]
    assert torch.allclose(tensors["out"], expected["out"], rtol=5e-2, atol=5e-2)


def test_generation_is_deterministic() -> None:
    dump = EXAMPLES / "mixed_matmul" / "passes_dump" / "25_after_StampTfreeSplit.py"
    assert torch_codegen(load(dump)) == torch_codegen(load(dump))


# ---------------------------------------------------------------------- source map


def _statements_in_functions(tree: ast.Module) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.append(node)
            for sub in ast.walk(node):
                if isinstance(sub, ast.stmt) and sub is not node:
                    out.append(sub)
    return out


@pytest.mark.parametrize("dump", EXAMPLE_DUMPS, ids=lambda p: f"{p.parents[1].name}/{p.stem}")
def test_every_generated_statement_maps_to_an_ir_line(dump: Path) -> None:
    text = dump.read_text()
    gen = generate(load(dump))
    n_ir = len(text.splitlines())
    tree = ast.parse(gen.source)
    stmts = _statements_in_functions(tree)
    assert stmts
    for s in stmts:
        span = gen.ir_span(s.lineno)
        assert span is not None, (s.lineno, gen.source.splitlines()[s.lineno - 1])
        assert 1 <= span.line <= n_ir
    # module-level glue (imports, kernel lookups, aliases) is ours: no IR line
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            assert gen.ir_span(node.lineno) is None
    assert gen.ir_span(0) is None and gen.ir_span(len(gen.line_map) + 5) is None


@pytest.mark.parametrize("dump", EXAMPLE_DUMPS, ids=lambda p: f"{p.parents[1].name}/{p.stem}")
def test_op_calls_map_to_the_line_of_that_op(dump: Path) -> None:
    """A generated line calling the kernel of ``tile.exp`` maps to an IR line that calls ``pl.tile.exp``."""
    ir = dump.read_text().splitlines()
    gen = generate(load(dump))
    symbols = dict(re.findall(r"^(_pl_op_\w+) = _pl_rt\.kernel\('([\w.]+)'\)$", gen.source, re.M))
    assert symbols
    checked = 0
    for i, line in enumerate(gen.source.splitlines(), 1):
        if line.startswith("_pl_op_"):
            continue
        for sym in re.findall(r"\b_pl_op_\w+(?=\()", line):
            span = gen.ir_span(i)
            assert span is not None
            op = symbols[sym]
            root = "" if op.startswith("pld.") else "pl."  # pld.* ops print with their bare root
            printed = root + op + ("_" if op.rsplit(".", 1)[-1] in ("and", "or", "not") else "") + "("
            assert printed in ir[span.line - 1], (line, ir[span.line - 1])
            checked += 1
    assert checked > 0


def test_function_def_lines_map_to_the_ir_def() -> None:
    dump = EXAMPLES / "mixed_matmul" / "passes_dump" / "25_after_StampTfreeSplit.py"
    ir = dump.read_text().splitlines()
    gen = generate(load(dump))
    for i, line in enumerate(gen.source.splitlines(), 1):
        if line.startswith("def "):
            span = gen.ir_span(i)
            assert span is not None and ir[span.line - 1].lstrip().startswith("def "), (line, span)


def test_a_runtime_exception_is_located_at_its_ir_line() -> None:
    sig = "x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]"
    text = program(
        "Boom",
        fn(
            INCORE_DECO,
            "k(" + sig + ") -> pl.Tensor[[8, 8], pl.FP32]",
            "a__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 8], [8, 8], target_memory=pl.Mem.Vec)",
            "b__tile: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [4, 4], [4, 4], target_memory=pl.Mem.Vec)",
            "for i in pl.range(2):",
            "    c__tile: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.mul(a__tile, b__tile)",
            "return y",
        ),
        fn(
            ORCH_DECO,
            "main(self, " + sig + ") -> pl.Tensor[[8, 8], pl.FP32]",
            "y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = self.k(x, y)",
            "return y__ssa_v1",
        ),
    )
    gen = generate(loads(text), filename="<boom>")
    ns: dict[str, object] = {}
    exec(compile(gen.source, gen.filename, "exec"), ns)
    with pytest.raises(RuntimeError) as info:
        ns["main"](torch.zeros(8, 8), torch.zeros(8, 8))  # type: ignore[operator]
    span = locate(info.value, gen)
    assert span is not None and span.line == line_of(text, "pl.tile.mul(a__tile, b__tile)")
    assert text.splitlines()[span.line - 1][span.col :].startswith("c__tile")


# ---------------------------------------------------------------------- sanitised identifiers

_NASTY_NAMES = [
    "range",
    "min",
    "max",
    "abs",
    "int",
    "float",
    "len",
    "print",
    "type",
    "object",
    "_pl_rt",
    "_pl_chk",
    "_pl_op_tile_exp",
    "_pl_dt_FP32",
    "_pl_fn_main",
    "_pl_args",
    "_pl_unused",
    "v_1",
]


def _nasty_program() -> str:
    """Variables named after builtins and runtime names, in a program that needs range/min/the runtime."""
    sig = "x: pl.Tensor[[16, 8], pl.FP32], y: pl.Out[pl.Tensor[[16, 8], pl.FP32]]"
    body = []
    for i, n in enumerate(_NASTY_NAMES):
        body.append(f"{n}: pl.Scalar[pl.INDEX] = {i}")
    body += [
        "for i, (acc__iter_v1,) in pl.range(0, 16, 8, init_values=(y,)):",
        "    rows: pl.Scalar[pl.INDEX] = pl.min(16 - i, 8)",
        "    _pl_op_tile_load: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [i, 0], [8, 8], [rows, 8], target_memory=pl.Mem.Vec)",
        "    e: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.exp(_pl_op_tile_load)",
        "    acc__ssa_v2: pl.Tensor[[16, 8], pl.FP32] = pl.tile.store(e, [i, 0], acc__iter_v1)",
        "    acc__rv_v3: pl.Tensor[[16, 8], pl.FP32] = pl.yield_(acc__ssa_v2)",
        "return acc__rv_v3",
    ]
    return program(
        "Nasty",
        fn(INCORE_DECO, "k(" + sig + ") -> pl.Tensor[[16, 8], pl.FP32]", *body),
        fn(
            ORCH_DECO,
            "main(self, " + sig + ") -> pl.Tensor[[16, 8], pl.FP32]",
            "y__ssa_v1: pl.Tensor[[16, 8], pl.FP32] = self.k(x, y)",
            "return y__ssa_v1",
        ),
    )


def test_ir_variable_names_that_shadow_builtins_or_runtime_names_are_renamed() -> None:
    text = _nasty_program()
    gen = generate(loads(text))
    tree = ast.parse(gen.source)
    defined_in_functions = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    defined_in_functions.add(sub.id)
    for n in [
        "range",
        "min",
        "max",
        "abs",
        "int",
        "float",
        "len",
        "print",
        "type",
        "object",
        "_pl_rt",
        "_pl_chk",
        "_pl_op_tile_exp",
        "_pl_dt_FP32",
    ]:
        assert n not in defined_in_functions, n
    assert "acc__iter_v1" in defined_in_functions  # ordinary names are kept
    x = torch.randn(16, 8)
    y = torch.zeros(16, 8)
    ns: dict[str, object] = {}
    exec(gen.source, ns)
    ns["main"](x, y)  # type: ignore[operator]
    assert torch.allclose(y, torch.exp(x))
    r = run_text(text, {"x": x, "y": torch.zeros(16, 8)}, {"y": torch.exp(x)})
    assert r.status == "pass", r.error


def _function_named(name: str) -> str:
    sig = "x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]"
    return program(
        "FnNames",
        fn(
            INCORE_DECO,
            f"{name}({sig}) -> pl.Tensor[[8, 8], pl.FP32]",
            "t: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [8, 8], [pl.min(8, 9), 8], target_memory=pl.Mem.Vec)",
            "u: pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)",
            "y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = pl.tile.store(u, [0, 0], y)",
            "return y__ssa_v1",
        ),
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> pl.Tensor[[8, 8], pl.FP32]",
            "for i in pl.range(2):",
            f"    y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = self.{name}(x, y)",
            "return y",
        ),
    )


@pytest.mark.parametrize("name", ["k", "abs", "len", "_pl_fn_main", "main_1"])
def test_harmless_function_names(name: str) -> None:
    text = _function_named(name)
    x = torch.randn(8, 8)
    r = run_text(text, {"x": x, "y": torch.zeros(8, 8)}, {"y": torch.exp(x)})
    assert r.status == "pass", r.error
    ns: dict[str, object] = {}
    exec(torch_codegen(loads(text)), ns)
    y = torch.zeros(8, 8)
    ns["main"](x, y)  # type: ignore[operator]
    assert torch.allclose(y, torch.exp(x))


def test_static_annotations_are_named_by_what_they_hold() -> None:
    """A static annotation's (shape, dtype, valid) is one module constant named by its content: the
    same name in every script, so a function left as it was prints (and compiles) as it did; a
    valid region that names a scalar keeps the check spelt out on its line."""
    sig = "x: pl.Tensor[[16, 8], pl.FP32], k: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor[[16, 8], pl.FP32]]"
    text = program(
        "Specs",
        fn(
            INCORE_DECO,
            f"kern({sig}) -> pl.Tensor[[16, 8], pl.FP32]",
            "a: pl.Tile[[16, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 8], [16, 8], target_memory=pl.Mem.Vec)",
            "b: pl.Tile[[16, 8], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[16, 4])] = pl.tile.exp(a)",
            "c: pl.Tile[[16, 8], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[16, k])] = pl.tile.exp(a)",
            "y__ssa_v1: pl.Tensor[[16, 8], pl.FP32] = pl.tile.store(a, [0, 0], y)",
            "return y__ssa_v1",
        ),
        fn(
            ORCH_DECO,
            "main(self, x: pl.Tensor[[16, 8], pl.FP32], y: pl.Out[pl.Tensor[[16, 8], pl.FP32]]) -> pl.Tensor[[16, 8], pl.FP32]",
            "y__ssa_v1: pl.Tensor[[16, 8], pl.FP32] = self.kern(x, 4, y)",
            "return y__ssa_v1",
        ),
    )
    code = torch_codegen(loads(text))
    assert "_pl_c_16x8_FP32 = ((16, 8, ), _pl_dt_FP32, None)" in code
    assert "_pl_c_16x8_FP32, 'a')" in code
    assert "_pl_c_16x8_FP32_v16x4 = ((16, 8, ), _pl_dt_FP32, (16, 4, ))" in code
    assert "_pl_chk(" in code and "'c')" in code  # c's valid region names k: spelt out
    x = torch.randn(16, 8)
    r = run_text(text, {"x": x, "y": torch.zeros(16, 8)}, {"y": x})
    assert r.status == "pass", (r.error.kind, r.error.message) if r.error else r.status


@pytest.mark.parametrize("name", ["range", "min", "_pl_rt", "_pl_chk", "_pl_op_tile_exp"])
def test_function_names_that_shadow_generated_globals(name: str) -> None:
    """Regression: the module-level alias '<IR function name> = _pl_fn_<name>' rebound builtins the script
    uses (range, min) and runtime globals (_pl_rt, _pl_chk, _pl_op_*), breaking every later use."""
    text = _function_named(name)
    x = torch.randn(8, 8)
    r = run_text(text, {"x": x, "y": torch.zeros(8, 8)}, {"y": torch.exp(x)})
    assert r.status == "pass", (r.error.kind, r.error.message) if r.error else r.status


# ---------------------------------------------------------------------- literals

_PAYLOAD = "a'b\"c\\d\nnew line\r\t'''\"\"\" ); __import__('os').system('true') #"


def test_string_literals_are_escaped_and_round_trip() -> None:
    sig = "x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]"
    literal = repr(_PAYLOAD)
    text = program(
        "Strings",
        fn(
            INCORE_DECO,
            f"k({sig}) -> pl.Tensor[[4, 4], pl.FP32]",
            f"buf: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name={literal}, size=16384, base=-1)",
            f"imp: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name={literal}, peer_func={literal})",
            "y__ssa_v1: pl.Tensor[[4, 4], pl.FP32] = pl.tile.store(pl.tile.load(x, [0, 0], [4, 4], [4, 4], target_memory=pl.Mem.Vec), [0, 0], y)",
            "return y__ssa_v1",
        ),
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> pl.Tensor[[4, 4], pl.FP32]",
            "y__ssa_v1: pl.Tensor[[4, 4], pl.FP32] = self.k(x, y)",
            "return y__ssa_v1",
        ),
    )
    gen = generate(loads(text))
    # no raw line break from the literal reaches the script: statement lines stay one line each
    assert "\r" not in gen.source
    assert not any(ln.startswith("new line") for ln in gen.source.splitlines())
    tree = ast.parse(gen.source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in ("name", "peer_func"):
                    found.append(ast.literal_eval(ast.get_source_segment(gen.source, kw.value) or ""))
    assert found == [_PAYLOAD] * 3
    x = torch.randn(4, 4)
    r = run_text(text, {"x": x, "y": torch.zeros(4, 4)}, {"y": x})
    assert r.status == "pass", r.error


def test_float_literals_are_emitted_exactly() -> None:
    sig = "x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]"
    text = program(
        "Floats",
        fn(
            ORCH_DECO,
            f"main(self, {sig}) -> pl.Tensor[[4, 4], pl.FP32]",
            "a: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.muls(x, 0.10000000000000001)",
            "b: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.adds(a, 1e-07)",
            "y: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(y, b, [0, 0])",
            "return y",
        ),
    )
    gen = generate(loads(text))
    consts = [n.value for n in ast.walk(ast.parse(gen.source)) if isinstance(n, ast.Constant) and isinstance(n.value, float)]
    assert 0.1 in consts and 1e-07 in consts
