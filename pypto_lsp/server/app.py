"""The pypto-lsp language server: builds the core and registers one handler module per LSP feature.

``serve()`` runs it over stdio (or TCP for debugging). The server process never
imports torch: numeric validation and code generation run in a worker process
(:mod:`.worker_client`, :mod:`pypto_lsp.worker`), so the server starts instantly and a
hung or crashed run is killed without losing the editor session. Parsing and static
checks (the ``ir`` layer, pure Python) run here.

The floors (ARCHITECTURE.md): :mod:`.features` (handlers) over :mod:`.lsp` (pygls, and the
core's :class:`.ports.Client`) and the pure converters (:mod:`.diagnostics`, :mod:`.lenses`,
:mod:`.results`, :mod:`.convert`) over the protocol-free core (:mod:`.core`,
:mod:`.validation`, :mod:`.documents`, :mod:`.config`, :mod:`.worker_client`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys

from .core import Core
from .features import code_lens, commands, golden_case, goto, hover, lifecycle, memmap, pictures, settings, symbols, sync, taskgraph, watch
from .lsp import PyptoServer

FEATURES = (lifecycle, sync, settings, code_lens, hover, goto, symbols, commands, golden_case, watch, pictures, memmap, taskgraph)


def create_server() -> PyptoServer:
    ls = PyptoServer()
    ls.core = core = Core(ls)
    for feature in FEATURES:
        feature.register(ls, core)
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
        pid = ls.core.worker.pid
        if pid is not None:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
    return 0
