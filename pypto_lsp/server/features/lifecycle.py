"""``initialize``, ``initialized`` and ``shutdown``."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from lsprotocol import types

from ... import __version__
from ...validate.config import CONFIG_NAMES, GOLDEN_SUFFIXES
from ..core import Core
from ..documents import path_to_uri, uri_to_path
from ..lsp import PyptoServer


def register(ls: PyptoServer, core: Core) -> None:
    @ls.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        root = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
        if root is None and params.root_path:
            root = path_to_uri(params.root_path)
        core.config.root = uri_to_path(root) if root else None
        if params.initialization_options is not None:
            core.apply_settings(params.initialization_options, "initializationOptions")
        client = params.client_info.name if params.client_info else "unknown client"
        ls.log(f"pypto-lsp {__version__} for {client} (python {sys.version.split()[0]}, pid {os.getpid()}); root {core.config.root}")

    @ls.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        ls.mark_initialized()
        if core.config.settings.validation:
            # warm the worker now: importing torch takes seconds, the first save should not
            def report(f: asyncio.Future[Any]) -> None:
                if not f.cancelled() and f.exception() is not None:
                    ls.log(f"validation worker: {f.exception()}", logging.ERROR)

            asyncio.ensure_future(core.worker.start()).add_done_callback(report)
        pulled = await ls.pull_settings()
        if pulled is not None:
            core.apply_settings(pulled, "workspace/configuration")
        await register_watchers(ls)

    @ls.feature(types.SHUTDOWN)
    async def shutdown(params: Any) -> None:
        ls.log("shutting down")
        core.shutdown()
        # pygls cancels the other in-flight requests after this handler while iterating the
        # very dict the cancellations modify; doing it here first (over a copy) avoids that
        me, this = ls.protocol.msg_id, asyncio.current_task()
        for mid, fut in list(ls.protocol._request_futures.items()):
            if mid != me and fut is not this and not fut.done():
                fut.cancel()
        await core.worker.stop()


GLOBS = ("**/passes_dump*/*.py", *(f"**/{n}" for n in CONFIG_NAMES), *(f"**/*{s}" for s in GOLDEN_SUFFIXES))


async def register_watchers(ls: PyptoServer) -> None:
    """``client/registerCapability`` for ``workspace/didChangeWatchedFiles`` (see :mod:`.watch`)."""
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
