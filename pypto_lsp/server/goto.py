"""``textDocument/definition`` and ``textDocument/references`` for variables and functions.

Both come from the symbol index :mod:`.navigation` builds once per parse (MLIR's
language server records definitions and uses while parsing the same way); each
function is its own namespace. Spans are converted to the client's position encoding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..ir.model import Span
from .documents import to_client_col
from .hover import NAV, index_for, server_position
from .parse_diagnostics import ensure_parsed

if TYPE_CHECKING:
    from .app import PyptoServer


def span_to_range(lines: list[str], s: Span, encoding: str) -> types.Range:
    def line(i: int) -> str:
        return lines[i] if 0 <= i < len(lines) else ""

    l0, e0 = max(s.line - 1, 0), max(s.end_line - 1, 0)
    return types.Range(
        types.Position(l0, to_client_col(line(l0), s.col, encoding)),
        types.Position(e0, to_client_col(line(e0), s.end_col, encoding)),
    )


def register(ls: PyptoServer) -> None:
    def locations(uri: str, spans: list[Span]) -> list[types.Location]:
        st = ls.docs.get(uri)
        lines = st.parsed_lines if st is not None else []
        return [types.Location(uri, span_to_range(lines, s, ls.position_encoding)) for s in spans]

    @ls.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(params: types.DefinitionParams) -> list[types.Location] | None:
        uri = params.text_document.uri
        await ensure_parsed(ls, uri)
        program, index = index_for(ls, uri)
        if program is None or NAV is None:
            return None
        line0, col0 = server_position(ls, uri, params.position)
        try:
            spans = NAV.definition(program, line0, col0, index=index)
        except Exception as exc:
            ls.log(f"definition failed: {type(exc).__name__}: {exc}")
            return None
        return locations(uri, spans) or None

    @ls.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def references(params: types.ReferenceParams) -> list[types.Location] | None:
        uri = params.text_document.uri
        await ensure_parsed(ls, uri)
        program, index = index_for(ls, uri)
        if program is None or NAV is None:
            return None
        line0, col0 = server_position(ls, uri, params.position)
        try:
            spans = NAV.references(program, line0, col0, params.context.include_declaration, index=index)
        except Exception as exc:
            ls.log(f"references failed: {type(exc).__name__}: {exc}")
            return None
        return locations(uri, spans) or None
