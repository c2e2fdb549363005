"""``textDocument/definition`` and ``textDocument/references`` for variables and functions.

Both come from the symbol index :mod:`pypto_lsp.ir.symbols` builds once per parse (MLIR's
language server records definitions and uses while parsing the same way); each
function is its own namespace. Spans are converted to the client's position encoding.
"""

from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types

from ...ir import symbols as SYM
from ...ir.model import Span
from ..convert import server_position, span_to_range
from ..core import Core, Parsed
from ..lsp import PyptoServer


def register(ls: PyptoServer, core: Core) -> None:
    async def navigate(
        what: str, params: types.DefinitionParams | types.ReferenceParams, find: Callable[[Parsed, int, int], list[Span]]
    ) -> list[types.Location] | None:
        uri = params.text_document.uri
        doc = await core.parsed(uri)
        if doc is None:
            return None
        enc = ls.position_encoding
        line0, col0 = server_position(doc.lines, params.position, enc)
        try:
            spans = find(doc, line0, col0)
        except Exception as exc:
            ls.log(f"{what} failed: {type(exc).__name__}: {exc}")
            return None
        return [types.Location(uri, span_to_range(doc.lines, s, enc)) for s in spans] or None

    @ls.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(params: types.DefinitionParams) -> list[types.Location] | None:
        return await navigate("definition", params, lambda d, line0, col0: SYM.definition(d.program, line0, col0, index=d.index))

    @ls.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def references(params: types.ReferenceParams) -> list[types.Location] | None:
        include = params.context.include_declaration
        return await navigate("references", params, lambda d, line0, col0: SYM.references(d.program, line0, col0, include, index=d.index))
