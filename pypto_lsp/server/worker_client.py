"""The server's side of the validation worker: an asyncio subprocess behind :mod:`..worker.protocol`.

* Spawned once (``sys.executable -m pypto_lsp.worker``), kept warm; started eagerly so
  the first save does not pay for importing torch.
* Requests are written at once; the worker runs them one at a time and says
  ``started`` when it begins one. Only then does that request's clock run:
  ``timeout_s + MARGIN_S`` without an answer (a timeout of 0, inf or more: none, as everywhere,
  ``validate.config.time_limit``; for a folder run: without a new
  file result) and the worker is killed, the request fails with kind ``timeout``, and
  a fresh worker takes the requests that had not started yet.
* A crash (the process ends) fails the request that was running with kind ``crash``;
  the others go to the next worker, which starts at once.
* A caller that stops waiting (a newer save superseded its run) sends ``cancel``: a
  request not started yet is skipped by the worker, a running one finishes and its
  answer is dropped (its watchdog keeps running, so a run that hangs is still killed).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..validate.config import time_limit
from ..worker import protocol as P

MARGIN_S = 10.0
STARTUP_TIMEOUT_S = 180.0
log = logging.getLogger(__name__)


@dataclass
class _Pending:
    id: int
    msg: dict[str, Any]
    future: asyncio.Future[Any] | None
    timeout_s: float
    on_note: Callable[[dict[str, Any]], None] | None = None
    started: bool = False
    started_at: float = 0.0
    timer: asyncio.TimerHandle | None = None
    timed_out: bool = False


@dataclass
class WorkerStats:
    spawns: int = 0
    crashes: int = 0
    timeouts: int = 0
    last_exit: int | None = None
    startup_s: list[float] = field(default_factory=list)


class WorkerClient:
    def __init__(
        self,
        log_fn: Callable[[str, int], None] | None = None,
        cmd: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self._log = log_fn or (lambda msg, level: log.log(level, msg))
        self.cmd = cmd or [sys.executable, "-m", "pypto_lsp.worker"]
        self.env = env
        self.proc: asyncio.subprocess.Process | None = None
        self.info: dict[str, Any] = {}
        self.stats = WorkerStats()
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._start_lock = asyncio.Lock()
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stderr_tail: deque[str] = deque(maxlen=40)
        self._closing = False
        self._generation = 0

    # ------------------------------------------------------------------ lifecycle

    @property
    def pid(self) -> int | None:
        p = self.proc
        return p.pid if p is not None and p.returncode is None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self) -> dict[str, Any]:
        """Spawn the worker if none is running and wait until it has imported torch."""
        async with self._start_lock:
            if self.running and self._ready is not None:
                ready = self._ready
            else:
                ready = await self._spawn()
        return await asyncio.shield(ready)

    async def _spawn(self) -> asyncio.Future[dict[str, Any]]:
        if self._closing:
            raise P.WorkerError(P.E_UNAVAILABLE, "the server is shutting down")
        self._generation += 1
        gen = self._generation
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._stderr_tail.clear()
        t0 = time.perf_counter()
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.cmd,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                limit=256 * 1024 * 1024,
                start_new_session=True,  # a Ctrl-C in the editor's terminal is not ours to forward
            )
        except OSError as exc:
            self._ready.set_exception(P.WorkerError(P.E_UNAVAILABLE, f"cannot start {' '.join(self.cmd)}: {exc}"))
            self._ready.exception()  # mark retrieved
            return self._ready
        self.stats.spawns += 1
        self._log(f"worker: started pid {self.proc.pid} ({' '.join(self.cmd)})", logging.INFO)
        proc = self.proc
        self._tasks = [
            asyncio.ensure_future(self._read_stdout(proc, gen, t0)),
            asyncio.ensure_future(self._read_stderr(proc)),
        ]
        # requests that were waiting for a worker (queued before a crash/timeout) go to this one
        for p in sorted(self._pending.values(), key=lambda p: p.id):
            if not p.started:
                await self._write(p.msg)
        return self._ready

    async def stop(self) -> None:
        """Ask the worker to finish, then make sure it is gone."""
        self._closing = True
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(Exception):
            await self._write(P.request(next(self._ids), P.SHUTDOWN, {}))
        try:
            await asyncio.wait_for(proc.wait(), 2.0)
        except (asyncio.TimeoutError, Exception):
            self.kill()

    def kill(self) -> None:
        """Kill the worker now (its process group: a run may have started helpers)."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()

    def restart_soon(self) -> None:
        """Start a fresh worker in the background (after a crash or a timeout), so the next run is warm."""
        if self._closing:
            return
        fut = asyncio.ensure_future(self.start())
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())

    # ------------------------------------------------------------------ reading

    async def _read_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while True:
            line = await proc.stderr.readline()
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                self._stderr_tail.append(text)
                log.debug("worker stderr: %s", text)

    async def _read_stdout(self, proc: asyncio.subprocess.Process, gen: int, t0: float) -> None:
        assert proc.stdout is not None
        while True:
            try:
                line = await proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError) as exc:
                self._log(f"worker: unreadable message ({exc}); restarting it", logging.ERROR)
                self.kill()
                break
            if not line:
                break
            try:
                msg = P.decode(line)
            except ValueError:
                self._log(f"worker: not a protocol line: {line[:200]!r}", logging.WARNING)
                continue
            self._dispatch(msg, t0)
            await asyncio.sleep(0)  # a burst of folder results must not starve the editor's requests
        code = await proc.wait()
        if gen == self._generation:
            self._on_exit(code)

    def _dispatch(self, msg: dict[str, Any], t0: float) -> None:
        method = msg.get("method")
        if method is not None and "id" not in msg:
            params = msg.get("params") or {}
            if method == P.READY:
                self.info = dict(params)
                self.stats.startup_s.append(round(time.perf_counter() - t0, 3))
                self._log(
                    f"worker: ready in {time.perf_counter() - t0:.1f} s (torch {params.get('torch')}, pid {params.get('pid')})",
                    logging.INFO,
                )
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(self.info)
            elif method == P.STARTED:
                p = self._pending.get(params.get("id"))  # type: ignore[arg-type]
                if p is not None:
                    p.started = True
                    p.started_at = time.perf_counter()
                    self._arm(p)
            elif method == P.FILE_RESULT:
                p = self._pending.get(params.get("id"))  # type: ignore[arg-type]
                if p is not None:
                    self._arm(p)  # progress: the clock restarts per file
                    if p.on_note is not None and p.future is not None:
                        try:
                            p.on_note(params)
                        except Exception:
                            log.exception("fileResult consumer failed")
            return
        id = msg.get("id")
        if id is None:
            err = msg.get("error") or {}
            if err.get("kind") == P.E_UNAVAILABLE and self._ready is not None and not self._ready.done():
                self._ready.set_exception(P.WorkerError(P.E_UNAVAILABLE, str(err.get("message"))))
                self._ready.exception()
            else:
                self._log(f"worker: {err.get('kind')}: {err.get('message')}", logging.WARNING)
            return
        p = self._pending.pop(id, None)
        if p is None:
            return
        if p.timer is not None:
            p.timer.cancel()
        if p.future is None or p.future.done():
            return  # abandoned by its caller
        if "error" in msg and msg["error"] is not None:
            e = msg["error"]
            p.future.set_exception(P.WorkerError(str(e.get("kind", P.E_INTERNAL)), str(e.get("message", ""))))
        else:
            p.future.set_result(msg.get("result"))

    def _arm(self, p: _Pending) -> None:
        if p.timer is not None:
            p.timer.cancel()
        limit = time_limit(p.timeout_s)
        if limit is None:  # 0, inf, huge: no limit, as on the command line (no clock to arm)
            p.timer = None
            return
        p.timer = asyncio.get_running_loop().call_later(limit + MARGIN_S, self._on_timeout, p.id)

    def _on_timeout(self, id: int) -> None:
        p = self._pending.get(id)
        if p is None:
            return
        p.timed_out = True
        self.stats.timeouts += 1
        self._log(
            f"worker: request {id} ({p.msg.get('method')}) gave no answer within {p.timeout_s + MARGIN_S:g} s; killing the worker",
            logging.WARNING,
        )
        self.kill()

    def _on_exit(self, code: int) -> None:
        self.stats.last_exit = code
        tail = " | ".join(list(self._stderr_tail)[-5:])
        ready = self._ready
        was_ready = ready is not None and ready.done() and not ready.cancelled() and ready.exception() is None
        if not was_ready:
            # it never came up (no torch? a broken install?): fail everything, retry on the next request
            err = P.WorkerError(P.E_UNAVAILABLE, f"the validation worker exited with code {code} before it was ready: {tail}")
            if ready is not None and not ready.done():
                ready.set_exception(err)
                ready.exception()
            for p in list(self._pending.values()):
                if p.timer is not None:
                    p.timer.cancel()
                if p.future is not None and not p.future.done():
                    p.future.set_exception(err)
            self._pending.clear()
            self._log(str(err), logging.ERROR)
            return
        for id, p in list(self._pending.items()):
            if not p.started:
                continue  # re-sent to the next worker
            del self._pending[id]
            if p.timer is not None:
                p.timer.cancel()
            if p.future is None or p.future.done():
                continue
            if p.timed_out:
                p.future.set_exception(
                    P.WorkerError(P.E_TIMEOUT, f"no answer within {p.timeout_s:g} s (+{MARGIN_S:g} s margin); the worker was restarted")
                )
            else:
                self.stats.crashes += 1
                p.future.set_exception(
                    P.WorkerError(P.E_CRASH, f"the worker exited with code {code} during the run{': ' + tail if tail else ''}")
                )
        if self._closing:
            return
        if code == 75:
            self._log("worker: a run timed out and left a thread behind; starting a fresh worker", logging.INFO)
        else:
            self._log(f"worker: exited with code {code}; starting a fresh one", logging.WARNING)
        # keep a warm worker around (it also takes the requests that had not started)
        self.restart_soon()

    # ------------------------------------------------------------------ requests

    async def _write(self, msg: dict[str, Any]) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            return  # the exit handler re-sends what has not started
        try:
            proc.stdin.write(P.encode(msg))
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker died; _on_exit takes it from here

    async def request(self, method: str, params: Any, timeout_s: float, on_note: Callable[[dict[str, Any]], None] | None = None) -> Any:
        """Send one request and wait for its answer; raises :class:`WorkerError`."""
        await self.start()
        loop = asyncio.get_running_loop()
        id = next(self._ids)
        msg = P.request(id, method, params)
        fut: asyncio.Future[Any] = loop.create_future()
        p = _Pending(id, msg, fut, timeout_s, on_note)
        self._pending[id] = p
        await self._write(msg)
        try:
            return await fut
        except asyncio.CancelledError:
            # the caller gave up (superseded / cancelled): let the worker skip or finish it
            cur = self._pending.get(id)
            if cur is not None:
                cur.future = None
                if not cur.started:
                    del self._pending[id]
                await self._write(P.request(None, P.CANCEL, {"id": id}))
            raise

    async def ping(self) -> dict[str, Any]:
        return await self.request(P.PING, {}, 10.0)  # type: ignore[no-any-return]

    async def validate(self, params: P.ValidateParams) -> dict[str, Any]:
        return await self.request(P.VALIDATE, params, params.settings.timeout_s)  # type: ignore[no-any-return]

    async def validate_folder(self, params: P.ValidateFolderParams, on_file: Callable[[P.FileResultNote], None]) -> P.FolderResult:
        def note(d: dict[str, Any]) -> None:
            on_file(P.FileResultNote(int(d["id"]), int(d["index"]), int(d["total"]), d["result"]))

        r = await self.request(P.VALIDATE_FOLDER, params, params.settings.timeout_s, note)
        return P.FolderResult(int(r["done"]), int(r["total"]), bool(r.get("cancelled", False)))

    async def localize(self, params: P.LocalizeParams) -> dict[str, Any] | None:
        """The first differing value (ValueDivergence JSON), or None."""
        limit = time_limit(params.settings.timeout_s)
        r = await self.request(P.LOCALIZE, params, 0.0 if limit is None else 2 * limit + 10.0)  # two traced runs
        d = r.get("divergence") if isinstance(r, dict) else None
        return d if isinstance(d, dict) else None

    async def codegen(self, params: P.CodegenParams) -> P.CodegenResult:
        r = await self.request(P.CODEGEN, params, 60.0)
        return P.CodegenResult(r.get("source"), r.get("error"), r.get("line"))
