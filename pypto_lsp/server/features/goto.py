"""``textDocument/definition`` and ``textDocument/references`` for variables and functions.

Both come from the symbol index :mod:`..navigation` builds once per parse (MLIR's
language server records definitions and uses while parsing the same way); each
function is its own namespace. Spans are converted to the client's position encoding.
"""

from __future__ import annotations

from lsprotocol import types

from ...ir.model import Span
from .. import navigation as NAV
from ..convert import server_position, span_to_range
from ..core import Core
from ..lsp import PyptoServer


def register(ls: PyptoServer, core: Core) -> None:
    def locations(uri: str, lines: list[str], spans: list[Span]) -> list[types.Location]:
        return [types.Location(uri, span_to_range(lines, s, ls.position_encoding)) for s in spans]

    @ls.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(params: types.DefinitionParams) -> list[types.Location] | None:
        uri = params.text_document.uri
        st = await core.ensure_parsed(uri)
        program, index = core.symbol_index(uri)
        if st is None or program is None:
            return None
        line0, col0 = server_position(st.parsed_lines, params.position, ls.position_encoding)
        try:
            spans = NAV.definition(program, line0, col0, index=index)
        except Exception as exc:
            ls.log(f"definition failed: {type(exc).__name__}: {exc}")
            return None
        return locations(uri, st.parsed_lines, spans) or None

    @ls.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def references(params: types.ReferenceParams) -> list[types.Location] | None:
        uri = params.text_document.uri
        st = await core.ensure_parsed(uri)
        program, index = core.symbol_index(uri)
        if st is None or program is None:
            return None
        line0, col0 = server_position(st.parsed_lines, params.position, ls.position_encoding)
        try:
            spans = NAV.references(program, line0, col0, params.context.include_declaration, index=index)
        except Exception as exc:
            ls.log(f"references failed: {type(exc).__name__}: {exc}")
            return None
        return locations(uri, st.parsed_lines, spans) or None
