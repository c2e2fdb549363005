"""The pypto-lsp language server: pygls 2 glue, one module per LSP feature.

``serve()`` runs it over stdio (or TCP for debugging). The server process never
imports torch: numeric validation and code generation run in a worker process
(:mod:`.worker_client`, :mod:`pypto_lsp.worker`), so the server starts instantly and a
hung or crashed run is killed without losing the editor session. Parsing and static
checks (the ``ir`` layer, pure Python) run here.

Modules: :mod:`.documents` (which files, text sync), :mod:`.parse_diagnostics`,
:mod:`.validation`, :mod:`.code_lens`, :mod:`.hover`, :mod:`.goto`, :mod:`.symbols`,
:mod:`.commands`, :mod:`.config`, :mod:`.watch`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import ResponseError

from .. import __version__
from . import code_lens, commands, documents, goto, hover, pictures, symbols, watch
from . import config as cfg
from .documents import Documents, uri_to_path
from .worker_client import WorkerClient

log = logging.getLogger("pypto_lsp.server")

_MESSAGE_TYPE = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
    logging.DEBUG: types.MessageType.Log,
}


class PyptoProtocol(LanguageServerProtocol):
    """Adds hooks to ``$/cancelRequest``: pygls cancels the request's future, but a command runs
    as an inner task it does not cancel, so a folder run registers its own stop here."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls drops a request whose params do not fit its type (it logs, never replies: the
        client waits forever). Answer it with InvalidParams (-32602) instead."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not (isinstance(data, dict) and "method" in data and "id" in data and isinstance(data["id"], int | str)):
                raise  # a notification (no reply is due) or a response we cannot pair
            cause = exc.__cause__
            try:
                from cattrs import transform_error

                why = "; ".join(transform_error(cause)[:3]) if isinstance(cause, Exception) else type(exc).__name__
            except Exception:
                why = type(cause or exc).__name__
            why = why[:300]
            err = JsonRpcInvalidParams(f"invalid params for {str(data['method'])[:100]}: {why}")
            self._send_response(data["id"], error=ResponseError(code=err.code, message=err.message))
            return _DROPPED

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        hook = self._server.cancel_hooks.pop(msg_id, None)  # type: ignore[attr-defined]
        if hook is not None:
            hook()
        super()._handle_cancel_notification(msg_id)


class _Dropped:
    """A message already answered: ``handle_message`` ignores it (not JSON-RPC 2.0)."""

    jsonrpc = "dropped"


_DROPPED = _Dropped()


class PyptoServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "pypto-lsp", __version__, protocol_cls=PyptoProtocol, text_document_sync_kind=types.TextDocumentSyncKind.Incremental
        )
        self.docs = Documents()
        self.config = cfg.ConfigCache()
        self.worker = WorkerClient(self.log)
        self.parse_tasks: dict[str, asyncio.Task[Any]] = {}
        self.run_tasks: dict[str, asyncio.Task[Any]] = {}
        self.localize_tasks: dict[str, tuple[tuple[Any, ...], asyncio.Task[Any]]] = {}
        self.folder_runs: dict[Any, asyncio.Event] = {}
        self.cancel_hooks: dict[Any, Any] = {}
        self.published: set[str] = set()
        # config files checked for unknown keys (see config_warnings): stamp, and whether any
        self.config_warned: dict[Any, tuple[int, int, int]] = {}
        self.config_warned_any: dict[Any, bool] = {}
        self._lens_refresh: asyncio.TimerHandle | None = None
        self._initialized = False

    # ------------------------------------------------------------------ helpers

    @property
    def position_encoding(self) -> str:
        try:
            enc = self.workspace.position_encoding
        except RuntimeError:
            enc = None
        return str(enc) if enc else types.PositionEncodingKind.Utf16

    def log(self, message: str, level: int = logging.INFO) -> None:
        """To the log file / stderr and, from INFO up, to the client (window/logMessage)."""
        log.log(level, message)
        if level >= logging.INFO and self.protocol.writer is not None:
            with contextlib.suppress(Exception):
                self.window_log_message(types.LogMessageParams(type=_MESSAGE_TYPE.get(level, types.MessageType.Log), message=message))

    def refresh_lenses(self) -> None:
        """``workspace/codeLens/refresh``, coalesced (a folder run produces a burst of results)."""
        caps = self.client_capabilities
        ws = caps.workspace if caps else None
        if not (ws and ws.code_lens and ws.code_lens.refresh_support) or not self._initialized:
            return
        if self._lens_refresh is not None:
            return

        def fire() -> None:
            self._lens_refresh = None
            with contextlib.suppress(Exception):
                self.workspace_code_lens_refresh(None)

        self._lens_refresh = asyncio.get_running_loop().call_later(0.05, fire)

    def first_divergent_location(self, uri: str) -> types.Location | None:
        from .validation import first_divergent_location

        return first_divergent_location(self, uri)

    def on_settings_changed(self, before: cfg.Settings, after: cfg.Settings) -> None:
        from . import validation
        from .publish import publish

        for st in self.docs.all():
            if not st.is_open:
                continue
            if not after.validation:
                validation.cancel(self, st.uri)
                st.result = None
                st.pending = st.no_golden = False
                st.config_error = None
                publish(self, st.uri)
            elif before.validation != after.validation or (
                before.rtol,
                before.atol,
                before.golden_inputs,
                before.golden_expected,
                before.timeout_s,
                before.max_alloc,
            ) != (after.rtol, after.atol, after.golden_inputs, after.golden_expected, after.timeout_s, after.max_alloc):
                asyncio.ensure_future(validation.on_open(self, st.uri))
        self.refresh_lenses()


def create_server() -> PyptoServer:
    ls = PyptoServer()

    @ls.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        root = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
        if root is None and params.root_path:
            root = documents.path_to_uri(params.root_path)
        ls.config.root = uri_to_path(root) if root else None
        if params.initialization_options is not None:
            cfg.apply(ls, params.initialization_options, "initializationOptions")
        client = params.client_info.name if params.client_info else "unknown client"
        ls.log(f"pypto-lsp {__version__} for {client} (python {sys.version.split()[0]}, pid {os.getpid()}); root {ls.config.root}")

    @ls.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        ls._initialized = True
        if ls.config.settings.validation:
            # warm the worker now: importing torch takes seconds, the first save should not
            def report(f: asyncio.Future[Any]) -> None:
                if not f.cancelled() and f.exception() is not None:
                    ls.log(f"validation worker: {f.exception()}", logging.ERROR)

            asyncio.ensure_future(ls.worker.start()).add_done_callback(report)
        pulled = await cfg.pull(ls)
        if pulled is not None:
            cfg.apply(ls, pulled, "workspace/configuration")
        await watch.register_watchers(ls)

    @ls.feature(types.SHUTDOWN)
    async def shutdown(params: Any) -> None:
        ls.log("shutting down")
        for t in list(ls.run_tasks.values()) + list(ls.parse_tasks.values()) + [t for _, t in ls.localize_tasks.values()]:
            t.cancel()
        for ev in list(ls.folder_runs.values()):
            ev.set()
        # pygls cancels the other in-flight requests after this handler while iterating the
        # very dict the cancellations modify; doing it here first (over a copy) avoids that
        me, this = ls.protocol.msg_id, asyncio.current_task()
        for mid, fut in list(ls.protocol._request_futures.items()):
            if mid != me and fut is not this and not fut.done():
                fut.cancel()
        await ls.worker.stop()

    for module in (documents, cfg, code_lens, hover, goto, symbols, commands, watch, pictures):
        module.register(ls)
    from . import memmap

    memmap.register(ls)
    return ls


def _setup_logging(log_file: str | None) -> None:
    root = logging.getLogger()
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_file:
        h: logging.Handler = logging.FileHandler(log_file, encoding="utf-8")
        h.setLevel(logging.DEBUG)
        root.setLevel(logging.DEBUG)
    else:
        h = logging.StreamHandler(sys.stderr)
        h.setLevel(logging.WARNING)
        root.setLevel(logging.INFO)
    h.setFormatter(fmt)
    root.addHandler(h)
    # pygls logs every message at DEBUG/INFO; keep its chatter out unless a file asked for everything
    logging.getLogger("pygls").setLevel(logging.INFO if log_file else logging.WARNING)


def serve(tcp: bool = False, host: str = "127.0.0.1", port: int = 2087, log_file: str | None = None) -> int:
    _setup_logging(log_file)
    ls = create_server()
    try:
        if tcp:
            ls.start_tcp(host, port)
        else:
            ls.start_io()
    finally:
        pid = ls.worker.pid
        if pid is not None:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
    return 0
