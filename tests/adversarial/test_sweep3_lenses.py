"""Issue 35 item 22: "Actual command not found, wanted to execute pypto-lsp.debugPass /N" in the
debugger's screenshot. VS Code drops the commands of the lenses a ``workspace/codeLens/refresh``
replaces, and a click landing during the swap fails with that toast; the server asked for a
refresh after every result in the folder (a closed pass validated, the previous pass fetched),
even when the open dump's lenses stayed the same. A refresh now goes out only when a lens the
client was given would change. (The real-VS-Code e2e fails on any such toast:
vscode-extension/test/e2e/e2e.js, ``<scenario>.no-command-not-found``.)"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .examples_case import example
from .rpc import RawServer

REFRESH = "workspace/codeLens/refresh"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawServer]:
    s = RawServer(tmp_path / "cache")
    try:
        yield s
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def _refreshes(s: RawServer, seconds: float) -> int:
    """How many lens refreshes the server asks for within ``seconds`` (each answered)."""
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            s.wait(lambda m: m.get("method") == REFRESH, timeout=max(0.05, end - time.monotonic()))
            n += 1
        except TimeoutError:
            break
    return n


def _lenses(s: RawServer, id: str, uri: str) -> list[dict[str, Any]]:
    r = s.request(id, "textDocument/codeLens", {"textDocument": {"uri": uri}})
    return r["result"]  # type: ignore[no-any-return]


def test_a_result_elsewhere_does_not_remake_the_open_dumps_lenses(server: RawServer, tmp_path: Path) -> None:
    case = example(tmp_path)
    dumps = sorted((case / "passes_dump").glob("*.py"))
    opened, other = dumps[-1], dumps[1]
    caps = {"workspace": {"codeLens": {"refreshSupport": True}}}
    server.request("init", "initialize", {"processId": None, "rootUri": case.as_uri(), "capabilities": caps})
    server.send({"method": "initialized", "params": {}})
    uri = opened.as_uri()
    server.send(
        {
            "method": "textDocument/didOpen",
            "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": opened.read_text()}},
        }
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # until the verdict is on the lens
        titles = [lens["command"]["title"] for lens in _lenses(server, f"l{time.monotonic()}", uri)]
        if any(t.startswith("✓") for t in titles):
            break
        time.sleep(0.3)
    else:
        raise AssertionError(f"no verdict lens: {titles}")
    quiet = time.monotonic() + 60
    while _refreshes(server, 1.5) and time.monotonic() < quiet:  # what the first run still sends
        pass
    before = _lenses(server, "before", uri)  # what the client shows now
    # another pass of the folder, closed, validated: the open dump's lenses do not change
    r = server.request("v", "workspace/executeCommand", {"command": "pypto-lsp.validateFile", "arguments": [other.as_uri()]}, timeout=180)
    assert "result" in r, r
    n = _refreshes(server, 2.0)
    assert _lenses(server, "after", uri) == before
    assert n == 0, f"{n} lens refresh(es) that changed nothing (each drops the commands of the lenses a click may land on)"
    # a change that does touch them still refreshes: the open dump validated again (its time changes)
    server.request("v2", "workspace/executeCommand", {"command": "pypto-lsp.validateFile", "arguments": [uri]}, timeout=180)
    assert _refreshes(server, 3.0) >= 1
    assert server.stop() == 0
