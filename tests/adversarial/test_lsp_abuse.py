"""The language server under abuse, over raw stdio JSON-RPC (the real server and its worker):
requests with missing or invalid params (answered with InvalidParams; pygls itself logs and
drops them), malformed messages, ``kill -9`` of the worker, shutdown without orphans, misspelt
config keys as diagnostics on the config file, numeric pass order in ``validateFolder``."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import make_case, needs_fixtures
from .rpc import RawServer

pytestmark = needs_fixtures

INVALID_PARAMS = -32602


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawServer]:
    s = RawServer(tmp_path / "cache")
    try:
        yield s
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def debug_info(s: RawServer, id: str) -> dict[str, Any]:
    r = s.request(id, "pypto-lsp/debugInfo", {})
    return r["result"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("method", "params", "with_params"),
    [
        ("textDocument/hover", None, False),
        ("textDocument/hover", {}, True),
        ("textDocument/hover", {"textDocument": {"uri": 5}, "position": {"line": "x"}}, True),
        ("textDocument/codeLens", {}, True),
        ("textDocument/definition", [], True),
        ("textDocument/references", {"textDocument": {"uri": "file:///x.py"}, "position": {"line": 0, "character": 0}}, True),
        ("textDocument/documentSymbol", {"textDocument": {}}, True),
        ("workspace/executeCommand", {}, True),
        ("workspace/executeCommand", {"command": "pypto-lsp.validateFile"}, True),
        ("workspace/executeCommand", {"command": "pypto-lsp.validateFolder", "arguments": [{"x": 1}]}, True),
    ],
)
def test_invalid_params_get_invalid_params(server: RawServer, tmp_path: Path, method: str, params: Any, with_params: bool) -> None:
    server.initialize(tmp_path)
    r = server.request(1, method, params, with_params=with_params, timeout=20)
    assert r.get("error", {}).get("code") == INVALID_PARAMS, r
    # and the server goes on answering
    assert "result" in server.request(2, "pypto-lsp/debugInfo", {})
    assert server.stop() == 0


def test_malformed_json_rpc_is_survived(server: RawServer, tmp_path: Path) -> None:
    server.initialize(tmp_path)
    for body in (b"{not json", b"[1, 2, 3]", b"42", b'"str"', b"{}", b'{"jsonrpc": "1.0", "id": 9, "method": "x"}', b"\xff\xfe\x00"):
        server.send_bytes(body)
    server.send({"id": 3, "method": "no/suchMethod", "params": {}})
    r = server.wait(lambda m: m.get("id") == 3, 20)
    assert r["error"]["code"] == -32601  # method not found
    server.send(
        {
            "id": 4,
            "method": "textDocument/hover",
            "params": {"textDocument": {"uri": "file:///nope.py"}, "position": {"line": 10**9, "character": -1}},
        }
    )
    r = server.wait(lambda m: m.get("id") == 4, 20)
    assert "result" in r or r.get("error", {}).get("code") == INVALID_PARAMS
    assert "result" in server.request(5, "pypto-lsp/debugInfo", {})
    assert server.stop() == 0


def open_dump(s: RawServer, path: Path, version: int = 1) -> str:
    uri = path.as_uri()
    s.send(
        {
            "method": "textDocument/didOpen",
            "params": {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": path.read_text()}},
        }
    )
    return uri


def wait_file_result(s: RawServer, uri: str, timeout: float = 180) -> dict[str, Any]:
    m = s.wait(lambda m: m.get("method") == "pypto-lsp/fileResult" and m["params"].get("uri") == uri, timeout)
    return m["params"]  # type: ignore[no-any-return]


def test_worker_kill_9_and_shutdown_without_orphans(server: RawServer, tmp_path: Path) -> None:
    case = make_case(tmp_path, 2)
    server.initialize(case)
    uri = open_dump(server, case / "passes_dump" / "00_frontend.py")
    assert wait_file_result(server, uri)["status"] == "pass"
    first = debug_info(server, "d1")["worker_pid"]
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while alive(first) and time.monotonic() < deadline:
        time.sleep(0.1)
    r = server.request("v", "workspace/executeCommand", {"command": "pypto-lsp.validateFile", "arguments": [uri]}, timeout=180)
    assert r["result"]["status"] == "pass", r
    second = debug_info(server, "d2")["worker_pid"]
    assert second and second != first
    assert server.stop() == 0
    deadline = time.monotonic() + 15
    while alive(second) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(second), "the worker outlived the server"


def test_server_killed_leaves_no_worker(server: RawServer, tmp_path: Path) -> None:
    case = make_case(tmp_path, 1)
    server.initialize(case)
    uri = open_dump(server, case / "passes_dump" / "00_frontend.py")
    wait_file_result(server, uri)
    worker = debug_info(server, "d")["worker_pid"]
    server.proc.kill()
    server.proc.wait()
    deadline = time.monotonic() + 30
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(worker)


def test_misspelt_config_key_is_a_diagnostic_on_the_config_file(server: RawServer, tmp_path: Path) -> None:
    case = make_case(tmp_path, 1)
    cfg = case / "pypto-lsp.toml"
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\ninputs = "tensors.pt"\nexpected = "expected.pt"\nrtoll = 5\n')
    server.initialize(case)
    open_dump(server, case / "passes_dump" / "00_frontend.py")
    m = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == cfg.as_uri(), 60)
    (d,) = m["params"]["diagnostics"]
    assert d["range"]["start"] == {"line": 4, "character": 0} and d["range"]["end"] == {"line": 4, "character": 5}
    assert d["severity"] == 2 and d["code"] == "unknown-config-key" and "did you mean 'rtol'" in d["message"]
    assert server.stop() == 0


def test_validate_folder_first_divergent_in_numeric_order(server: RawServer, tmp_path: Path) -> None:
    names = ["0_frontend.py", "2_after_A.py", "89_after_Y.py", "100_after_B.py", "1001_after_X.py"]
    case = make_case(tmp_path, names=names, bug_from=2)
    server.initialize(case)
    r = server.request(
        "f",
        "workspace/executeCommand",
        {"command": "pypto-lsp.validateFolder", "arguments": [(case / "passes_dump").as_uri()]},
        timeout=300,
    )
    res = r["result"]
    assert [Path(f["file"]).name for f in res["files"]] == names
    assert res["first_divergent"].endswith("/89_after_Y.py"), res["first_divergent"]
    assert server.stop() == 0
