"""The memory map for any LSP client: ``pypto-lsp/memoryMap`` ``{"uri": dump}``.

Answers :func:`pypto_lsp.ir.memmap.memory_map` of the document's current text (the open
editor's, else the file on disk): a strip per kernel and memory space, a bar per placed
value, the overlaps in red. When the server holds a validation result of that same text,
its memory findings (the sanitizer's) are added. Nothing runs; no torch. Also the lens
"Show memory map" next to the ``⚠ memory`` lens (:func:`lens`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ..ir.memmap import memory_map, memory_map_text
from .documents import text_hash
from .pictures import _uri

if TYPE_CHECKING:
    from .app import PyptoServer

MEMORY_MAP = "pypto-lsp/memoryMap"
SHOW_MEMORY_MAP = "pypto-lsp.showMemoryMap"  # client-side (VS Code extension): [uri]; data: pypto-lsp/memoryMap


def map_for(ls: PyptoServer, uri: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    doc = ls.workspace.get_text_document(uri)
    st = ls.docs.get(uri)
    try:
        text = doc.source
    except (OSError, UnicodeDecodeError) as exc:
        raise JsonRpcInvalidParams(f"cannot read {uri}: {exc}") from exc
    h = text_hash(text)
    findings: list[dict[str, Any]] = []
    with_run = False
    if st is not None and st.result is not None and st.result_hash == h and not st.pending:
        mem = st.result.memory or {}
        findings = list(mem.get("hazards") or [])
        with_run = bool(mem.get("checked"))
    path = str(st.path) if st is not None and st.path is not None else uri
    backend = None
    if st is not None and st.path is not None:
        backend = ls.config.get(st.path).backend
    if st is not None and st.program is not None and st.parsed_hash == h:
        data = memory_map(st.program, findings, backend=backend, file=path)
    else:
        data = memory_map_text(text, findings, filename=path, backend=backend)
    data["uri"] = uri
    data["run"] = with_run  # the findings of a validation of this text are in
    data["seconds"] = time.perf_counter() - t0
    return data


def lens(uri: str) -> types.CodeLens:
    return types.CodeLens(
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        command=types.Command(title="Show memory map", command=SHOW_MEMORY_MAP, arguments=[uri]),
    )


def register(ls: PyptoServer) -> None:
    @ls.feature(MEMORY_MAP)
    def memory_map_request(params: Any) -> dict[str, Any]:
        uri, _ = _uri(params)
        return map_for(ls, uri)
