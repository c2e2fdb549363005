"""One-line statements read once per process, not once per dump.

The dumps of a folder repeat: a pass rewrites a few statements and leaves the others as they
were, often on other lines (qwen3's 19 distinct dumps: 82 % of their lines are a line seen in an
earlier dump, 34 % at the same place in the same function). ``ast.parse`` was three quarters of a
parse. So a statement that stood alone on its line, parsed without a diagnostic, is kept by its
text (indentation stripped); the next dump that has that text on a line gets a placeholder
statement there before ``ast`` reads the text, and the parser puts a copy of the kept statement
in its place, its spans moved to that line and indentation.

Only the parser's own result is reused, never a guess: a placeholder that does not come back to
the parser as a statement of a function body (the line is inside brackets, a string, a class
body, after a backslash ...) makes the parser read the text again without any reuse
(:func:`pypto_lsp.ir.parser.parse_text`), and ``tests/unit/test_line_reuse.py`` checks that both
ways give equal programs and diagnostics on every fixture dump and every bad-input file.

A function's ``def`` line is kept the same way when its whole signature stood on it and read
without a diagnostic: what is kept is the :class:`Signature` (name, parameters, return types), and
the line becomes ``def <placeholder>():`` so that ``ast`` still reads the body under it. Signature
lines carry every parameter's type and were about half of what ``ast`` still read of a folder.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from .model import Assign, ExprStmt, FuncCall, OpCall, Param, Return, Span, Stmt, Type, Unpack, Yield

__all__ = ["DEF_PLACEHOLDER", "PLACEHOLDER", "Signature", "blank_known_lines", "forget", "keep", "keep_signature", "moved", "remember"]

# the statement a known line becomes before ``ast`` reads the text (padded with underscores to the
# line's length): a dunder name, which the grammar refuses anywhere, so a placeholder the parser
# does not take back never passes unseen
PLACEHOLDER = "__pl_known_line__"
# the name a known ``def`` line's function gets (``def __pl_known_def_____():``), a dunder too
DEF_PLACEHOLDER = "__pl_known_def__"


@dataclass(slots=True)
class Signature:
    """What a one-line ``def`` reads to: the function's name, its parameters and return types."""

    name: str
    params: list[Param]
    returns: list[Type]
    has_self: bool


MAX_LINES = 20_000  # kept lines (a one-line statement's IR: a few dozen small objects)
MAX_LINE = 4096  # characters of a kept line (the compiler's longest in every fixture: 910); longer ones are read each time

# line text without its indentation -> (the statement or signature as parsed, its line, its column)
_KEPT: dict[str, tuple[Stmt | Signature, int, int]] = {}
_LOCK = threading.Lock()

# one-line statements worth keeping (the others are a node or two, or carry state of their own:
# a bare constant may be a function's ``...`` body, which the parser reads off the ``ast``)
_KEPT_KINDS = (Assign, Unpack, Yield, Return)


def blank_known_lines(text: str) -> tuple[str, dict[int, tuple[Stmt | Signature, int, int, int]]]:
    """``text`` with every line whose statement is kept replaced by its indentation and
    :data:`PLACEHOLDER` (a kept signature's by ``def`` :data:`DEF_PLACEHOLDER` ``():``), and what each
    such line holds: line number -> (kept statement or signature, its line, its column, the
    indentation here)."""
    hits: dict[int, tuple[Stmt | Signature, int, int, int]] = {}
    if not _KEPT or "\r" in text:
        return text, hits
    lines = text.split("\n")
    get = _KEPT.get
    for i, line in enumerate(lines):
        s = line.lstrip(" ")
        hit = get(s)
        if hit is None:
            continue
        indent = len(line) - len(s)
        hits[i + 1] = (hit[0], hit[1], hit[2], indent)
        # as long as the line: a loop or function that ends with it ends where it did (ast ends a
        # compound statement's span where its last statement ends)
        if type(hit[0]) is Signature:
            lines[i] = " " * indent + "def " + DEF_PLACEHOLDER.ljust(len(s) - 7, "_") + "():"
        else:
            lines[i] = " " * indent + PLACEHOLDER.ljust(len(s), "_")
    if not hits:
        return text, hits
    return "\n".join(lines), hits


def keep(stmt: Stmt, line_text: str, lineno: int, col: int, end_col: int) -> tuple[str, tuple[Stmt, int, int]] | None:
    """The entry to keep for ``stmt``, parsed from the whole of ``line_text`` (one line, no
    diagnostic), or None when it is not worth keeping or not alone on its line."""
    if type(stmt) not in _KEPT_KINDS and not (type(stmt) is ExprStmt and type(stmt.value) in (OpCall, FuncCall)):
        return None
    s = _keepable(line_text, col, len(PLACEHOLDER))
    if s is None or end_col != len(line_text):
        return None
    return s, (stmt, lineno, col)


def keep_signature(sig: Signature, line_text: str, lineno: int, col: int) -> tuple[str, tuple[Signature, int, int]] | None:
    """The entry to keep for a function whose ``def`` line is ``line_text`` (the whole signature on
    it, read without a diagnostic, the body on the lines below), or None when that line cannot be."""
    s = _keepable(line_text, col, len("def " + DEF_PLACEHOLDER + "():"))
    if s is None or not s.startswith("def ") or not s.endswith(":"):
        return None
    return s, (sig, lineno, col)


def _keepable(line_text: str, col: int, shortest: int) -> str | None:
    """``line_text`` without its indentation when what was parsed starts right after it (at ``col``)
    and the rest can stand for it: printable ASCII, from ``shortest`` (room for its placeholder) to
    :data:`MAX_LINE` characters; else None."""
    s = line_text.lstrip(" ")
    if col != len(line_text) - len(s) or not shortest <= len(s) <= MAX_LINE or not s.isascii() or not s.isprintable():
        return None
    return s


def remember(entries: list[tuple[str, tuple[Stmt | Signature, int, int]]]) -> None:
    """Keep the statements of a parse that needed no second reading."""
    if not entries:
        return
    with _LOCK:
        if len(_KEPT) + len(entries) > MAX_LINES:
            _KEPT.clear()
        for text, entry in entries:
            _KEPT[text] = entry


def forget() -> None:
    """Drop every kept line (tests)."""
    with _LOCK:
        _KEPT.clear()


# ---------------------------------------------------------------------- copies on another line

_tuple_new = tuple.__new__

# a node class -> its fields, each with how it is copied: 0 as it is (text, numbers), 1 a span, 2 a node
_FIELDS: dict[type, tuple[tuple[str, int], ...]] = {}
_PLAIN = {"str", "int", "bool", "str | None", "int | None", "bool | None", "int | float | bool | str | None"}


def _fields(t: type) -> tuple[tuple[str, int], ...] | None:
    hit = _FIELDS.get(t)
    if hit is None:
        declared = getattr(t, "__dataclass_fields__", None)
        if declared is None:
            return None  # str, int, float, bool, None
        hit = _FIELDS[t] = tuple((n, 1 if f.type == "Span" else 0 if f.type in _PLAIN else 2) for n, f in declared.items())
    return hit


def moved(x: Any, line: int, dl: int, dc: int) -> Any:
    """A copy of the IR ``x`` (one statement, every span on ``line``) with its spans ``dl`` lines
    and ``dc`` columns further. Spans on other lines (none the parser makes) stay as they are."""
    t = type(x)
    if t is list:
        return [moved(v, line, dl, dc) for v in x]
    if t is dict:
        return {k: moved(v, line, dl, dc) for k, v in x.items()}
    if t is Span:
        return x if x.line != line else _tuple_new(Span, (x.line + dl, x.col + dc, x.end_line + dl, x.end_col + dc))
    fields = _FIELDS.get(t) or _fields(t)
    if fields is None:
        return tuple(moved(v, line, dl, dc) for v in x) if t is tuple else x
    args = []
    for name, kind in fields:
        v = getattr(x, name)
        if kind == 1:
            if v.line == line:
                v = _tuple_new(Span, (v.line + dl, v.col + dc, v.end_line + dl, v.end_col + dc))
        elif kind == 2 and v is not None:
            v = moved(v, line, dl, dc)
        args.append(v)
    return t(*args)
