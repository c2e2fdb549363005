"""The printer's most common type annotations, read by regex before ``ast`` sees the text.

A memory-planned dump spends most of its syntax tree on annotations such as
``pl.Tile[[16, 128], pl.FP32, pl.MemRef(mem_vec_3, 0, 8192), pl.Mem.Vec]``: about a
dozen nodes each, hundreds per file, nearly all identical in shape. :func:`blank_printer_forms`
replaces each annotation (and each leftover memref item) that is *exactly* in the
printer's form by spaces and a placeholder name that ends where the text ended, and
returns the model objects those texts denote, keyed by the placeholder's position. ``ast``
then builds one Name node per annotation and every other node keeps its line and
columns (whitespace inside brackets is free; a parameter's span still ends at its
annotation's end).

This is only a shortcut to the objects the parser would build itself: anything not in
the exact form (a keyword as a dim, a leading-zero literal, an unknown dtype or
memory space, a view with other keywords, a non-ASCII line, CR line ends, ...) is left as written, and the parser
falls back to the original text when a placeholder turns up where no type may stand.
``tests/unit/test_printer_forms.py`` checks that both ways give equal programs and
diagnostics on every fixture dump and every bad-input file.
"""

from __future__ import annotations

import keyword
import re

from .model import Const, Expr, MemRefInfo, Name, ScalarType, Span, TensorType, TileType
from .names import DTYPES, ENUMS, MEMORY_SPACES

TYPE_PLACEHOLDER = "_T"
MEMREF_PLACEHOLDER = "_M"

_INT = r"(?:0|[1-9]\d{0,17})"  # no leading zeros (a syntax error), far below the 64-bit limit
_IDENT = r"(?!__)[A-Za-z_]\w*"  # dunders go the long way, to their grammar error
_DIMS = rf"(?:(?:{_INT}|{_IDENT})(?:, (?:{_INT}|{_IDENT}))*)?"
# pl.MemRef(<name or "name">, <int or pl.const(int, pl.INT64)>, <int>[, <int>])
_MEMREF = (
    rf'pl\.MemRef\((?:(?P<mname>{_IDENT})|"(?P<mstr>{_IDENT})"), '
    rf"(?:(?P<moff>{_INT})|pl\.const\((?P<mconst>{_INT}), pl\.INT64\)), (?P<msize>{_INT})(?:, {_INT})?\)"
)
_TILE_VIEW = (
    rf"pl\.TileView\((?:valid_shape=\[(?P<valid>{_DIMS})\](?:, blayout=pl\.TileLayout\.(?P<blayout>\w+))?"
    rf"|blayout=pl\.TileLayout\.(?P<blayout_only>\w+))\)"
)
_SHAPED = re.compile(
    rf"(?<![\w.])pl\.(?P<kind>Tile|Tensor)\[\[(?P<dims>{_DIMS})\], pl\.(?P<dtype>\w+)"
    rf"(?:, {_MEMREF})?(?:, pl\.Mem\.(?P<space>\w+))?(?:, {_TILE_VIEW})?\]"
    rf"|(?<![\w.])pl\.Scalar\[pl\.(?P<scalar>\w+)\]"
)
_MEMREF_ITEM = re.compile(rf"(?<=, ){_MEMREF}(?=[,\]])")
_TILE_LAYOUTS = ENUMS["TileLayout"] or frozenset()

Parsed = TileType | TensorType | ScalarType | MemRefInfo


def _memref(m: re.Match[str], lineno: int) -> MemRefInfo:
    base = m.group("mname") or m.group("mstr")
    off: Expr | None = None
    if m.group("moff") is not None:
        off = Const(int(m.group("moff")), Span(lineno, m.start("moff"), lineno, m.end("moff")))
    elif m.group("mconst") is not None:  # the byte address after AllocateMemoryAddr: pl.const(N, pl.INT64)
        off = Const(int(m.group("mconst")), Span(lineno, m.start("mconst"), lineno, m.end("mconst")), "INT64")
    size = Const(int(m.group("msize")), Span(lineno, m.start("msize"), lineno, m.end("msize")))
    start = (m.start("mname") if m.group("mname") is not None else m.start("mstr") - 1) - len("pl.MemRef(")
    end = m.string.index(")", m.end("msize")) + 1  # the closing parenthesis, after the optional id
    return MemRefInfo(base, off, size, Span(lineno, start, lineno, end))


def _dims(m: re.Match[str], group: str, lineno: int) -> list[Expr] | None:
    out: list[Expr] = []
    text = m.group(group)
    if not text:
        return out
    col = m.start(group)
    for d in text.split(", "):
        if d[0].isdigit():
            out.append(Const(int(d), Span(lineno, col, lineno, col + len(d))))
        elif keyword.iskeyword(d):  # True/None/... are constants, not names
            return None
        else:
            out.append(Name(d, Span(lineno, col, lineno, col + len(d))))
        col += len(d) + 2
    return out


def _shaped(m: re.Match[str], lineno: int) -> Parsed | None:
    span = Span(lineno, m.start(), lineno, m.end())
    kind = m.group("kind")
    if kind is None:  # pl.Scalar[pl.<dtype>]
        return ScalarType(m.group("scalar"), span) if m.group("scalar") in DTYPES else None
    dtype, space = m.group("dtype"), m.group("space")
    if dtype not in DTYPES:
        return None
    shape = _dims(m, "dims", lineno)
    if shape is None:
        return None
    memref = _memref(m, lineno) if m.group("msize") is not None else None
    if kind == "Tensor":  # memory spaces and tile views are tile items only
        if space is not None or m.group("valid") is not None or m.group("blayout_only") is not None:
            return None
        return TensorType(shape, dtype, span, memref=memref)
    if space is not None and space not in MEMORY_SPACES:
        return None
    valid: list[Expr] | None = None
    if m.group("valid") is not None:
        valid = _dims(m, "valid", lineno)
        if valid is None:
            return None
    blayout = m.group("blayout") or m.group("blayout_only")
    if blayout is not None and blayout not in _TILE_LAYOUTS:
        return None
    return TileType(shape, dtype, span, memspace=space, valid_shape=valid, memref=memref, blayout=blayout)


def blank_printer_forms(text: str) -> tuple[str, dict[tuple[int, int], Parsed]]:
    """``text`` with printer-form types and memref items blanked, and what they were by (line, column)."""
    found: dict[tuple[int, int], Parsed] = {}
    if "\r" in text or "pl." not in text:
        return text, found
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if ("[pl." not in line and ", pl." not in line) or not line.isascii():
            continue
        lineno = i + 1

        def type_(m: re.Match[str], lineno: int = lineno) -> str:
            t = _shaped(m, lineno)
            if t is None:
                return m.group()
            found[(lineno, m.end() - len(TYPE_PLACEHOLDER))] = t
            return TYPE_PLACEHOLDER.rjust(m.end() - m.start())

        def memref(m: re.Match[str], lineno: int = lineno) -> str:
            found[(lineno, m.end() - len(MEMREF_PLACEHOLDER))] = _memref(m, lineno)
            return MEMREF_PLACEHOLDER.rjust(m.end() - m.start())

        line = _SHAPED.sub(type_, line)
        if "pl.MemRef(" in line:
            line = _MEMREF_ITEM.sub(memref, line)
        lines[i] = line
    return "\n".join(lines), found
