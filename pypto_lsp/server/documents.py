"""The documents the server knows: which files are pass dumps, and what is known of each.

A file is a pass dump when it is a ``.py`` under a ``passes_dump*`` folder or its first
line is ``# pypto.program:``. Every other document is ignored entirely: no parse, no
diagnostics, no lenses (the user's Python language server owns those).

Protocol-free (no pygls, no lsprotocol): :class:`DocState` is written by the core only
(:mod:`.core`, :mod:`.validation`); the LSP layer reads a frozen :class:`DocView`.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from ..ir.diagnostics import Diagnostic
from ..ir.model import Program
from ..validate.config import is_dump_path
from ..validate.report import FileResult, ValueDivergence

# LSP position encodings (lsprotocol's PositionEncodingKind values)
UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def uri_to_path(uri: str) -> Path | None:
    """The local path of a ``file:`` URI (``None`` for any other scheme)."""
    if not uri.startswith("file:"):
        return None
    parts = urlsplit(uri)
    path = unquote(parts.path)
    if parts.netloc:  # a UNC share
        path = f"//{unquote(parts.netloc)}{path}"
    elif len(path) >= 3 and path[0] == "/" and path[2] == ":" and path[1].isalpha():
        path = path[1].lower() + path[2:]  # /C:/x -> c:/x
    if not path:
        return None
    return Path(PureWindowsPath(path)) if os.name == "nt" else Path(path)


def path_to_uri(path: str | Path) -> str:
    """A ``file:`` URI for a local path, as clients send them (percent-encoded, drive letter lower-case)."""
    p = Path(path)
    if not p.is_absolute():
        p = p.absolute()
    if os.name == "nt":
        s = p.as_posix()
        if len(s) >= 2 and s[1] == ":":
            s = "/" + s[0].lower() + s[1:]
        return "file://" + quote(s)
    return p.as_uri()


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
    if encoding == UTF32 or prefix.isascii():
        return col
    if encoding == UTF8:
        return len(prefix.encode("utf-8", "surrogatepass"))
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2


def from_client_col(line: str, col: int, encoding: str) -> int:
    if col <= 0 or line.isascii() or encoding == UTF32:
        return col
    units = 0
    for i, ch in enumerate(line):
        if units >= col:
            return i
        if encoding == UTF8:
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
    """What the server knows about one dump document (open or validated from disk).

    Written by the core only (:mod:`.core`, :mod:`.validation`); a result through
    :meth:`Documents.set_result`, which keeps the first divergent pass current."""

    uri: str
    path: Path | None
    version: int | None = None
    is_open: bool = False
    text: str = ""  # the editor's text of an open document (at ``version``)
    # parse + static check of the text at ``parsed_version``
    program: Program | None = None
    parse_diags: list[Diagnostic] = field(default_factory=list)
    parsed_hash: str | None = None
    parsed_version: int | None = None
    parsed_lines: list[str] = field(default_factory=list)
    nav_index: Any = None  # ir.symbols.SymbolIndex of ``nav_program``, built on the first request
    nav_program: Program | None = None
    # validation
    result: FileResult | None = None
    result_hash: str | None = None
    result_config: tuple[Any, ...] | None = None
    result_lines: list[str] = field(default_factory=list)
    pending: bool = False
    no_golden: bool = False
    config_error: str | None = None
    # on the first divergent pass: the first value that differs from the previous pass
    # (see validation.Validator.localize_first_divergent)
    divergence: Localized | None = None


@dataclass(frozen=True, slots=True)
class Related:
    """Another pass of the folder, as a diagnostic or lens of this one mentions it."""

    uri: str
    path: Path
    result: FileResult | None
    lines: list[str]


@dataclass(frozen=True, slots=True)
class DocView:
    """A read-only picture of one document for the LSP layer: diagnostics and lenses are
    pure functions of it (:mod:`.diagnostics`, :mod:`.lenses`)."""

    uri: str
    path: Path | None
    version: int | None
    is_open: bool
    validation: bool  # the setting: validation on at all
    program: Program | None
    parse_diags: list[Diagnostic]
    parsed_lines: list[str]
    result: FileResult | None
    result_hash: str | None
    result_lines: list[str]
    stale: bool  # the result describes a text the editor no longer has
    pending: bool
    no_golden: bool
    config_error: str | None
    compared_label: str | None  # the reference when there are no goldens
    divergence: Localized | None
    divergence_previous: Related | None  # the pass ``divergence`` was compared with
    first_divergent: Related | None  # the folder's first divergent pass when it comes before this one
    previous: Related | None  # the passing pass before this failing one
    changed_blocks: list[tuple[int, int]]  # (first, last) lines this pass changed, when previous is known

    @property
    def lines(self) -> list[str]:
        return self.result_lines or self.parsed_lines


class Documents:
    def __init__(self) -> None:
        self._docs: dict[str, DocState] = {}
        # by folder, so that a folder's documents cost the folder's size, not the workspace's
        self._folders: dict[Path, dict[str, DocState]] = {}
        # moves whenever any document's result is set (set_result)
        self.generation = 0
        # folder -> (generation when known, its first divergent pass): see validation
        self.first_divergent_memo: dict[Path, tuple[int, DocState | None]] = {}

    def set_result(self, st: DocState, fr: FileResult | None) -> None:
        if st.result is not fr:
            self.generation += 1  # a remembered first divergent pass is stale
        st.result = fr

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
