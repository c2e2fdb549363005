"""The Debug Adapter Protocol's base protocol: ``Content-Length`` framed JSON. No frame can end or
silence the adapter: a bad header, a length out of bounds, a body that is not a JSON object (too
deep, an integer past Python's digit limit, ``NaN``) or a request whose ``seq`` / ``command`` is
not what DAP says becomes an :class:`Invalid` message, answered by the adapter, and reading goes
on at the next header."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["MAX_FRAME", "Invalid", "read_message", "write_message"]

MAX_FRAME = 16 * 2**20  # bytes of one message body (a launch's arguments, breakpoints: kilobytes)
_MAX_HEADER_LINE = 8192
_MAX_SEQ = 2**53  # a JSON number every client reads exactly


@dataclass(slots=True)
class Invalid:
    """A frame that is not a valid message: why, and the request's seq/command when readable."""

    reason: str
    seq: int = 0
    command: str = ""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_message(stream: IO[bytes]) -> dict[str, Any] | Invalid | None:
    """The next message, an :class:`Invalid` one, or None at the end of the stream."""
    length: int | None = None
    bad: str | None = None
    while True:
        line = stream.readline(_MAX_HEADER_LINE)
        if not line:
            return None
        text = line.strip().decode("ascii", "replace")
        if not text:
            if length is not None or bad is not None:
                break
            continue
        # a header may follow the rest of a body that could not be read (resynchronise on it)
        at = text.lower().rfind("content-length:")
        if at < 0:
            continue
        v = text[at + len("content-length:") :].strip()
        length, bad = None, None
        if not v.isdigit() or len(v) > 12:
            bad = f"Content-Length '{v[:20]}' is not a byte count"
        elif int(v) > MAX_FRAME:
            bad = f"Content-Length {v} is over the {MAX_FRAME // 2**20} MiB limit of a message"
        else:
            length = int(v)
    if bad is not None or length is None:
        return Invalid(bad or "no Content-Length")
    body = stream.read(length)
    if len(body) < length:
        return None
    try:
        msg = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        return Invalid("the message is nested too deep")
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, an integer over the digit limit, NaN
        return Invalid(f"the message is not JSON: {str(exc)[:200]}")
    if not isinstance(msg, dict):
        return Invalid("the message is not a JSON object")
    seq = msg.get("seq", 0)
    command = msg.get("command", "")
    ok_seq = isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq <= _MAX_SEQ
    if not ok_seq or not isinstance(command, str) or len(command) > 200:
        return Invalid(
            "'seq' must be a non-negative integer and 'command' a name",
            seq if ok_seq else 0,
            command if isinstance(command, str) and len(command) <= 200 else "",
        )
    if isinstance(msg.get("type"), str) is False:
        return Invalid("'type' must be a string", seq, command)
    return msg


def write_message(stream: IO[bytes], msg: dict[str, Any]) -> None:
    """Write ``msg`` framed; a value JSON cannot hold (NaN, a number past float range) is written
    as text rather than dropping the message."""
    try:
        data = json.dumps(msg, allow_nan=False, default=str).encode("utf-8")
    except ValueError:
        data = json.dumps(_finite(msg), allow_nan=False, default=str).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
    stream.flush()


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_finite(x) for x in v]
    return v
