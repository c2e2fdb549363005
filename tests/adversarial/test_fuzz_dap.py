"""Property-based fuzzing (hypothesis) of the debugger's wire (issue 35, item 1): any bytes, and
any frame around any JSON-ish body, read by :func:`pypto_lsp.debug.wire.read_message` and answered
by the :class:`~pypto_lsp.debug.adapter.Adapter` never raise; every answer is a framed JSON
message; the stream goes on (a good request after the bad input is answered).

Quick in CI (``PYPTO_LSP_FUZZ_EXAMPLES``, default 40 per test, derandomized). For a long run:
``PYPTO_LSP_FUZZ_EXAMPLES=20000 PYPTO_LSP_FUZZ_RANDOM=1 pytest tests/adversarial/test_fuzz_dap.py``.
"""

from __future__ import annotations

import io
import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto_lsp.debug.adapter import Adapter
from pypto_lsp.debug.wire import Invalid, read_message
from tests.framing import frame, read_frame

N = int(os.environ.get("PYPTO_LSP_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=N,
    deadline=None,
    derandomize=not os.environ.get("PYPTO_LSP_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=list(HealthCheck),
)
PROBE = frame(json.dumps({"seq": 7, "type": "request", "command": "threads"}).encode())
COMMANDS = [
    "initialize",
    "threads",
    "stackTrace",
    "scopes",
    "variables",
    "evaluate",
    "setBreakpoints",
    "continue",
    "next",
    "stepBack",
    "restartFrame",
    "restart",
    "pause",
    "launch",
    "pyptoErrorMap",
    "nope",
    "",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)
HEADERS = [b"Content-Length: -1", b"Content-Length: 99999999999999", b"Content-Length: 0", b"Content-Length: x", b"Content-Type: a", b""]


def _serve(data: bytes) -> list[dict]:
    """Feed ``data`` then a good request to an adapter; its answers (the adapter must answer the probe)."""
    out = io.BytesIO()
    a = Adapter(out)
    inp = io.BytesIO(data + b"\r\n\r\n" + PROBE)
    for _ in range(10_000):
        msg = read_message(inp)
        if msg is None:
            break
        assert isinstance(msg, dict | Invalid)
        if not a.handle(msg):
            break
    out.seek(0)
    answers = []
    while (body := read_frame(out)) is not None and body:
        answers.append(json.loads(body))
    return answers


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes(data: bytes) -> None:
    _serve(data)


@FUZZ
@given(st.sampled_from(HEADERS), st.binary(max_size=200))
def test_bad_headers_then_a_request_is_answered(header: bytes, body: bytes) -> None:
    answers = _serve(header + b"\r\n\r\n" + body)
    assert any(m.get("request_seq") == 7 and m.get("command") == "threads" for m in answers) or b"\r\n\r\n" in body


@FUZZ
@given(json_values, st.sampled_from(COMMANDS), json_values, json_values)
def test_requests_with_any_fields(seq: object, command: str, args: object, extra: object) -> None:
    msg = {"seq": seq, "type": "request", "command": command, "arguments": args, "x": extra}
    body = json.dumps(msg, allow_nan=True).encode()
    answers = _serve(frame(body))
    assert all(m["type"] in ("response", "event") for m in answers)
    assert any(m.get("request_seq") == 7 for m in answers)
