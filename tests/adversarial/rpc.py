"""A raw JSON-RPC client for the real server over stdio: frames exactly what a test writes,
malformed messages included (pytest-lsp only sends what lsprotocol can type)."""

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

from ..framing import frame, read_frame


class RawServer:
    def __init__(self, cache_dir: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pypto_lsp", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYPTO_LSP_CACHE_DIR": str(cache_dir), "PYTHONUNBUFFERED": "1", **(env or {})},
            start_new_session=True,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr: list[bytes] = []
        threading.Thread(target=lambda: self._stderr.extend(iter(self.proc.stderr.readline, b"")), daemon=True).start()  # type: ignore[union-attr]

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            body = read_frame(out)
            if body is None:
                return
            try:
                self.messages.put(json.loads(body))
            except ValueError:
                continue

    def send_bytes(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(body))
        self.proc.stdin.flush()

    def send(self, msg: dict[str, Any]) -> None:
        self.send_bytes(json.dumps({"jsonrpc": "2.0", **msg}).encode())

    def wait(self, pred: Any, timeout: float = 30.0) -> dict[str, Any]:
        for m in self.seen:
            if pred(m):
                self.seen.remove(m)
                return m
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no matching message")
            try:
                m = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if "id" in m and "method" in m:  # a request from the server: answer it (null)
                self.send({"id": m["id"], "result": None})
            if pred(m):
                return m
            self.seen.append(m)

    def request(self, id: Any, method: str, params: Any = None, *, with_params: bool = True, timeout: float = 30.0) -> dict[str, Any]:
        msg: dict[str, Any] = {"id": id, "method": method}
        if with_params:
            msg["params"] = params
        self.send(msg)
        return self.wait(lambda m: m.get("id") == id and "method" not in m, timeout)

    def initialize(self, root: Path, options: dict[str, Any] | None = None) -> None:
        self.request(
            "init", "initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}, "initializationOptions": options}
        )
        self.send({"method": "initialized", "params": {}})

    def stop(self) -> int:
        try:
            self.request("bye", "shutdown", None, timeout=30)
            self.send({"method": "exit"})
            return self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")
