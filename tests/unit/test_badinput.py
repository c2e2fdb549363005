"""Hostile and broken input: nothing raises, nothing executes, every error is located.

``tests/badinput/`` holds small dumps written for this test, each broken in one way
(file damage, syntax, a Python construct outside the dump grammar, an IR-level
mistake). ``expected.json`` maps each file to the 1-based line and the code of the
first error diagnostic (``code`` may be a list of acceptable codes). Inputs that
are too big for the repository (a 20 MB file, 3000-deep nesting) are generated
into ``tmp_path``.

The corpus files share one 16-line shape (header, import, blank, ``@pl.program``,
class, InCore ``kernel`` on lines 6-11, Orchestration ``main`` on lines 13-16);
most injections sit on line 9 of the kernel body.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pypto_lsp.ir import diagnostics as D
from pypto_lsp.ir.check import check_program
from pypto_lsp.ir.parser import MAX_BYTES, parse_bytes, parse_text

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "badinput"
MANIFEST: dict[str, dict[str, object]] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))

JSON_KEYS = {"line", "column", "end_line", "end_column", "severity", "code", "message"}


def _codes(entry: dict[str, object]) -> list[str]:
    code = entry["code"]
    return [code] if isinstance(code, str) else list(code)  # type: ignore[arg-type]


def diagnose(data: bytes, filename: str = "<test>") -> list[D.Diagnostic]:
    """What ``pypto-lsp check`` computes for one file: parse + static checks, sorted by position."""
    res = parse_bytes(data, filename)
    diags = list(res.diagnostics)
    if res.program is not None:
        diags.extend(check_program(res.program))
    diags.sort(key=lambda d: (d.span.line, d.span.col))
    return diags


def first_error(diags: list[D.Diagnostic]) -> D.Diagnostic:
    errors = [d for d in diags if d.severity == D.ERROR]
    assert errors, f"expected an error diagnostic, got {[(d.severity, d.code, d.message) for d in diags]}"
    return errors[0]


# ---------------------------------------------------------------------- the committed corpus


def test_manifest_lists_every_corpus_file() -> None:
    on_disk = {p.name for p in CORPUS.glob("*.py")}
    assert on_disk == set(MANIFEST), (sorted(on_disk - set(MANIFEST)), sorted(set(MANIFEST) - on_disk))
    assert len(MANIFEST) >= 35
    for name, entry in MANIFEST.items():
        assert isinstance(entry["line"], int) and entry["line"] >= 1, name
        assert _codes(entry), name


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_corpus_file_first_error(name: str) -> None:
    entry = MANIFEST[name]
    diags = diagnose((CORPUS / name).read_bytes(), name)
    err = first_error(diags)
    summary = [(d.span.line, d.code, d.message) for d in diags]
    assert err.span.line == entry["line"], summary
    assert err.code in _codes(entry), summary
    for d in diags:
        assert d.span.line >= 1 and d.span.col >= 0 and d.message


def test_corpus_binary_and_encoding_files_are_what_they_claim() -> None:
    # guard against the corpus being "fixed" by an editor or a text-mode checkout
    assert (CORPUS / "binary_png.py").read_bytes().startswith(b"\x89PNG\r\n\x1a\n\x00")
    assert b"\x00" in (CORPUS / "binary_nul.py").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        (CORPUS / "non_utf8.py").read_bytes().decode("utf-8")
    assert (CORPUS / "empty.py").read_bytes() == b""
    assert (CORPUS / "whitespace_only.py").read_bytes().strip() == b""
    assert b"\t" in (CORPUS / "tab_space_mix.py").read_bytes()


# ---------------------------------------------------------------------- generated inputs

_DEEP_HEAD = (
    "# pypto.program: deep\n"
    "import pypto.language as pl\n"
    "\n"
    "@pl.program\n"
    "class deep:\n"
    "    @pl.function(type=pl.FunctionType.Orchestration)\n"
    "    def main(self, n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:\n"
)
DEEP_LINE = 8  # the line the generated expression sits on


def _deep_program(expr: str) -> str:
    return _DEEP_HEAD + f"        k: pl.Scalar[pl.INDEX] = {expr}\n" + "        return k\n"


def _nested_ifs(depth: int) -> str:
    lines = [f"{'    ' * (2 + i)}if n > {i}:" for i in range(depth)]
    lines.append(f"{'    ' * (2 + depth)}pass")
    return _DEEP_HEAD + "\n".join(lines) + "\n        return n\n"


def _twenty_megabytes() -> bytes:
    stmt = "        t: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Vec)\n"
    head = (
        "# pypto.program: huge\n"
        "import pypto.language as pl\n\n"
        "@pl.program\n"
        "class huge:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        "    def kernel(self, x: pl.Tensor[[32, 64], pl.FP32]):\n"
    )
    n = (20 * 2**20) // len(stmt) + 1
    return (head + stmt * n).encode("ascii")


N = 3000
# name -> (content, acceptable first-error lines, acceptable codes)
GENERATED: dict[str, tuple[bytes | str, set[int], set[str]]] = {
    "deep_parentheses": (_deep_program("(" * N + "n" + ")" * N), {DEEP_LINE}, {"syntax"}),
    "deep_negations": (_deep_program("-(" * N + "n" + ")" * N), {DEEP_LINE}, {"syntax"}),
    "deep_lists": (_deep_program("[" * N + "n" + "]" * N), {DEEP_LINE}, {"syntax"}),
    "deep_calls": (_deep_program("pl.min(" * N + "n" + ", n)" * N), {DEEP_LINE}, {"syntax"}),
    # no brackets: Python's own parser overflows (no position: line 1) or ours does (the statement)
    "deep_bare_unary": (_deep_program("- " * N + "n"), {1, DEEP_LINE}, {"too-deep"}),
    "deep_binop_chain": (_deep_program(" + ".join(["n"] * N)), {1, DEEP_LINE}, {"too-deep"}),
    # flat in Python's ast, N levels deep in the IR: found by the checker at the statement
    "deep_and_chain": (_deep_program(" and ".join(["n"] * N)), {DEEP_LINE}, {"too-deep"}),
    "deep_compare_chain": (_deep_program(" < ".join(["n"] * N)), {DEEP_LINE}, {"too-deep"}),
    # Python allows 100 indentation levels; the 99th nested `if` (2 levels of class/def before it) is one too many
    "deep_if_nesting": (_nested_ifs(150), {DEEP_LINE + 98}, {"indentation", "syntax"}),
    "twenty_megabytes": (_twenty_megabytes(), {1}, {"too-large"}),
}


def _as_bytes(content: bytes | str) -> bytes:
    return content if isinstance(content, bytes) else content.encode("utf-8")


@pytest.fixture
def generated_files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, (content, _, _) in GENERATED.items():
        p = tmp_path / f"{name}.py"
        p.write_bytes(_as_bytes(content))
        out[name] = p
    return out


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_input(name: str, generated_files: dict[str, Path]) -> None:
    _, lines, codes = GENERATED[name]
    data = generated_files[name].read_bytes()
    if name == "twenty_megabytes":
        assert len(data) >= 20 * 2**20 > MAX_BYTES
    err = first_error(diagnose(data, name))
    assert err.span.line in lines, (err.span.line, err.code, err.message)
    assert err.code in codes, (err.span.line, err.code, err.message)


def test_twenty_megabyte_text_is_refused_quickly() -> None:
    text = _twenty_megabytes().decode("ascii")
    res = parse_text(text, "huge.py")
    assert res.program is None
    assert [d.code for d in res.diagnostics] == ["too-large"]


def test_deep_but_legal_nesting_still_parses() -> None:
    # well inside every limit: no diagnostic at all
    res = parse_text(_deep_program("-(" * 150 + "n" + ")" * 150))
    assert res.program is not None and not res.errors
    assert not [d for d in check_program(res.program) if d.severity == D.ERROR]


def test_many_functions_parse_with_correct_name_spans() -> None:
    # regression: the def-name span used to re-split the whole text for every function (quadratic)
    fn = "    @pl.function\n    def f{i}(self, n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:\n        return n\n"
    text = "# pypto.program: P\nimport pypto.language as pl\n\n@pl.program\nclass P:\n" + "".join(fn.format(i=i) for i in range(3000))
    res = parse_text(text)
    assert res.program is not None and len(res.program.functions) == 3000
    assert res.program.functions[-1].name_span.line == 5 + 3 * 2999 + 2


# ---------------------------------------------------------------------- the CLI, once, on everything


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "pypto_lsp", *args],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env=env,
        timeout=240,
    )


def test_cli_json_on_corpus_and_generated_files(generated_files: dict[str, Path]) -> None:
    reps = [generated_files[n] for n in ("twenty_megabytes", "deep_parentheses", "deep_negations", "deep_lists", "deep_and_chain")]
    # a folder scan only picks dumps (a '# pypto.program:' header or a passes_dump folder): name the others
    headerless = [CORPUS / n for n in sorted(MANIFEST) if not (CORPUS / n).read_bytes().startswith(b"# pypto.program:")]
    assert headerless, "the corpus should contain files without a dump header (empty, binary, ...)"
    proc = _run_cli("check", "--json", *map(str, reps + headerless), str(CORPUS))
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    doc = json.loads(proc.stdout)
    assert set(doc) == {"files"}
    files = doc["files"]
    assert isinstance(files, list)
    by_name: dict[str, dict[str, object]] = {}
    for f in files:
        assert set(f) == {"file", "diagnostics"}
        assert isinstance(f["file"], str) and isinstance(f["diagnostics"], list)
        for d in f["diagnostics"]:
            assert set(d) == JSON_KEYS, d
            for k in ("line", "column", "end_line", "end_column"):
                assert isinstance(d[k], int) and d[k] >= 1, d
            assert d["severity"] in ("error", "warning", "information", "hint")
            assert isinstance(d["code"], str) and isinstance(d["message"], str) and d["message"]
        by_name[Path(f["file"]).name] = f
    assert set(by_name) == set(MANIFEST) | {p.name for p in reps}
    for name, entry in MANIFEST.items():
        errors = [d for d in by_name[name]["diagnostics"] if d["severity"] == "error"]  # type: ignore[union-attr]
        assert errors, name
        assert errors[0]["line"] == entry["line"] and errors[0]["code"] in _codes(entry), (name, errors[0])
    for p in reps:
        assert any(d["severity"] == "error" for d in by_name[p.name]["diagnostics"]), p.name  # type: ignore[union-attr]


def test_cli_text_output_single_file() -> None:
    proc = _run_cli("check", str(CORPUS / "ir_unknown_op.py"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert re.search(r"ir_unknown_op\.py:9:\d+: error: .*\[unknown-op\]", proc.stdout), proc.stdout


# ---------------------------------------------------------------------- nothing executes

MARK = "@@MARK@@"


def _payload(marker: Path) -> str:
    """An expression that creates ``marker`` when evaluated (no spaces: fits the header's ``\\S+``)."""
    assert " " not in str(marker) and "'" not in str(marker)
    return f"__import__('pathlib').Path('{marker}').touch()"


_T = "pl.Tensor[[32, 64], pl.FP32]"
_V = "pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec]"
BASE = f"""# pypto.program: inj
import pypto.language as pl

@pl.program
class inj:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: {_T}, y: pl.Out[{_T}]) -> {_T}:
        t: {_V} = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Vec)
        u: {_V} = pl.tile.exp(t)
        y__ssa_v1: {_T} = pl.tile.store(u, [0, 0], y)
        return y__ssa_v1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: {_T}, y: pl.Out[{_T}]) -> {_T}:
        r: {_T} = self.kernel(x, y)
        return r
"""
_U = f"        u: {_V} = pl.tile.exp(t)\n"
_KDEF = f"    def kernel(self, x: {_T}, y: pl.Out[{_T}]) -> {_T}:\n"
_KDEC = "    @pl.function(type=pl.FunctionType.InCore)\n"

# (id, anchor in BASE, replacement); MARK becomes the payload expression
INJECTIONS: list[tuple[str, str, str]] = [
    ("top_level_statement", "import pypto.language as pl\n", f"import pypto.language as pl\n{MARK}\n"),
    ("top_level_assignment", "import pypto.language as pl\n", f"import pypto.language as pl\nX = {MARK}\n"),
    ("top_level_dynamic_dim", "import pypto.language as pl\n", f"import pypto.language as pl\nM = pl.dynamic({MARK})\n"),
    ("top_level_if_main", "import pypto.language as pl\n", f"import pypto.language as pl\nif __name__ == '__main__':\n    {MARK}\n"),
    ("class_decorator", "@pl.program\n", f"@{MARK}\n@pl.program\n"),
    ("class_base", "class inj:", f"class inj({MARK}):"),
    ("class_keyword", "class inj:", f"class inj(metaclass={MARK}):"),
    ("class_body", _KDEC, f"    {MARK}\n{_KDEC}"),
    ("class_body_assignment", _KDEC, f"    helper = {MARK}\n{_KDEC}"),
    ("function_decorator", _KDEC, f"    @{MARK}\n{_KDEC}"),
    ("decorator_keyword", _KDEC, f"    @pl.function(type={MARK})\n"),
    ("default_argument", _KDEF, _KDEF.replace("y: pl.Out[", f"z: {_T} = {MARK}, y: pl.Out[")),
    ("param_annotation", _KDEF, _KDEF.replace("x: pl.Tensor[[32, 64], pl.FP32]", f"x: {MARK}")),
    ("return_annotation", _KDEF, _KDEF.replace(f") -> {_T}:", f") -> {MARK}:")),
    ("assignment_annotation", _U, f"        u: {MARK} = pl.tile.exp(t)\n"),
    ("string_annotation", _U, f'        u: "{MARK}" = pl.tile.exp(t)\n'),
    ("shape_dimension", _U, f"        u: pl.Tile[[{MARK}, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)\n"),
    ("tile_type_item", _U, f"        u: pl.Tile[[32, 64], pl.FP32, {MARK}] = pl.tile.exp(t)\n"),
    ("memref_argument", _U, f"        u: pl.Tile[[32, 64], pl.FP32, pl.MemRef({MARK}, 0, 8192)] = pl.tile.exp(t)\n"),
    ("tileview_argument", _U, f"        u: pl.Tile[[32, 64], pl.FP32, pl.TileView(valid_shape=[{MARK}, 64])] = pl.tile.exp(t)\n"),
    ("function_body_statement", _U, f"        {MARK}\n{_U}"),
    ("function_body_assignment", _U, f"        w: pl.Scalar[pl.INDEX] = {MARK}\n{_U}"),
    ("func_attr", "        t: ", f"        pl.func_attr({{'k': {MARK}}})\n        t: "),
    ("call_argument", _U, f"        u: {_V} = pl.tile.exp({MARK})\n"),
    ("call_keyword", _U, f"        u: {_V} = pl.tile.exp(t, k={MARK})\n"),
    ("call_starred", _U, f"        u: {_V} = pl.tile.exp(*{MARK})\n"),
    ("call_double_star", _U, f"        u: {_V} = pl.tile.exp(t, **{MARK})\n"),
    ("pl_const", _U, f"        w: pl.Scalar[pl.INT32] = pl.const({MARK}, pl.INT32)\n{_U}"),
    ("subscript_index", _U, f"        w: pl.Scalar[pl.INDEX] = t[{MARK}]\n{_U}"),
    ("lambda_body", _U, f"        u: {_V} = pl.tile.exp(lambda: {MARK})\n"),
    ("comprehension", _U, f"        u: {_V} = pl.tile.exp([{MARK} for _ in [0]])\n"),
    ("generator", _U, f"        u: {_V} = pl.tile.exp({MARK} for _ in [0])\n"),
    ("fstring", _U, f'        u: {_V} = pl.tile.exp(f"{{{MARK}}}")\n'),
    ("walrus", _U, f"        u: {_V} = pl.tile.exp((w := {MARK}))\n"),
    ("conditional_expression", _U, f"        u: {_V} = pl.tile.exp(t if {MARK} else t)\n"),
    ("loop_iterator", _U, f"        for i in {MARK}:\n            pass\n{_U}"),
    ("loop_bound", _U, f"        for i in pl.range({MARK}):\n            pass\n{_U}"),
    ("loop_init_values", _U, f"        for i, (a,) in pl.range(4, init_values=({MARK},)):\n            a__rv: {_V} = pl.yield_(a)\n{_U}"),
    ("while_test", _U, f"        while {MARK}:\n            break\n{_U}"),
    (
        "ssa_while_cond",
        _U,
        f"        for (k,) in pl.while_(init_values=(0,)):\n            pl.cond({MARK})\n            k__rv: pl.Scalar[pl.INDEX] = pl.yield_(k)\n{_U}",
    ),
    ("if_test", _U, f"        if {MARK}:\n            pass\n{_U}"),
    ("with_item", _U, f"        with {MARK}:\n            pass\n{_U}"),
    ("with_scope_argument", _U, f"        with pl.at(level={MARK}):\n            pass\n{_U}"),
    ("try_handler", _U, f"        try:\n            pass\n        except {MARK}:\n            pass\n{_U}"),
    ("assert", _U, f"        assert {MARK}\n{_U}"),
    ("yield_value", _U, f"        if t:\n            w: {_V} = pl.yield_({MARK})\n        else:\n            w: {_V} = pl.yield_(t)\n{_U}"),
    ("return_value", "        return y__ssa_v1\n", f"        return {MARK}\n"),
    ("self_call_argument", "self.kernel(x, y)", f"self.kernel(x, {MARK})"),
    ("self_call_attrs", "self.kernel(x, y)", f"self.kernel(x, y, attrs={{'dump_vars': [{MARK}]}})"),
    ("submit_argument", "        r: ", f"        r0, tid = pl.submit(self.kernel, x, {MARK})\n        r: "),
    ("nested_function", _U, f"        def helper(a={MARK}):\n            return {MARK}\n{_U}"),
    ("nested_class", _U, f"        class Helper:\n            v = {MARK}\n{_U}"),
]


def _inject(case: tuple[str, str, str], payload: str) -> str:
    _, anchor, replacement = case
    assert anchor in BASE, case[0]
    return BASE.replace(anchor, replacement.replace(MARK, payload), 1)


def _compile_text():  # type: ignore[no-untyped-def]
    try:
        from pypto_lsp.validate.engine import compile_text
    except Exception:  # torch or the engine unavailable: parse + check still run
        return None
    return compile_text


def test_payload_is_live(tmp_path: Path) -> None:
    """Positive control: the payload, evaluated on purpose here, does create its marker."""
    control = tmp_path / "CONTROL"
    eval(compile(_payload(control), "<control>", "eval"))  # our own constant string, not dump text
    assert control.exists()


def test_clean_base_has_no_error() -> None:
    res = parse_text(BASE)
    assert res.program is not None and not res.errors
    assert not [d for d in check_program(res.program) if d.severity == D.ERROR]


@pytest.mark.parametrize("case", INJECTIONS, ids=[c[0] for c in INJECTIONS])
def test_injection_never_executes(case: tuple[str, str, str], tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    text = _inject(case, _payload(marker))
    path = tmp_path / f"{case[0]}.py"
    path.write_text(text, encoding="utf-8")
    diags = diagnose(path.read_bytes(), str(path))
    assert any(d.severity == D.ERROR for d in diags), f"{case[0]}: payload accepted silently"
    res = parse_text(text, str(path))
    if res.program is not None:
        check_program(res.program, entry="main")
        check_program(res.program, entry="kernel")
    compile_text = _compile_text()
    if compile_text is not None:
        comp = compile_text(text, str(path))
        assert comp.error is not None, f"{case[0]}: compiled although it is outside the grammar"
    assert not marker.exists(), f"{case[0]}: dump text was executed"


def test_injection_cli_never_executes(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    folder = tmp_path / "dumps"
    folder.mkdir()
    for case in INJECTIONS:
        (folder / f"{case[0]}.py").write_text(_inject(case, _payload(marker)), encoding="utf-8")
    proc = _run_cli("check", "--json", str(folder))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(json.loads(proc.stdout)["files"]) == len(INJECTIONS)
    assert not marker.exists()


def test_payload_in_string_positions_compiles_and_runs_inert(tmp_path: Path) -> None:
    """Payloads where the grammar allows free text (header, comments, docstrings, string
    literals of attrs/name hints/memref bases): the dump is valid, compiles and runs,
    and the payload stays data."""
    marker = tmp_path / "PWNED"
    p = _payload(marker)
    escape = "'); " + p + "; ('"  # tries to close a naively quoted emission
    text = BASE.replace("# pypto.program: inj", f"# pypto.program: inj;{p}#")
    text = text.replace("import pypto.language as pl\n", f"import pypto.language as pl\n# {p}\n")
    text = text.replace("class inj:\n", f'class inj:\n    """{p}"""\n')
    text = text.replace(
        "        t: ",
        f'        pl.func_attr({{"note": "{p}", "esc": "{escape}", "nl": "\\n{p}\\n"}})\n        """{escape}"""\n        t: ',
        1,
    )
    text = text.replace(
        f"        r: {_T} = self.kernel(x, y)\n",
        f'        with pl.at(level=pl.Level.CORE_GROUP, name_hint="{escape}"):\n'
        f'            r: {_T} = self.kernel(x, y, attrs={{"dump_vars": ["{escape}"], "{escape}": "\\n{p}"}})\n',
    )
    res = parse_text(text)
    assert res.program is not None and not res.errors, [(d.span.line, d.message) for d in res.errors]
    assert not [d for d in check_program(res.program) if d.severity == D.ERROR]
    compile_text = _compile_text()
    if compile_text is None:
        pytest.skip("pypto_lsp.validate.engine is not importable here")
    comp = compile_text(text, "inj.py")
    assert comp.error is None, comp.error
    import torch

    from pypto_lsp.validate.engine import run_text

    x = torch.linspace(-1.0, 1.0, 32 * 64).reshape(32, 64)
    result = run_text(text, {"x": x, "y": torch.zeros(32, 64)}, {"y": torch.exp(x)})
    assert result.status == "pass", result.error
    assert not marker.exists()
