"""A small Debug Adapter Protocol client for the tests and benchmarks: it starts the real
``python -m pypto_lsp debug`` subprocess and talks to it over stdio (Content-Length framing)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .framing import frame, read_frame

ROOT = Path(__file__).resolve().parents[1]


class DapError(AssertionError):
    pass


class DapClient:
    def __init__(self, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
        e = dict(os.environ)
        e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        e.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pypto_lsp", "debug"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(cwd or ROOT),
            env=e,
        )
        self.seq = 0
        self.responses: dict[int, dict[str, Any]] = {}
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []  # every event, in order
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.stderr: list[bytes] = []
        threading.Thread(target=lambda: self.stderr.extend(iter(self.proc.stderr.readline, b"")), daemon=True).start()  # type: ignore[union-attr]

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            body = read_frame(out)
            if body is None:
                return
            msg = json.loads(body)
            if msg.get("type") == "response":
                with self.cond:
                    self.responses[msg["request_seq"]] = msg
                    self.cond.notify_all()
            elif msg.get("type") == "event":
                self.seen.append(msg)
                self.events.put(msg)

    def send(self, command: str, arguments: dict[str, Any] | None = None) -> int:
        self.seq += 1
        msg = {"seq": self.seq, "type": "request", "command": command, "arguments": arguments or {}}
        data = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(data))
        self.proc.stdin.flush()
        return self.seq

    def wait_response(self, seq: int, timeout: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while seq not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DapError(f"no response to request {seq}; stderr: {b''.join(self.stderr).decode(errors='replace')[-2000:]}")
                self.cond.wait(left)
            return self.responses.pop(seq)

    def request(self, command: str, arguments: dict[str, Any] | None = None, timeout: float = 120.0, ok: bool = True) -> dict[str, Any]:
        r = self.wait_response(self.send(command, arguments), timeout)
        if ok and not r.get("success"):
            raise DapError(f"{command} failed: {r.get('message')}")
        return r

    def wait_event(self, name: str, timeout: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DapError(
                    f"no '{name}' event; seen: {[e['event'] for e in self.seen]}; stderr: {b''.join(self.stderr).decode(errors='replace')[-2000:]}"
                )
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if ev["event"] == name:
                return ev
            if name == "stopped" and ev["event"] == "terminated":
                out = "".join(e["body"].get("output", "") for e in self.seen if e["event"] == "output")
                raise DapError(f"the run ended before stopping; output: {out}")

    # the usual sequence -------------------------------------------------------------

    def start(self, launch: dict[str, Any], breakpoints: list[int] | None = None, exceptions: list[str] | None = None) -> dict[str, Any]:
        """initialize, launch, breakpoints, configurationDone; the setBreakpoints response."""
        self.request("initialize", {"adapterID": "pypto", "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path"})
        self.request("launch", launch, timeout=300)
        self.wait_event("initialized")
        bps: dict[str, Any] = {}
        if breakpoints is not None:
            bps = self.request("setBreakpoints", {"source": {"path": launch["program"]}, "breakpoints": [{"line": n} for n in breakpoints]})
        self.request("setExceptionBreakpoints", {"filters": exceptions or []})
        self.request("configurationDone")
        return bps

    def stack(self, thread: int) -> list[dict[str, Any]]:
        return self.request("stackTrace", {"threadId": thread})["body"]["stackFrames"]

    def locals(self, frame_id: int) -> dict[str, dict[str, Any]]:
        scopes = self.request("scopes", {"frameId": frame_id})["body"]["scopes"]
        ref = next(s["variablesReference"] for s in scopes if s["name"] == "Locals")
        return {v["name"]: v for v in self.variables(ref)}

    def scope(self, frame_id: int, name: str) -> list[dict[str, Any]]:
        scopes = self.request("scopes", {"frameId": frame_id})["body"]["scopes"]
        return self.variables(next(s["variablesReference"] for s in scopes if s["name"] == name))

    def variables(self, ref: int) -> list[dict[str, Any]]:
        return self.request("variables", {"variablesReference": ref})["body"]["variables"]

    def threads(self) -> list[dict[str, Any]]:
        return self.request("threads")["body"]["threads"]

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.request("disconnect", {"terminateDebuggee": True}, timeout=20, ok=False)
        except (DapError, OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
