"""``textDocument/codeLens``: the lenses of :func:`..lenses.lenses_for`, from what the core already holds.

The request never waits for a run (only for the parse of the current text)."""

from __future__ import annotations

from lsprotocol import types

from ..core import Core
from ..lenses import lenses_for
from ..lsp import PyptoServer


def register(ls: PyptoServer, core: Core) -> None:
    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(params: types.CodeLensParams) -> list[types.CodeLens] | None:
        uri = params.text_document.uri
        await core.ensure_parsed(uri)
        v = core.view(uri)
        return lenses_for(v) if v is not None else []
