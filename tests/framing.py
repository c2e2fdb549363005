"""``Content-Length`` framing (the base protocol of LSP and DAP) for the tests' own clients: written
here, not taken from the server, so a framing bug there cannot hide from them."""

from __future__ import annotations

from typing import IO


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The body of the next framed message, or None at the end of the stream."""
    headers: dict[str, str] = {}
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        k, _, v = line.decode("ascii", "replace").partition(":")
        headers[k.strip().lower()] = v.strip()
    return stream.read(int(headers.get("content-length", "0")))


def frame(body: bytes) -> bytes:
    """``body`` framed."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
