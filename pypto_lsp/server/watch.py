"""``workspace/didChangeWatchedFiles``: a re-compiled dump folder invalidates results and re-checks open files.

Registered dynamically (``client/registerCapability``) when the client can, for the
dumps, the config files and the golden bundles. A recompile rewrites ~50 files at
once, so events are collected for a moment and handled as one batch:

* a dump changed: every result of its folder is dropped (closed files lose their
  diagnostics) and the open dumps of that folder are validated again;
* a ``pypto-lsp.toml`` / ``pyproject.toml`` / golden bundle changed: the resolved
  configuration is dropped everywhere, and every open dump is re-checked.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..validate.config import CONFIG_NAMES, GOLDEN_SUFFIXES
from . import parse_diagnostics, validation
from .documents import uri_to_path
from .publish import publish

if TYPE_CHECKING:
    from .app import PyptoServer

BATCH_S = 0.3
GLOBS = ("**/passes_dump*/*.py", *(f"**/{n}" for n in CONFIG_NAMES), *(f"**/*{s}" for s in GOLDEN_SUFFIXES))


async def register_watchers(ls: PyptoServer) -> None:
    ws = ls.client_capabilities.workspace if ls.client_capabilities else None
    dcw = ws.did_change_watched_files if ws else None
    if not (dcw and dcw.dynamic_registration):
        ls.log("the client cannot watch files for us: recompiled dumps are noticed when reopened or saved")
        return
    opts = types.DidChangeWatchedFilesRegistrationOptions(watchers=[types.FileSystemWatcher(glob_pattern=g) for g in GLOBS])
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(id="pypto-lsp-watch", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=opts)
                ]
            )
        )
    except Exception as exc:
        ls.log(f"could not register file watchers: {exc}")


def invalidate(ls: PyptoServer, paths: list[Path]) -> None:
    """Drop what ``paths`` changing makes stale; re-check the open dumps concerned."""
    config_changed = any(p.name in CONFIG_NAMES or p.suffix in GOLDEN_SUFFIXES for p in paths)
    folders = {p.parent for p in paths if p.suffix == ".py"}
    if config_changed:
        ls.config.clear()
        folders |= {d.path.parent for d in ls.docs.all() if d.path is not None}
    recheck = []
    for folder in folders:
        for st in ls.docs.in_folder(folder):
            st.result = None
            st.result_hash = None
            st.no_golden = False
            st.config_error = None
            if st.is_open:
                recheck.append(st.uri)
            else:
                publish(ls, st.uri)  # clears what it showed
                ls.docs.drop(st.uri)
    ls.refresh_lenses()
    for uri in recheck:
        doc = ls.docs.get(uri)
        if doc is None:
            continue
        doc.parsed_hash = None  # the entry / config may differ now
        asyncio.ensure_future(_recheck(ls, uri))


async def _recheck(ls: PyptoServer, uri: str) -> None:
    await parse_diagnostics.parse_now(ls, uri)
    await validation.on_open(ls, uri)


def register(ls: PyptoServer) -> None:
    pending: set[Path] = set()
    handle: list[asyncio.TimerHandle] = []

    def flush() -> None:
        handle.clear()
        paths = sorted(pending)
        pending.clear()
        if paths:
            ls.log(f"{len(paths)} watched file(s) changed: {', '.join(p.name for p in paths[:5])}{' ...' if len(paths) > 5 else ''}")
            invalidate(ls, paths)

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
