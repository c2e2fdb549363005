"""``textDocument/codeLens``: the lenses of :func:`..lenses.lenses_for`, from what the core already holds.

The request never waits for a run (only for the parse of the current text). What it answers is
kept: ``workspace/codeLens/refresh`` goes out only when some answered lens would change (a lens
VS Code replaces loses its command, and a click landing then fails)."""

from __future__ import annotations

from lsprotocol import types

from ..core import Core
from ..lenses import lenses_for
from ..lsp import PyptoServer


def register(ls: PyptoServer, core: Core) -> None:
    def current(uri: str) -> list[types.CodeLens] | None:
        v = core.view(uri)
        return lenses_for(v) if v is not None and v.is_open else None

    ls.lens_source = current  # a lens refresh is sent only when some served lens would change

    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(params: types.CodeLensParams) -> list[types.CodeLens] | None:
        uri = params.text_document.uri
        await core.ensure_parsed(uri)
        v = core.view(uri)
        lenses = lenses_for(v) if v is not None else []
        ls.lenses_served(uri, lenses)
        return lenses
