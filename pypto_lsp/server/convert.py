"""Pure conversions between IR positions (1-based lines, code-point columns) and LSP ones."""

from __future__ import annotations

from lsprotocol import types

from ..ir.model import Span
from .documents import from_client_col, to_client_col


def span_to_range(lines: list[str], s: Span, encoding: str) -> types.Range:
    def line(i: int) -> str:
        return lines[i] if 0 <= i < len(lines) else ""

    l0, e0 = max(s.line - 1, 0), max(s.end_line - 1, 0)
    return types.Range(
        types.Position(l0, to_client_col(line(l0), s.col, encoding)),
        types.Position(e0, to_client_col(line(e0), s.end_col, encoding)),
    )


def server_position(lines: list[str], pos: types.Position, encoding: str) -> tuple[int, int]:
    """An LSP position as (0-based line, code-point column) in ``lines``."""
    line = lines[pos.line] if 0 <= pos.line < len(lines) else ""
    return pos.line, from_client_col(line, pos.character, encoding)
