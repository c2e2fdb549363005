"""The validation worker: torch lives here, behind :mod:`.protocol` on stdin/stdout.

Started once by the language server (``python -m pypto_lsp.worker``) and kept warm:
torch, the golden bundles (by content hash) and compiled dumps (by text hash) are
loaded once. A run that hit its in-process timeout leaves a thread spinning in the
IR's endless loop; the worker then answers and exits, and the server starts a fresh
one (a busy thread cannot be killed from inside Python).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections import deque
from pathlib import Path
from typing import IO, Any

from ..validate.config import RunSettings
from . import protocol as P

EXIT_TAINTED = 75  # a run timed out and left a thread behind: restart me


class Worker:
    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._out_lock = threading.Lock()
        self._cv = threading.Condition()
        self._queue: deque[dict[str, Any]] = deque()
        self._cancelled: set[int] = set()
        self._eof = False
        self._tainted = False
        self._cache: Any = None
        self._golden_ids: tuple[Any, Any, str] | None = None  # the last goldens and their content hash
        self._empty_refs: dict[tuple[Any, ...], tuple[Any, Any, str]] = {}  # references of empty expected bundles
        # value stats of the golden inputs (hover shows them as the last run's): computed once
        # per bundle, after an answer went out, since a 1M-element weight costs ~0.1 s
        self._input_stats: dict[str, dict[str, dict[str, Any]]] = {}
        self._stats_todo: dict[str, tuple[Any, Any]] = {}

    # ------------------------------------------------------------------ I/O

    def send(self, msg: dict[str, Any]) -> None:
        data = P.encode(msg)
        with self._out_lock:
            self._out.write(data)
            self._out.flush()

    def reader(self, stream: IO[bytes]) -> None:
        """Read requests; ``cancel`` takes effect at once, the rest is queued."""
        for raw in iter(stream.readline, b""):
            try:
                msg = P.decode(raw)
            except ValueError as exc:
                self.send(P.error_response(None, P.E_BAD_REQUEST, f"not a JSON object: {exc}"))
                continue
            with self._cv:
                if msg.get("method") == P.CANCEL:
                    target = (msg.get("params") or {}).get("id")
                    if isinstance(target, int):
                        self._cancelled.add(target)
                    continue
                self._queue.append(msg)
                self._cv.notify()
        with self._cv:
            self._eof = True
            self._cv.notify()
        # the server is gone: do not outlive it by more than a moment, even inside a long run
        threading.Timer(5.0, os._exit, (0,)).start()

    # ------------------------------------------------------------------ loop

    def run(self) -> int:
        while True:
            with self._cv:
                while not self._queue and not self._eof:
                    self._cv.wait()
                if not self._queue:
                    return 0  # the server closed our stdin
                msg = self._queue.popleft()
            if msg.get("method") == P.SHUTDOWN:
                self.send(P.response(msg.get("id"), {"ok": True}))
                return 0
            self.handle(msg)
            if self._tainted:
                return EXIT_TAINTED

    def _take_interactive(self) -> dict[str, Any] | None:
        """A queued request that may overtake a folder run (anything but another folder run or shutdown)."""
        with self._cv:
            for i, m in enumerate(self._queue):
                if m.get("method") not in (P.VALIDATE_FOLDER, P.SHUTDOWN):
                    del self._queue[i]
                    return m
        return None

    def _is_cancelled(self, id: Any) -> bool:
        with self._cv:
            return isinstance(id, int) and id in self._cancelled

    def handle(self, msg: dict[str, Any]) -> None:
        id = msg.get("id")
        method = msg.get("method")
        params = msg.get("params") or {}
        if self._is_cancelled(id):
            self.send(P.error_response(id, P.E_CANCELLED, "cancelled before it started"))
            return
        self.send(P.notification(P.STARTED, {"id": id}))
        try:
            if method == P.PING:
                result: Any = self.ping()
            elif method == P.VALIDATE:
                result = self.validate(P.from_wire(P.ValidateParams, params))
            elif method == P.VALIDATE_FOLDER:
                result = self.validate_folder(id, P.from_wire(P.ValidateFolderParams, params))
            elif method == P.CODEGEN:
                result = self.codegen(P.from_wire(P.CodegenParams, params))
            elif method == P.LOCALIZE:
                result = self.localize(P.from_wire(P.LocalizeParams, params))
            elif method == P.ERROR_MAP:
                result = self.error_map(P.from_wire(P.ErrorMapParams, params))
            else:
                self.send(P.error_response(id, P.E_BAD_REQUEST, f"unknown method {method!r}"))
                return
        except (KeyError, TypeError, ValueError) as exc:
            self.send(P.error_response(id, P.E_BAD_REQUEST, f"{type(exc).__name__}: {exc}"))
            return
        except Exception as exc:
            detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
            print(detail, file=sys.stderr, flush=True)
            self.send(P.error_response(id, P.E_INTERNAL, f"{type(exc).__name__}: {exc}"))
            return
        if isinstance(id, int):
            with self._cv:
                self._cancelled.discard(id)
        self.send(P.response(id, result))
        self._idle_work()

    def _idle_work(self) -> None:
        """Input stats for bundles seen in a run, unless a request is waiting."""
        from ..validate.engine import tensor_stats

        while self._stats_todo:
            with self._cv:
                if self._queue:
                    return
            bid, (ins, exp) = self._stats_todo.popitem()
            self._input_stats[bid] = {k: tensor_stats(v) for k, v in ins.items() if k not in exp}

    # ------------------------------------------------------------------ methods

    def ping(self) -> P.PingResult:
        import torch

        from .. import __version__

        return P.PingResult(os.getpid(), sys.version.split()[0], str(torch.__version__), __version__)

    def _results_cache(self) -> Any:
        if self._cache is None:
            from ..validate.folders import ResultCache

            self._cache = ResultCache()
        return self._cache

    def _golden(self, g: P.Golden, file: str | None = None, entry: str | None = None) -> tuple[Any, Any, str]:
        from ..validate.folders import bundle_identity
        from ..validate.golden import load_bundle

        if g.differential:
            from ..validate.reference import memoized_differential

            return memoized_differential(g.differential)

        ins = load_bundle(g.inputs)
        exp = load_bundle(g.expected)
        if not exp and ins and file is not None:
            return self._empty_bundle_reference(g, ins, file, entry)
        # the loader hands out the same dicts while the files are unchanged: hash their content once
        # (at hidden 4096 a hash of the goldens took ~0.3 s of every save)
        last = self._golden_ids
        if last is not None and last[0] is ins and last[1] is exp:
            return ins, exp, last[2]
        bid = bundle_identity((g.inputs, g.expected), ins, exp)
        self._golden_ids = (ins, exp, bid)
        return ins, exp, bid

    def _validate_text(
        self,
        file: str,
        text: str,
        golden: tuple[Any, Any, str] | Exception,
        s: RunSettings,
        use_cache: bool,
        collect_stats: bool,
        memo: dict[str, dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """``memo``: results of this folder run by cache key, used also with the cache off (as the
        CLI does: one run per distinct normalised text within a run)."""
        from ..validate.engine import run_text
        from ..validate.folders import cacheable
        from ..validate.report import ERROR, ErrorInfo, FileResult

        if isinstance(golden, Exception):
            return FileResult(file, ERROR, error=ErrorInfo("golden", str(golden)), rtol=s.rtol, atol=s.atol).to_json()
        ins, exp, bid = golden
        cache = self._results_cache()
        cache.enabled = use_cache  # the disk part; the in-memory part is per worker
        key = cache.key(text, bid, s) if use_cache or memo is not None else ""
        if memo is not None and key in memo:
            return {**memo[key], "file": file, "cached": True, "seconds": 0.0}
        if use_cache:
            hit = cache.get(key)
            stale = collect_stats and hit is not None and "stats" not in hit and hit.get("status") in ("pass", "fail")
            if hit is not None and not stale:
                out = dict(hit)
                out.update(file=file, cached=True, seconds=0.0)
                return out
        fr = run_text(
            text,
            ins,
            exp,
            filename=file,
            collect_stats=collect_stats,
            stats_for=set(exp),
            **s.engine_kwargs(),
        )
        out = fr.to_json()
        if fr.stats:
            if bid not in self._input_stats:
                self._stats_todo[bid] = (ins, exp)
            out["stats"] = {**self._input_stats.get(bid, {}), **fr.stats}
        if fr.error is not None and fr.error.kind == "TimeoutError":
            self._tainted = True  # the run's thread is still going: answer, then exit
        elif use_cache and cacheable(out):  # only deterministic results (no timeout, budget, OS error ...)
            if len(cache.memory) > 2000:
                cache.memory.clear()
            cache.put(key, out)
        if memo is not None and not (fr.error is not None and fr.error.kind == "TimeoutError"):
            memo[key] = out  # within this folder run
        return out

    def _empty_bundle_reference(self, g: P.Golden, ins: Any, file: str, entry: str | None) -> tuple[Any, Any, str]:
        """An expected bundle without tensors: the folder's earliest dump run on the bundle's inputs is
        the reference (docs/goldens.md); kept until the inputs, the earliest dump or the entry change."""
        from ..validate import config as cfg
        from ..validate.folders import bundle_identity
        from ..validate.reference import resolve

        try:
            files = cfg.discover_dumps(cfg.dump_folder(Path(file)))
            st = files[0].stat()
        except (OSError, ValueError) as exc:
            from ..validate.golden import GoldenError

            raise GoldenError(f"no reference for {file}: {exc}") from exc
        key = (g.inputs, id(ins), str(files[0]), st.st_mtime_ns, st.st_size, entry)
        hit = self._empty_refs.get(key)
        if hit is None:
            # no timeout on the reference run, as before
            compared = resolve(file, None, cfg.RunSettings(entry=entry, timeout_s=0), inputs=g.inputs, expected=g.expected)
            hit = (ins, compared.expected, "differential-inputs:" + bundle_identity(None, ins, compared.expected))
            if len(self._empty_refs) > 8:
                self._empty_refs.clear()
            self._empty_refs[key] = hit
        return hit

    def _load_golden(self, g: P.Golden, file: str | None = None, entry: str | None = None) -> tuple[Any, Any, str] | Exception:
        from ..validate.golden import GoldenError

        try:
            return self._golden(g, file, entry)
        except GoldenError as exc:
            return exc

    def validate(self, p: P.ValidateParams) -> dict[str, Any]:
        return self._validate_text(
            p.file, p.text, self._load_golden(p.golden, p.file, p.settings.entry), p.settings, p.use_cache, p.collect_stats
        )

    def validate_folder(self, id: Any, p: P.ValidateFolderParams) -> P.FolderResult:
        golden = self._load_golden(p.golden, p.files[0] if p.files else None, p.settings.entry)
        total = len(p.files)
        done = 0
        memo: dict[str, dict[str, Any]] = {}
        for i, f in enumerate(p.files):
            # a save in the editor goes first
            while (m := self._take_interactive()) is not None:
                self.handle(m)
                if self._tainted:
                    return P.FolderResult(done, total, cancelled=True)
            if self._is_cancelled(id):
                return P.FolderResult(done, total, cancelled=True)
            text = p.texts.get(f)
            if text is None:
                text_or_err = _read_dump(f)
            else:
                text_or_err = text
            if isinstance(text_or_err, dict):
                res = text_or_err
                res.update(rtol=p.settings.rtol, atol=p.settings.atol)
            else:
                res = self._validate_text(f, text_or_err, golden, p.settings, p.use_cache, p.collect_stats, memo)
            done += 1
            self.send(P.notification(P.FILE_RESULT, P.FileResultNote(id, i, total, res)))
            if self._tainted:
                return P.FolderResult(done, total, cancelled=True)
        return P.FolderResult(done, total)

    def localize(self, p: P.LocalizeParams) -> dict[str, Any]:
        from ..validate.localize import first_differing_value

        golden = self._load_golden(p.golden, p.file, p.settings.entry)
        if isinstance(golden, Exception):
            return {"divergence": None, "error": str(golden)}
        try:
            v = first_differing_value(
                p.previous_text,
                p.text,
                golden[0],
                previous_filename=p.previous_file,
                filename=p.file,
                **p.settings.values_kwargs(),
            )
        except TimeoutError as exc:
            self._tainted = True  # a traced run's thread is still going: answer, then exit
            return {"divergence": None, "error": str(exc)}
        return {"divergence": v.to_json() if v is not None else None}

    def error_map(self, p: P.ErrorMapParams) -> dict[str, Any]:
        from ..validate.errormap import error_maps

        golden = self._load_golden(p.golden, p.file, p.settings.entry)
        if isinstance(golden, Exception):
            return {"file": p.file, "error": str(golden), "maps": []}
        try:
            return error_maps(
                p.text,
                golden[0],
                golden[1],
                filename=p.file,
                tensors=p.tensors,
                only_failing=p.only_failing,
                **p.settings.values_kwargs(),
            )
        except TimeoutError as exc:
            self._tainted = True  # the run's thread is still going: answer, then exit
            return {"file": p.file, "error": str(exc), "maps": []}

    def codegen(self, p: P.CodegenParams) -> P.CodegenResult:
        from ..exec.codegen import CodegenError, generate
        from ..ir.parser import parse_text

        res = parse_text(p.text, p.file)
        if res.program is None or res.errors:
            d = res.errors[0] if res.errors else None
            return P.CodegenResult(None, d.message if d else "cannot parse", d.span.line if d else None)
        try:
            gen = generate(res.program, check_shapes=p.check_shapes, entry=p.entry)
        except CodegenError as exc:
            return P.CodegenResult(None, str(exc), exc.span.line if exc.span else None)
        return P.CodegenResult(gen.source)


def _read_dump(path: str) -> str | dict[str, Any]:
    """A dump's text, or an error FileResult (unreadable, binary, not UTF-8, too large)."""
    from ..ir.parser import MAX_BYTES, parse_bytes, read_dump
    from ..validate.report import ERROR, ErrorInfo, FileResult

    try:
        data = read_dump(path)  # never more than the limit (+1 byte)
    except OSError as exc:
        return FileResult(path, ERROR, error=ErrorInfo("io", f"cannot read: {exc.strerror or exc}")).to_json()
    try:
        text = data.decode("utf-8")
        if "\x00" not in text and len(data) <= MAX_BYTES:
            return text
    except UnicodeDecodeError:
        pass
    res = parse_bytes(data, path)
    return FileResult(path, ERROR, error=ErrorInfo.from_diagnostic(res.errors[0])).to_json()


def main() -> int:
    # stdout is the protocol channel: keep a private handle on it and send anything
    # else that writes to fd 1 (a stray print, a C library) to stderr instead
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    worker = Worker(out)
    t0 = time.perf_counter()
    try:
        import torch  # noqa: F401 - warm up once, here

        import pypto_lsp.validate.engine
        import pypto_lsp.validate.folders
        import pypto_lsp.validate.process_setup

        pypto_lsp.validate.process_setup.configure_process()  # one intra-op thread, as the CLI runs
    except Exception as exc:
        worker.send(P.error_response(None, P.E_UNAVAILABLE, f"cannot import the engine: {type(exc).__name__}: {exc}"))
        return 3
    info = worker.ping()
    worker.send(P.notification(P.READY, {**P.to_wire(info), "startup_s": round(time.perf_counter() - t0, 3)}))
    t = threading.Thread(target=worker.reader, args=(sys.stdin.buffer,), name="pypto-lsp-worker-reader", daemon=True)
    t.start()
    code = worker.run()
    out.flush()
    # os._exit: a run thread that never finished must not keep the process alive
    os._exit(code)
