"""The task graph for any LSP client: ``pypto-lsp/taskGraph`` ``{"uri": dump}``.

Answers :func:`pypto_lsp.formats.taskgraph.task_graph_layout` of the ``tasks`` of the dump's last
validation result (the runtime's tasks, dependencies and racing pairs, seen by the sanitizer):
nodes with ``x``/``y`` in layers, dependency and race segments. Nothing runs; no torch. With no
result yet, or a run without tasks, the answer has no nodes and says why in ``unavailable``;
``stale`` is true when the editor's text changed since that run. The lens "Show task graph"
(:mod:`..lenses`, on a dump with a race) opens the VS Code extension's webview of it.
"""

from __future__ import annotations

import time
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from ...formats.taskgraph import task_graph_layout
from ..contract import TASK_GRAPH
from ..convert import request_uri
from ..core import Core
from ..lsp import PyptoServer
from ..validation import NotADump


def graph_for(core: Core, uri: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        snap = core.validator.snapshot(uri)
    except (NotADump, OSError) as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    st = core.docs.get(uri)
    result = st.result if st is not None else None
    why = None
    if result is None:
        why = "not validated yet: the task graph comes from a run of the dump"
    elif result.tasks is None:
        why = "the last run had no runtime task (no Orchestration call with directions) or the sanitizer was off"
    data = task_graph_layout(result.tasks if result is not None else None, str(snap.path))
    data["uri"] = uri
    data["unavailable"] = why
    data["pending"] = bool(st is not None and st.pending)
    data["stale"] = bool(st is not None and result is not None and st.result_hash != snap.hash)
    data["seconds"] = time.perf_counter() - t0
    return data


def register(ls: PyptoServer, core: Core) -> None:
    @ls.feature(TASK_GRAPH)
    def task_graph_request(params: Any) -> dict[str, Any]:
        uri, _ = request_uri(params)
        return graph_for(core, uri)
