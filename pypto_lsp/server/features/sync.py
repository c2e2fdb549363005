"""``textDocument/didOpen`` / ``didChange`` / ``didSave`` / ``didClose``: the text goes to the core.

pygls keeps the synchronised text (incremental changes); after it applied a change, the
core gets the whole text and version (:meth:`..core.Core.change`), parses as you type and
validates on save (:mod:`..validation`).
"""

from __future__ import annotations

from lsprotocol import types

from ..core import Core
from ..lsp import PyptoServer


def register(ls: PyptoServer, core: Core) -> None:
    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(params: types.DidOpenTextDocumentParams) -> None:
        td = params.text_document
        await core.open(td.uri, td.version, td.text)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if core.docs.get(uri) is None:
            return  # not a dump of ours
        doc = ls.workspace.get_text_document(uri)
        core.change(uri, doc.version, doc.source)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        core.save(params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        core.close(params.text_document.uri)
