"""Mutation fuzzing of the parser and the static checks on real pass dumps.

Real dumps from ``../shared/fixtures`` are damaged (lines deleted, duplicated,
swapped, re-indented; bytes and tokens inserted; characters flipped; text cut at
random points) and fed to ``parse_bytes`` + ``check_program``. Neither may raise,
and every diagnostic must point inside the damaged file (or at line 1).

Derandomized, no example database, no deadline: the same examples run every time.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto_lsp.ir.check import check_program
from pypto_lsp.ir.parser import parse_bytes

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"

# small and large dumps covering loops, while/if, dynamic dims, memrefs, split_aiv, spmd, cross-core
SEEDS = [
    "ops/dm_full/passes_dump/00_frontend.py",
    "ops/cf_while/passes_dump/05_after_Simplify.py",
    "ops/cf_if_else/passes_dump/10_after_OutlineClusterScopes.py",
    "ops/spmd4_block_idx/passes_dump/00_frontend.py",
    "ops/cc_mixed_updown_odd_m33/passes_dump/49_after_MaterializeValidShapeSymbols.py",
    "cross_core_split_aiv_qk_pv/passes_dump/04_after_ConvertToSSA.py",
    "example_flash_attention/passes_dump/22_after_ExpandMixedKernel.py",
    "qwen3_scope3_910b/passes_dump/33_after_MaterializeSemanticAliases.py",
]

TOKENS = [
    b"(",
    b")",
    b"[",
    b"]",
    b"{",
    b"}",
    b":",
    b",",
    b"=",
    b" = ",
    b".",
    b"-",
    b"**",
    b"\\",
    b"'",
    b'"',
    b'"""',
    b"#",
    b"\t",
    b"    ",
    b"\n",
    b"\r",
    b"\r\n",
    b"\x0c",
    b"\x00",
    b"\xff",
    b"\xe2\x82",
    b"\xef\xbb\xbf",
    b"\xc3\xa9",
    b"pl.",
    b"pld.",
    b"self.",
    b"pl.yield_(",
    b"pl.cond(x)",
    b"pl.tile.",
    b"pl.Tile[[",
    b"pl.Tensor[[",
    b"pl.Out[",
    b"pl.Mem.",
    b"pl.FP32",
    b"pl.FP64",
    b"__FREE_VAR",
    b"xor",
    b" and ",
    b" if ",
    b"else:",
    b"for i in pl.range(4):",
    b"for (a,) in pl.while_(init_values=(0,)):",
    b"with pl.scope():",
    b"return",
    b"pass",
    b"lambda: 0",
    b"__import__('os')",
    b"async ",
    b"await ",
    b"@pl.function",
    b"def ",
    b"class ",
    b"0x" + b"f" * 40,
    b"1e999",
    b"...",
]


if not FIXTURES.is_dir():
    pytest.skip(
        f"real dumps not available: {FIXTURES} is absent (the shared fixtures live beside the repository)",
        allow_module_level=True,
    )
SEED_DATA = [(FIXTURES / rel).read_bytes() for rel in SEEDS if (FIXTURES / rel).is_file()]
if not SEED_DATA:
    pytest.skip(f"none of the seed dumps exist under {FIXTURES}", allow_module_level=True)


MAX_STEPS = 4
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?")
_NEWLINES = re.compile(rb"\r\n|\r|\n")


def line_count(data: bytes) -> int:
    """Lines as Python (and LSP) count them: LF, CRLF and CR all end a line."""
    return len(_NEWLINES.split(data))


def assert_sane(data: bytes) -> None:
    res = parse_bytes(data, "fuzz.py")
    diags = list(res.diagnostics)
    if res.program is not None:
        diags.extend(check_program(res.program))
        if res.program.functions:  # an explicit entry takes the other entry-selection path
            check_program(res.program, entry=res.program.functions[0].name)
    n = line_count(data)
    for d in diags:
        assert d.severity in ("error", "warning", "information", "hint"), d
        assert isinstance(d.code, str) and d.code and isinstance(d.message, str) and d.message, d
        assert d.span.line == 1 or 1 <= d.span.line <= n, (d.span, n, d.code, d.message)
        assert d.span.col >= 0 and d.span.end_line >= d.span.line, (d.span, d.code, d.message)


# ---------------------------------------------------------------------- mutations


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _mutate(data: bytes, draw: st.DrawFn) -> bytes:
    kind = draw(
        st.sampled_from(
            [
                "delete",
                "duplicate",
                "swap",
                "move",
                "insert_bytes",
                "insert_token",
                "truncate",
                "flip",
                "indent",
                "dedent",
                "tabify",
                "replace_char",
                "replace_word",
                "replace_word",
                "replace_word",
            ]
        )
    )
    if kind == "replace_word":
        # swap one word for another word of the same file: mostly still valid Python, so the checks run
        words = list(_WORD.finditer(data))
        if not words:
            return data
        m = words[draw(st.integers(0, len(words) - 1))]
        new = words[draw(st.integers(0, len(words) - 1))].group()
        return data[: m.start()] + new + data[m.end() :]
    lines = _lines(data)
    if kind in ("delete", "duplicate", "swap", "move", "indent", "dedent", "tabify"):
        if not lines:
            return data
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind in ("swap", "move"):
            j = draw(st.integers(0, len(lines) - 1))
            if kind == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines.insert(j, lines.pop(i))
        elif kind == "indent":
            lines[i] = b" " * draw(st.integers(1, 8)) + lines[i]
        elif kind == "dedent":
            lines[i] = lines[i][draw(st.integers(1, 8)) :]
        else:
            stripped = lines[i].lstrip(b" ")
            lines[i] = b"\t" * ((len(lines[i]) - len(stripped)) // 4) + stripped
        return b"\n".join(lines)
    if not data:
        return draw(st.binary(max_size=16))
    pos = draw(st.integers(0, len(data)))
    if kind == "insert_bytes":
        return data[:pos] + draw(st.binary(min_size=1, max_size=8)) + data[pos:]
    if kind == "insert_token":
        return data[:pos] + draw(st.sampled_from(TOKENS)) + data[pos:]
    if kind == "truncate":
        return data[:pos]
    pos = min(pos, len(data) - 1)
    if kind == "flip":
        return data[:pos] + bytes([data[pos] ^ (1 << draw(st.integers(0, 7)))]) + data[pos + 1 :]
    # replace_char: a printable ASCII character that means something to Python
    return data[:pos] + draw(st.sampled_from(list(b"()[]{}:,.=-+*/%<>!~^&|@'\"#\\ \t\n0aZ_"))).to_bytes(1, "big") + data[pos + 1 :]


@st.composite
def mutated_dump(draw: st.DrawFn, text_only: bool) -> bytes:
    pool = SEED_DATA
    data = pool[draw(st.integers(0, len(pool) - 1))]
    for _ in range(draw(st.integers(1, MAX_STEPS))):
        data = _mutate(data, draw)
        if text_only:
            # keep the input decodable so the parser (not only the byte checks) sees it
            data = data.replace(b"\x00", b" ").decode("utf-8", "replace").encode("utf-8")
    return data


FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def test_seed_dumps_are_clean() -> None:
    for data in SEED_DATA:
        res = parse_bytes(data, "seed.py")
        assert res.program is not None and not res.errors, [(d.span.line, d.message) for d in res.errors]
        assert_sane(data)


@FUZZ
@given(mutated_dump(text_only=True))
def test_mutated_text_never_crashes(data: bytes) -> None:
    assert_sane(data)


@FUZZ
@given(mutated_dump(text_only=False))
def test_mutated_bytes_never_crash(data: bytes) -> None:
    assert_sane(data)
