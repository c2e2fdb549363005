"""The LSP side of the server: pygls's ``LanguageServer`` with our protocol tweaks, and the
:class:`.ports.Client` the core talks to (diagnostics, lens refresh, notifications, log).

Knows nothing of runs or documents beyond the :class:`.documents.DocView` it is handed;
the handlers (:mod:`.features`) are registered on it by :func:`.app.create_server`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import ResponseError

from .. import __version__
from ..validate.config import ConfigWarning
from . import contract as C
from .config import SECTION
from .core import Core
from .diagnostics import config_warning_diagnostics, diagnostics_for
from .documents import DocView, path_to_uri

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
    """pygls's server, and the core's :class:`.ports.Client`."""

    core: Core  # set by app.create_server

    def __init__(self) -> None:
        super().__init__(
            "pypto-lsp", __version__, protocol_cls=PyptoProtocol, text_document_sync_kind=types.TextDocumentSyncKind.Incremental
        )
        self.cancel_hooks: dict[Any, Any] = {}  # request id -> what stops it ($/cancelRequest)
        self._published: set[str] = set()  # uris whose last publish was not empty
        self._lens_refresh: asyncio.TimerHandle | None = None
        # the lenses last answered per document, and how to make them now (features/code_lens.py):
        # a refresh that would change none of them is not sent, since VS Code drops the commands
        # of the lenses it replaces, and a click landing during the swap fails with "Actual
        # command not found, wanted to execute pypto-lsp.debugPass /N"
        self._served_lenses: dict[str, list[types.CodeLens]] = {}
        self.lens_source: Callable[[str], list[types.CodeLens] | None] | None = None
        self._initialized = False

    @property
    def position_encoding(self) -> str:
        try:
            enc = self.workspace.position_encoding
        except RuntimeError:
            enc = None
        return str(enc) if enc else types.PositionEncodingKind.Utf16

    async def pull_settings(self) -> Any:
        """``workspace/configuration`` for our section, when the client offers it."""
        ws = self.client_capabilities.workspace if self.client_capabilities else None
        if not (ws and ws.configuration):
            return None
        try:
            res = await self.workspace_configuration_async(types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]))
        except Exception as exc:
            self.log(f"workspace/configuration failed: {exc}")
            return None
        if not res or not isinstance(res[0], dict) or not res[0]:
            return None
        return res[0]

    def mark_initialized(self) -> None:
        """The client said ``initialized``: server-to-client requests may go now."""
        self._initialized = True

    # ------------------------------------------------------------------ ports.Client

    def log(self, message: str, level: int = logging.INFO) -> None:
        """To the log file / stderr and, from INFO up, to the client (window/logMessage)."""
        log.log(level, message)
        if level >= logging.INFO and self.protocol.writer is not None:
            with contextlib.suppress(Exception):
                self.window_log_message(types.LogMessageParams(type=_MESSAGE_TYPE.get(level, types.MessageType.Log), message=message))

    def publish(self, view: DocView) -> None:
        """``textDocument/publishDiagnostics``; a closed file only when it has something to show,
        or to clear what it showed before."""
        uri = view.uri
        diags = diagnostics_for(view, self.position_encoding)
        if not diags and not view.is_open and uri not in self._published:
            return
        if diags:
            self._published.add(uri)
        else:
            self._published.discard(uri)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=view.version if view.is_open else None)
        )

    def clear(self, uri: str) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def shown(self, uri: str) -> bool:
        return uri in self._published

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
            if self._lenses_unchanged():
                return
            with contextlib.suppress(Exception):
                self.workspace_code_lens_refresh(None)

        self._lens_refresh = asyncio.get_running_loop().call_later(0.05, fire)

    def lenses_served(self, uri: str, lenses: list[types.CodeLens]) -> None:
        """Record the lenses answered for ``uri`` (what the client shows until it asks again)."""
        self._served_lenses[uri] = lenses

    def _lenses_unchanged(self) -> bool:
        """True when every document's lenses are what the client was last given."""
        if self.lens_source is None or not self._served_lenses:
            return self.lens_source is not None  # nothing shown yet: the client asks when it shows some
        try:
            for uri, served in list(self._served_lenses.items()):
                now = self.lens_source(uri)
                if now is None:  # closed or gone: nothing to refresh there
                    del self._served_lenses[uri]
                elif now != served:
                    return False
        except Exception:  # never let the comparison cost a refresh
            log.exception("comparing lenses")
            return False
        return True

    def file_result(self, payload: dict[str, Any]) -> None:
        self.protocol.notify(C.FILE_RESULT_NOTIFICATION, payload)

    def config_warnings(self, path: Path, warnings: list[ConfigWarning], lines: list[str]) -> None:
        diags = config_warning_diagnostics(warnings, lines)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=path_to_uri(path), diagnostics=diags))
        if warnings:
            self.log(f"{path}: {len(warnings)} unknown key(s) ignored: {', '.join(w.key for w in warnings)}", logging.WARNING)
