"""Property-based fuzzing (hypothesis) of the two readers of hostile input, on the repo's own
examples/ (a clean clone runs it): the dump parser and the config loader (validate/config.py).

* the parser (+ static and memory checks): damaged example dumps and raw text never raise, and
  every diagnostic points inside the file;
* the config loader: any TOML document, and any text at all, is cases or a ConfigError naming
  the file, never another exception (find_case, config_warnings too); the one case writer
  (case_writer.write_case) writes what reads back as the same case, or refuses with ConfigError.

Quick in CI (``PYPTO_LSP_FUZZ_EXAMPLES``, default 40 per test, derandomized). For a long run:
``PYPTO_LSP_FUZZ_EXAMPLES=20000 PYPTO_LSP_FUZZ_RANDOM=1 pytest tests/adversarial/test_fuzz_sweep2.py``.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pypto_lsp.ir.check import check_program
from pypto_lsp.ir.memory import check_memory
from pypto_lsp.ir.parser import parse_bytes
from pypto_lsp.validate import case_writer
from pypto_lsp.validate import config as cfg

from .examples_case import EXAMPLES

N = int(os.environ.get("PYPTO_LSP_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=N,
    deadline=None,
    derandomize=not os.environ.get("PYPTO_LSP_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=list(HealthCheck),
)
SEEDS = [p.read_bytes() for p in sorted(EXAMPLES.glob("*/passes_dump/*.py"))]
TOKENS = [
    *(b"()[]{}:,=.-#'\"\\\t\n\r\x00\x0c\xff"[i : i + 1] for i in range(24)),
    b"    ",
    b"\r\n",
    b'"""',
    b"\xef\xbb\xbf",
    b"\xe2\x82",
    b"pl.",
    b"pl.tile.",
    b"pl.Tensor[[",
    b"pl.Tile[[",
    b"pl.Out[",
    b"pl.FP32",
    b"pl.range(",
    b"pl.yield_(",
    b"pl.tensor.create([100000, 100000], dtype=pl.FP32)",
    b"for i in pl.range(4):",
    b"with pl.at(level=pl.Level.CORE_GROUP):",
    b"@pl.function",
    b"def ",
    b"class ",
    b"return",
    b"lambda: 0",
    b"__import__('os')",
    b"9" * 400,
    b"1e999",
    b"-0x" + b"f" * 40,
    b"(" * 200,
    b"...",
]
_NL = re.compile(rb"\r\n|\r|\n")


def assert_sane(data: bytes) -> None:
    res = parse_bytes(data, "fuzz.py")
    diags = list(res.diagnostics)
    if res.program is not None:
        diags += check_program(res.program)
        diags += check_memory(res.program)
    n = len(_NL.split(data))
    for d in diags:
        assert d.severity in ("error", "warning", "information", "hint") and d.code and d.message, d
        assert d.span.line == 1 or 1 <= d.span.line <= n, (d.span, n, d.code, d.message)


@st.composite
def damaged_dump(draw: st.DrawFn) -> bytes:
    data = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        lines = data.split(b"\n")
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "indent", "token", "truncate", "byte", "word"]))
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        if kind == "delete" and lines:
            del lines[i]
        elif kind == "duplicate" and lines:
            lines.insert(i, lines[i])
        elif kind == "swap" and lines:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "indent" and lines:
            lines[i] = b" " * draw(st.integers(1, 9)) + lines[i]
        data = b"\n".join(lines)
        pos = draw(st.integers(0, len(data)))
        if kind == "token":
            data = data[:pos] + draw(st.sampled_from(TOKENS)) + data[pos:]
        elif kind == "truncate":
            data = data[:pos]
        elif kind == "byte" and data:
            p = min(pos, len(data) - 1)
            data = data[:p] + bytes([draw(st.integers(0, 255))]) + data[p + 1 :]
        elif kind == "word":
            words = re.findall(rb"[A-Za-z_]\w*|\d+", data)
            if words:
                data = data.replace(draw(st.sampled_from(words)), draw(st.sampled_from(words)), 1)
    return data


@FUZZ
@given(damaged_dump())
def test_the_parser_survives_damaged_dumps(data: bytes) -> None:
    assert_sane(data)


@FUZZ
@given(st.one_of(st.binary(max_size=2000), st.text(max_size=2000).map(lambda s: s.encode("utf-8", "surrogatepass"))))
def test_the_parser_survives_any_bytes(data: bytes) -> None:
    assert_sane(data)


# ---------------------------------------------------------------------- the config loader

_text = st.text(max_size=30)  # control characters, emoji, surrogates are in there
scalar = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    _text,
    st.sampled_from(["passes_dump", "golden/inputs.pt", "4G", "1K", "9" * 400, "-1", "inf", "910B", "exp_add_mul", "", "../.."]),
)
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3), max_leaves=8)
KEYS = sorted(cfg.CASE_KEYS) + ["rtoll", "timeout", "cases", "tool"]
case_table = st.dictionaries(st.one_of(st.sampled_from(KEYS), _text), value, max_size=8)
document = st.one_of(
    st.fixed_dictionaries({"cases": st.lists(case_table, max_size=3)}),
    st.fixed_dictionaries({"cases": value}),
    st.dictionaries(st.one_of(st.sampled_from(["cases", "tool"]), _text), value, max_size=3),
)


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text, encoding="utf-8")
    except UnicodeEncodeError:
        path.write_bytes(text.encode("utf-8", "surrogatepass"))  # not UTF-8: the loader must say so
    return True


def _load_everything(config: Path, dumps: Path) -> None:
    try:
        cfg.cases_in(config)
    except cfg.ConfigError as exc:
        assert str(config) in str(exc)
    cfg.config_warnings(config)
    try:
        cfg.find_case(dumps / "00_frontend.py", config)
    except cfg.ConfigError:
        pass
    try:
        cfg.find_case(dumps / "00_frontend.py")  # walking up finds it
    except cfg.ConfigError:
        pass


@FUZZ
@given(doc=document, pyproject=st.booleans())
def test_the_config_loader_takes_any_toml_document(tmp_path_factory: Any, doc: dict[str, Any], pyproject: bool) -> None:
    root = tmp_path_factory.mktemp("cfg")
    dumps = root / "passes_dump"
    dumps.mkdir()
    (dumps / "00_frontend.py").write_bytes(SEEDS[0])
    if pyproject:
        doc = {"tool": {"pypto-lsp": doc}}
    try:
        text = tomli_w.dumps(doc)
    except (TypeError, ValueError):
        return  # not a TOML document (NaN keys ...): nothing to load
    config = root / ("pyproject.toml" if pyproject else "pypto-lsp.toml")
    _write(config, text)
    _load_everything(config, dumps)


@FUZZ
@given(st.one_of(st.text(max_size=400), st.binary(max_size=400).map(lambda b: b.decode("latin-1"))))
def test_the_config_loader_takes_any_text(tmp_path_factory: Any, text: str) -> None:
    root = tmp_path_factory.mktemp("cfg")
    dumps = root / "passes_dump"
    dumps.mkdir()
    (dumps / "00_frontend.py").write_bytes(SEEDS[0])
    config = root / "pypto-lsp.toml"
    _write(config, "[[cases]]\ndumps = 'passes_dump'\n" + text)
    _load_everything(config, dumps)


finite = st.one_of(st.integers(0, 2**62), st.floats(min_value=0, max_value=1e300, allow_nan=False))
entry = st.fixed_dictionaries(
    {"dumps": _text, "inputs": _text, "expected": _text},
    optional={
        "entry": st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
        "rtol": finite,
        "atol": finite,
        "seed": st.integers(-(2**63), 2**63 - 1),
        "generate": st.dictionaries(
            _text, st.one_of(st.fixed_dictionaries({"low": finite, "high": finite}), st.lists(finite, max_size=3), _text), max_size=3
        ),
    },
)


@FUZZ
@given(
    case=entry,
    existing=st.sampled_from(["", "# mine\n", '[[cases]]\ndumps = "x"\n', "[[cases]]\ndumps = 'x'", "cases = []\n", "x = ["]),
    pyproject=st.booleans(),
)
def test_the_case_writer_writes_what_reads_back(tmp_path_factory: Any, case: dict[str, Any], existing: str, pyproject: bool) -> None:
    import tomllib

    root = tmp_path_factory.mktemp("w")
    config = root / ("pyproject.toml" if pyproject else "pypto-lsp.toml")
    config.write_text(existing.replace("cases", "tool.pypto-lsp.cases") if pyproject and "[[" in existing else existing, encoding="utf-8")
    before = config.read_text(encoding="utf-8")
    try:
        case_writer.write_case(config, case)
    except cfg.ConfigError:
        assert config.read_text(encoding="utf-8") == before  # refused: the file unchanged
        event("refused")
        return
    event("written")
    data = tomllib.loads(config.read_text(encoding="utf-8"))
    cases = data["tool"]["pypto-lsp"]["cases"] if pyproject else data["cases"]
    got = cases[-1]
    assert got.keys() == case.keys()
    for k, v in case.items():
        assert got[k] == v or (isinstance(v, float) and math.isclose(got[k], v)), (k, got[k], v)


_user_line = st.sampled_from(
    ["# mine", "atol = 0.5", "rtol = 1e-3  # tight", "inputs = 'old.pt'", "expected = [", "'x.pt'", "]", "", "entry = 'f'"]
)


@FUZZ
@given(
    goldens=st.fixed_dictionaries({"inputs": _text, "expected": _text}),
    dumps=st.sampled_from(["passes_dump", "./passes_dump", "passes_dump/", "d/../passes_dump"]),
    body=st.lists(_user_line, max_size=6),
    before_case=st.booleans(),
    crlf=st.booleans(),
)
def test_updating_a_case_in_place_keeps_the_rest_or_refuses(
    tmp_path_factory: Any, goldens: dict[str, str], dumps: str, body: list[str], before_case: bool, crlf: bool
) -> None:
    import tomllib

    root = tmp_path_factory.mktemp("u")
    config = root / "pypto-lsp.toml"
    lines = (["[[cases]]", "dumps = 'other'", "# theirs"] if before_case else []) + ["[[cases]]  # ours", f"dumps = '{dumps}'", *body]
    eol = "\r\n" if crlf else "\n"
    raw = eol.join(lines) + eol
    config.write_bytes(raw.encode())
    try:
        old = tomllib.loads(raw)["cases"]
    except tomllib.TOMLDecodeError:
        old = None
    entry = {"dumps": "passes_dump", **goldens}
    try:
        how = case_writer.write_case(config, entry, update=True)
    except cfg.ConfigError:
        assert config.read_bytes() == raw.encode()  # refused: the file unchanged
        event("refused")
        return
    event(how)
    text = config.read_bytes().decode()
    assert old is not None and how == "updated"
    cases = tomllib.loads(text)["cases"]
    ours = len(cases) - 1
    assert cases[:ours] == old[:ours]  # the other case untouched
    assert cases[ours] == {**old[ours], **entry}
    kept = [ln for ln in lines if not ln.startswith(("inputs =", "expected =", "dumps ="))]
    assert all(ln in text.split(eol) for ln in kept)  # every other line as the user wrote it
    if crlf:
        assert "\n" not in text.replace("\r\n", "")  # CRLF kept
