"""Issue 35, items 1-5 and 9: the debugger's wire and lifecycle under hostile input. Each test
drives the real ``python -m pypto_lsp debug`` (tests/dap_client.py) or the real CLI."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dap_client import ROOT, DapClient
from tests.framing import frame

EXAMPLE = ROOT / "examples" / "elementwise" / "passes_dump"


def _raw(c: DapClient, data: bytes) -> None:
    assert c.proc.stdin is not None
    c.proc.stdin.write(data)
    c.proc.stdin.flush()


@pytest.mark.parametrize(
    "data",
    [
        b"Content-Length: -1\r\n\r\n{}",
        b"Content-Length: 99999999999999\r\n\r\n{}",
        frame(b"[" * 200_000 + b"]" * 200_000),
        frame(b'{"seq": 1, "type": "request", "command": "threads", "arguments": {"x": ' + b"7" * 5000 + b"}}"),
        frame(b'{"seq": NaN, "type": "request", "command": "threads"}'),
        frame(b'{"seq": 1e400, "type": "request", "command": "threads"}'),
        frame(b'{"seq": 3, "type": "request", "command": NaN}'),
        frame(b'{"seq": 3, "type": "request", "command": 5}'),
    ],
    ids=["length-1", "length-huge", "deep", "digits", "seq-nan", "seq-1e400", "command-nan", "command-int"],
)
def test_a_bad_frame_is_answered_and_the_session_goes_on(data: bytes) -> None:
    c = DapClient()
    try:
        c.request("initialize", {"adapterID": "pypto"})
        _raw(c, data)
        # the adapter is alive and answers the next request (a frame after the bad one)
        r = c.request("threads", timeout=30)
        assert r["body"]["threads"]
        assert c.proc.poll() is None
    finally:
        c.close()


def _dump() -> Path:
    return sorted(EXAMPLE.glob("*.py"))[-1]


def test_a_second_launch_is_refused_and_says_so() -> None:
    c = DapClient()
    try:
        c.request("initialize", {"adapterID": "pypto"})
        c.request("launch", {"program": str(_dump()), "stopOnEntry": True})
        r = c.request("launch", {"program": str(_dump())}, ok=False)
        assert not r["success"] and "one launch per session" in r["message"]
    finally:
        c.close()


@pytest.mark.parametrize("config", ["/dev/zero"])
def test_a_config_that_is_not_a_regular_file_is_refused(config: str, tmp_path: Path) -> None:
    c = DapClient()
    try:
        c.request("initialize", {"adapterID": "pypto"})
        r = c.request("launch", {"program": str(_dump()), "config": config}, ok=False, timeout=30)
        assert not r["success"] and "not a regular file" in r["message"]
        c.request("threads", timeout=10)
    finally:
        c.close()
    p = subprocess.run(
        [sys.executable, "-m", "pypto_lsp", "validate", str(EXAMPLE), "--config", config],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 2 and "not a regular file" in p.stderr


def test_a_fifo_config_is_refused(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "pypto-lsp.toml"
    os.mkfifo(fifo)
    c = DapClient()
    try:
        c.request("initialize", {"adapterID": "pypto"})
        r = c.request("launch", {"program": str(_dump()), "config": str(fifo)}, ok=False, timeout=30)
        assert not r["success"] and "not a regular file" in r["message"]
    finally:
        c.close()


def _debug_port(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pypto_lsp", "debug", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_port_out_of_range_is_a_message_and_exit_2(port: str) -> None:
    p = _debug_port("--port", port)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and "port" in p.stderr


def test_a_port_in_use_is_a_message_and_exit_2() -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        p = _debug_port("--port", str(busy.getsockname()[1]))
    assert p.returncode == 2 and "Traceback" not in p.stderr and "cannot listen" in p.stderr


def test_invalid_hit_conditions_are_unverified_with_a_message() -> None:
    c = DapClient()
    try:
        c.request("initialize", {"adapterID": "pypto"})
        dump = _dump()
        c.request("launch", {"program": str(dump), "stopOnEntry": True})
        line = next(i for i, t in enumerate(dump.read_text().splitlines(), 1) if " = pl." in t)
        r = c.request(
            "setBreakpoints",
            {
                "source": {"path": str(dump)},
                "breakpoints": [{"line": line, "hitCondition": "% 0"}, {"line": line, "hitCondition": "9" * 5000}],
            },
        )
        bps = r["body"]["breakpoints"]
        assert [b["verified"] for b in bps] == [False, False]
        assert all(b.get("message") for b in bps)
    finally:
        c.close()


def test_a_breakpoint_on_a_decorator_line_moves_to_the_first_statement() -> None:
    c = DapClient()
    try:
        c.request("initialize", {"adapterID": "pypto"})
        dump = _dump()
        c.request("launch", {"program": str(dump)})
        lines = dump.read_text().splitlines()
        deco = next(i for i, t in enumerate(lines, 1) if t.strip().startswith("@pl.function"))
        r = c.request("setBreakpoints", {"source": {"path": str(dump)}, "breakpoints": [{"line": deco}]})
        b = r["body"]["breakpoints"][0]
        assert b["verified"] and b["line"] > deco
    finally:
        c.close()


def test_a_program_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "passes_dump" / "01_after_Big.py"
    big.parent.mkdir()
    with big.open("wb") as f:  # 1 GiB, sparse: reading it whole would cost a gigabyte
        f.truncate(2**30)
    c = DapClient()
    try:
        c.request("initialize", {"adapterID": "pypto"})
        r = c.request("launch", {"program": str(big)}, ok=False, timeout=60)
        assert not r["success"] and "8 MiB" in r["message"]
        status = Path(f"/proc/{c.proc.pid}/status").read_text()
        peak_kb = int(next(t for t in status.splitlines() if t.startswith("VmHWM:")).split()[1])
        assert peak_kb < 700 * 1024, f"peak RSS {peak_kb // 1024} MB"
    finally:
        c.close()
