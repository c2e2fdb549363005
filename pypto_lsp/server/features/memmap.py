"""The memory map for any LSP client: ``pypto-lsp/memoryMap`` ``{"uri": dump}``.

Answers :func:`pypto_lsp.ir.memmap.memory_map` of the dump's current text (the open
editor's, else the file on disk): a strip per kernel and memory space, a bar per placed
value, the overlaps in red. When the server holds a validation result of that same text,
its memory findings (the sanitizer's) are added. Nothing runs; no torch. The lens
"Show memory map" (:mod:`..lenses`) opens the VS Code extension's webview of it.
"""

from __future__ import annotations

import time
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from ...ir.memmap import memory_map, memory_map_text
from ...validate.report import Hazard, hazards_of
from ..contract import MEMORY_MAP
from ..convert import request_uri
from ..core import Core
from ..lsp import PyptoServer
from ..validation import NotADump


def map_for(core: Core, uri: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        snap = core.validator.snapshot(uri)
    except (NotADump, OSError) as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    st = core.docs.get(uri)
    findings: list[Hazard] = []
    with_run = False
    if st is not None and st.result is not None and st.result_hash == snap.hash and not st.pending:
        findings = list(hazards_of(st.result))
        with_run = bool(st.result.memory and st.result.memory["checked"])
    path, backend = str(snap.path), snap.resolved.settings.backend
    if st is not None and st.program is not None and st.parsed_hash == snap.hash:
        data = memory_map(st.program, findings, backend=backend, file=path)
    else:
        data = memory_map_text(snap.text, findings, filename=path, backend=backend)
    data["uri"] = uri
    data["run"] = with_run  # the findings of a validation of this text are in
    data["seconds"] = time.perf_counter() - t0
    return data


def register(ls: PyptoServer, core: Core) -> None:
    @ls.feature(MEMORY_MAP)
    def memory_map_request(params: Any) -> dict[str, Any]:
        uri, _ = request_uri(params)
        return map_for(core, uri)
