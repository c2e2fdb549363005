"""``textDocument/didOpen`` / ``didChange`` / ``didSave`` / ``didClose``: which files are ours, and their state.

A file is a pass dump when it is a ``.py`` under a ``passes_dump*`` folder or its first
line is ``# pypto.program:``. Every other document is ignored entirely: no parse, no
diagnostics, no lenses (the user's Python language server owns those).

This module only keeps the per-document state and routes the sync notifications to
:mod:`.parse_diagnostics` (as you type) and :mod:`.validation` (on save / open).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from ..validate.config import is_dump_path

if TYPE_CHECKING:
    from ..ir.diagnostics import Diagnostic
    from ..ir.model import Program
    from ..validate.report import FileResult, ValueDivergence
    from .app import PyptoServer


def uri_to_path(uri: str) -> Path | None:
    if not uri.startswith("file:"):
        return None
    p = to_fs_path(uri)
    return Path(p) if p else None


def path_to_uri(path: str | Path) -> str:
    return from_fs_path(str(path)) or Path(path).as_uri()


def first_line(text: str) -> str:
    return text[:256].split("\n", 1)[0]


def is_dump(uri: str, text: str | None) -> bool:
    path = uri_to_path(uri)
    if path is None:
        # an unsaved buffer: only the header line can tell
        return text is not None and first_line(text).startswith("# pypto.program:")
    return is_dump_path(path, first_line(text) if text is not None else None)


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# ---------------------------------------------------------------------- columns
# The IR counts columns in code points; LSP clients in UTF-16 units by default.


def to_client_col(line: str, col: int, encoding: str) -> int:
    if col <= 0:
        return 0
    prefix = line[:col]
    if encoding == types.PositionEncodingKind.Utf32 or prefix.isascii():
        return col
    if encoding == types.PositionEncodingKind.Utf8:
        return len(prefix.encode("utf-8", "surrogatepass"))
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2


def from_client_col(line: str, col: int, encoding: str) -> int:
    if col <= 0 or line.isascii() or encoding == types.PositionEncodingKind.Utf32:
        return col
    units = 0
    for i, ch in enumerate(line):
        if units >= col:
            return i
        if encoding == types.PositionEncodingKind.Utf8:
            units += len(ch.encode("utf-8", "surrogatepass"))
        else:
            units += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


# ---------------------------------------------------------------------- state


@dataclass(frozen=True, slots=True)
class Localized:
    """What the worker answered for a first divergent pass, and what it was computed from."""

    key: tuple[Any, ...]  # see validation.localize_key; key[0] is the pass's result hash
    previous: Path  # the passing pass it was compared with
    value: ValueDivergence | None  # None: no paired value differs


@dataclass
class DocState:
    """What the server knows about one dump document (open or validated from disk)."""

    uri: str
    path: Path | None
    version: int | None = None
    is_open: bool = False
    # parse + static check of the text at ``parsed_version``
    program: Program | None = None
    parse_diags: list[Diagnostic] = field(default_factory=list)
    parsed_hash: str | None = None
    parsed_version: int | None = None
    parsed_lines: list[str] = field(default_factory=list)
    nav_index: Any = None  # navigation.SymbolIndex of ``nav_program``, built on the first request
    nav_program: Program | None = None
    # validation
    result: FileResult | None = None
    result_hash: str | None = None
    result_config: tuple[Any, ...] | None = None
    result_lines: list[str] = field(default_factory=list)
    pending: bool = False
    no_golden: bool = False
    config_error: str | None = None
    worker_error: str | None = None
    # on the first divergent pass: the first value that differs from the previous pass
    # (see validation.localize_first_divergent)
    divergence: Localized | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "result" and getattr(self, "result", None) is not value:
            # whatever sets a result, a remembered first divergent pass is stale
            global _RESULTS_CHANGED
            _RESULTS_CHANGED += 1
        object.__setattr__(self, name, value)


_RESULTS_CHANGED = 0


def results_generation() -> int:
    """A counter that moves whenever any document's ``result`` is set."""
    return _RESULTS_CHANGED


class Documents:
    def __init__(self) -> None:
        self._docs: dict[str, DocState] = {}
        # by folder, so that a folder's documents cost the folder's size, not the workspace's
        self._folders: dict[Path, dict[str, DocState]] = {}
        # folder -> (results_generation() when known, its first divergent pass): see validation
        self.first_divergent_memo: dict[Path, tuple[int, DocState | None]] = {}

    def get(self, uri: str) -> DocState | None:
        return self._docs.get(uri)

    def ensure(self, uri: str) -> DocState:
        st = self._docs.get(uri)
        if st is None:
            st = DocState(uri, uri_to_path(uri))
            self._docs[uri] = st
            if st.path is not None:
                self._folders.setdefault(st.path.parent, {})[uri] = st
        return st

    def drop(self, uri: str) -> None:
        st = self._docs.pop(uri, None)
        if st is not None and st.path is not None:
            self._folders.get(st.path.parent, {}).pop(uri, None)

    def all(self) -> list[DocState]:
        return list(self._docs.values())

    def open_docs(self) -> list[DocState]:
        return [d for d in self._docs.values() if d.is_open]

    def in_folder(self, folder: Path) -> list[DocState]:
        return list(self._folders.get(folder, {}).values())


def register(ls: PyptoServer) -> None:
    from . import parse_diagnostics, validation

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(params: types.DidOpenTextDocumentParams) -> None:
        td = params.text_document
        if not is_dump(td.uri, td.text):
            return
        st = ls.docs.ensure(td.uri)
        st.is_open = True
        st.version = td.version
        await parse_diagnostics.parse_now(ls, td.uri)
        await validation.on_open(ls, td.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        st = ls.docs.get(params.text_document.uri)
        if st is None or not st.is_open:
            return
        st.version = params.text_document.version
        parse_diagnostics.schedule(ls, st.uri)
        validation.on_change(ls, st.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        st = ls.docs.get(params.text_document.uri)
        if st is None or not st.is_open:
            return
        validation.on_save(ls, st.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        st = ls.docs.get(uri)
        if st is None:
            return
        parse_diagnostics.cancel(ls, uri)
        validation.cancel(ls, uri)
        st.is_open = False
        st.version = None
        st.program = None
        st.parse_diags = []
        st.parsed_lines = []
        st.parsed_hash = None
        st.nav_index = st.nav_program = None
        # keep the validation result (folder views, first divergent pass); clear the squiggles
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
