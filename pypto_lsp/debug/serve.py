"""``pypto-lsp debug``: the adapter on stdio, or on a TCP socket (``--port``; an unusable port or
a connection reset is a message and exit status 2, never a traceback)."""

from __future__ import annotations

import socket
import sys
from typing import IO

from .adapter import Adapter
from .wire import read_message

__all__ = ["serve_stdio", "serve_port"]


def _loop(inp: IO[bytes], out: IO[bytes]) -> OSError | None:
    """Serve one client to its end; the connection's error when it went away (a reset)."""
    a = Adapter(out)
    try:
        while True:
            msg = read_message(inp)
            if msg is None:
                break
            if not a.handle(msg):
                break
        return None
    except OSError as exc:  # the connection went away (a reset): the session ends
        return exc
    finally:
        if a.session is not None:
            a.session.terminate()


def serve_stdio() -> int:
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the protocol stream
    from ..validate.process_setup import configure_process

    configure_process()
    _loop(sys.stdin.buffer, out)
    return 0


def serve_port(port: int, host: str = "127.0.0.1") -> int:
    """DAP on ``host:port``; a port that cannot be used is a message and exit status 2."""
    if not 0 <= port <= 65535:
        print(f"pypto-lsp debug: --port {port}: a port is 0 (any free one) to 65535", file=sys.stderr)
        return 2
    from ..validate.process_setup import configure_process

    configure_process()
    try:
        srv = socket.create_server((host, port))
    except OSError as exc:
        print(f"pypto-lsp debug: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    with srv:
        print(f"pypto-lsp debug: listening on {host}:{srv.getsockname()[1]}", file=sys.stderr, flush=True)
        try:
            conn, _ = srv.accept()
            with conn, conn.makefile("rb") as inp, conn.makefile("wb") as outp:
                err = _loop(inp, outp)
        except OSError as exc:
            err = exc
    if err is not None:
        print(f"pypto-lsp debug: the connection ended: {err.strerror or err}", file=sys.stderr)
        return 2
    return 0
