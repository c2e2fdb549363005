"""``workspace/didChangeWatchedFiles``: a re-compiled dump folder invalidates results and re-checks open files.

Registered dynamically (``client/registerCapability``, see :mod:`.lifecycle`) when the client
can, for the dumps, the config files and the golden bundles. A recompile rewrites ~50 files at
once, so events are collected for a moment and handed to the core as one batch
(:meth:`..core.Core.files_changed`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types

from ..core import Core
from ..documents import uri_to_path
from ..lsp import PyptoServer

BATCH_S = 0.3


def register(ls: PyptoServer, core: Core) -> None:
    pending: set[Path] = set()
    handle: list[asyncio.TimerHandle] = []

    def flush() -> None:
        handle.clear()
        paths = sorted(pending)
        pending.clear()
        if paths:
            ls.log(f"{len(paths)} watched file(s) changed: {', '.join(p.name for p in paths[:5])}{' ...' if len(paths) > 5 else ''}")
            core.files_changed(paths)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        for ev in params.changes:
            p = uri_to_path(ev.uri)
            if p is not None:
                pending.add(p)
        if handle:
            handle[0].cancel()
            handle.clear()
        handle.append(asyncio.get_running_loop().call_later(BATCH_S, flush))
