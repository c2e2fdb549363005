"""Folder validation with a result cache and optional worker processes."""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import torch

from ..ir.passdiff import MEMREF_ITEM
from .config import RunSettings
from .engine import ENGINE_VERSION, read_dump_text, run_text
from .process_setup import collect_less
from .report import ERROR, FAIL, PASS, RAN, ErrorInfo, FileResult, Report

# What cannot change numerics: comment lines, memref/address annotations and the
# allocs they name, function attributes that only steer later passes. Every step is linear
# in the text: no pattern may backtrack over a long run of spaces (a trailing-whitespace
# regex did, quadratically, before anything was timed).
_COMMENT = re.compile(r"^[ \t]*#.*$\n?", re.M)
# ClassifyIterArgCarry's marks on a loop header (``pl.range(..., attrs={"iter_arg_rebind_0": False}):``):
# they steer PyPTO's later passes, and nothing here reads a loop's attrs (exec.codegen: the same
# script either way, tests/unit/test_result_cache.py), so that dump and the one before are one run
_INERT_LOOP_ATTRS = re.compile(
    r', attrs=\{"iter_arg_rebind_\d+": (?:True|False)(?:, "iter_arg_rebind_\d+": (?:True|False))*\}(?=\):$)', re.M
)
# StampTfreeSplit's ``split=N`` on a slot hand-back (``pl.system.tfree_to_aic(t, split=1)``): a ``tfree``
# is a no-op here (exec.kernels.noops: a pop frees its slot), so the stamp changes nothing that runs
_INERT_TFREE_SPLIT = re.compile(r"^([ \t]*pl\.system\.tfree_to_ai[cv]\(\w+), split=\d+\)$", re.M)


def _inert_marks_out(text: str) -> str:
    """``text`` without the marks of passes that only annotate it for PyPTO's later passes."""
    return _INERT_TFREE_SPLIT.sub(r"\1)", _INERT_LOOP_ATTRS.sub("", text))


_ALLOC_HEAD = re.compile(r"\w+: pl\.Ptr = pl\.tile\.alloc\(")


def _is_alloc(line: str) -> bool:
    """``name: pl.Ptr = pl.tile.alloc(...)`` alone on its line (trailing spaces stripped)."""
    s = line.lstrip(" \t")
    m = _ALLOC_HEAD.match(s)
    return m is not None and s.endswith(")") and len(s) > m.end()


def normalise(text: str, memory: bool = False) -> str:
    """The dump text with what cannot change numbers removed (the cache key's IR part).

    ``memory``: placements matter (the memory model runs tiles where the IR puts them)."""
    t = _inert_marks_out(_COMMENT.sub("", text))
    if not memory:
        t = MEMREF_ITEM.sub("", t)
    lines = (raw.rstrip(" \t") for raw in t.split("\n"))
    return "\n".join(line for line in lines if memory or not _is_alloc(line))


_COMMENT_LINE = re.compile(r"^[ \t]*#.*$", re.M)


def keyed_text(text: str, memory: bool = False) -> str:
    """:func:`normalise` with every line it drops kept as an empty one: the result cache's IR
    part. Two dumps with the same key then have their statements on the same lines, so a reused
    result's line numbers (errors, hazards, the value to blame) are the reusing file's too; a
    dump that only adds a comment line runs again rather than point one line off."""
    if not memory:  # whole text: a memref item may run over a line end (MEMREF_ITEM's ``\s``)
        t = _inert_marks_out(_COMMENT_LINE.sub("", text))
        t = MEMREF_ITEM.sub("", t)
        lines = (raw.rstrip(" \t") for raw in t.split("\n"))
        return "\n".join("" if _is_alloc(line) else line for line in lines)
    # the same, line by line in one pass (a key is made for every file of a folder; three scans of
    # the whole text with line-anchored patterns were most of its time)
    out = text.split("\n")
    for i, raw in enumerate(out):
        line = raw.lstrip(" \t")
        if line.startswith("#"):
            out[i] = ""
            continue
        if "iter_arg_rebind_" in line:
            raw = _INERT_LOOP_ATTRS_LINE.sub("", raw)
        if "tfree_to_ai" in line:
            raw = _INERT_TFREE_SPLIT_LINE.sub(r"\1)", raw)
        out[i] = raw.rstrip(" \t")
    return "\n".join(out)


# the two marks' patterns on one line (``$``: its end, as ``re.M`` has it before a line feed)
_INERT_LOOP_ATTRS_LINE = re.compile(_INERT_LOOP_ATTRS.pattern.replace("(?=\\):$)", "(?=\\):\\Z)"))
_INERT_TFREE_SPLIT_LINE = re.compile(_INERT_TFREE_SPLIT.pattern[:-1] + "\\Z")


def cache_dir() -> Path:
    env = os.environ.get("PYPTO_LSP_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pypto-lsp"


# the settings ResultCache.key spells out (timeout_s: a result that timed out is never kept)
_KEYED = frozenset({"rtol", "atol", "entry", "timeout_s", "memory", "backend", "exact", "max_alloc", "sanitize", "ranks"})


class ResultCache:
    """On-disk results keyed by everything that determines them; bounded, safe to delete."""

    MAX_ENTRIES = 4000

    def __init__(self, directory: Path | None = None, enabled: bool = True) -> None:
        self.dir = directory or cache_dir()
        self.enabled = enabled
        self.memory: dict[str, dict[str, Any]] = {}

    def key(self, text: str, bundle_id: str, settings: RunSettings) -> str:
        """The result of ``text`` run on the bundles ``bundle_id`` with ``settings`` (every field that
        can change a verdict; the timeout cannot, a result that timed out is never kept)."""
        s = settings
        h = hashlib.blake2b(digest_size=20)
        mem = (
            (f"memory:{s.backend or '*'}" if s.memory else "values")
            + (":sanitize" if s.sanitize else "")
            + (":strict" if s.sanitize == "strict" else "")
        )
        mode = "exact" if s.exact else "batched"  # the same bits since engine 4; kept apart all the same
        from ..ir.alloc_budget import budget

        # a smaller budget may stop a run that passed (ir.alloc_budget)
        mem += f";budget:{s.max_alloc if s.max_alloc is not None else budget()}" + (f";ranks:{s.ranks}" if s.ranks else "")
        # a setting added since: in the key when it is not its default (the keys above stay as they were)
        mem += "".join(f";{f.name}:{getattr(s, f.name)!r}" for f in fields(s) if f.name not in _KEYED and getattr(s, f.name) != f.default)
        for part in (
            ENGINE_VERSION,
            torch.__version__,
            mode,
            bundle_id,
            repr(s.rtol),
            repr(s.atol),
            s.entry or "",
            mem,
            keyed_text(text, s.memory),
        ):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        return h.hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        hit = self.memory.get(key)
        if hit is not None or not self.enabled:
            return hit
        p = self.dir / key[:2] / f"{key}.json"
        try:
            hit = json.loads(p.read_text(encoding="utf-8"))
            _check_entry(hit)  # valid JSON of another shape is no result: run again
            if hit.get(ENTRY_KEY, key) != key:  # an entry under the wrong name (a copy, a bad rename): no result
                return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None
        self.memory[key] = hit
        return hit

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.memory[key] = value
        if not self.enabled:
            return
        tmp: Path | None = None
        try:
            # a folder many processes on many machines share (cache_dir on NFS): each writer its
            # own temporary file (a unique name, not a pid two hosts may share), made durable
            # before one atomic rename; a reader sees the old entry or the new one, never a torn one
            import tempfile

            d = self.dir / key[:2]
            d.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=d)
            tmp = Path(name)
            with os.fdopen(fd, "wb") as fh:
                fh.write(json.dumps({**value, ENTRY_KEY: key}).encode("utf-8", "surrogatepass"))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, d / f"{key}.json")
        except OSError:
            self.enabled = False  # read-only or full disk: keep going without it
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()  # nothing half-written left behind

    def prune(self) -> None:
        """Keep the newest MAX_ENTRIES. Never fails: another run may prune (or the user delete)
        the same folder meanwhile, and entries may be dangling symlinks or loops."""
        if not self.enabled:
            return
        entries: list[tuple[int, str]] = []
        try:
            with os.scandir(self.dir) as top:
                subdirs = [e.path for e in top if len(e.name) == 2 and e.is_dir(follow_symlinks=False)]
            for d in subdirs:
                with contextlib.suppress(OSError), os.scandir(d) as it:
                    for e in it:
                        if e.name.endswith(".json"):
                            with contextlib.suppress(OSError):
                                entries.append((e.stat(follow_symlinks=False).st_mtime_ns, e.path))
        except OSError:
            return
        if len(entries) <= self.MAX_ENTRIES:
            return
        entries.sort()
        for _, path in entries[: len(entries) - self.MAX_ENTRIES]:
            with contextlib.suppress(OSError):
                os.unlink(path)


ENTRY_KEY = "cache_key"  # each entry names its own key: read back under another name, it is no result


def _check_entry(d: Any) -> None:
    """Raise unless ``d`` reads back as a whole FileResult (a damaged entry is a miss)."""
    fr = FileResult.from_json(d)
    if not isinstance(fr.file, str) or fr.status not in (PASS, FAIL, ERROR, RAN):
        raise ValueError("not a result")
    for t in fr.tensors.values():
        if not (_is_num(t.max_abs_diff) and _is_num(t.max_rel_diff) and isinstance(t.nan_count, int) and isinstance(t.passed, bool)):
            raise ValueError("not a result")
    if fr.error is not None and not (isinstance(fr.error.kind, str) and isinstance(fr.error.message, str)):
        raise ValueError("not a result")
    if not isinstance(fr.writes, dict) or not isinstance(fr.call_counts, dict):
        raise ValueError("not a result")
    if not (_is_num(fr.seconds) and _is_num(fr.rtol) and _is_num(fr.atol)):
        raise ValueError("not a result")


def _is_num(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def bundle_identity(paths: tuple[str, str] | None, inputs: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor]) -> str:
    """Identify the goldens by their content: a hash of the tensors actually compared.

    Never by path, size and mtime: a golden rewritten with other values of the same size and
    its mtime restored would re-use the old verdicts (a stale PASS). ``paths`` is unused and
    kept for callers."""
    h = hashlib.blake2b(digest_size=16)
    for bundle in (inputs, expected):
        for k in sorted(bundle):
            t = bundle[k].detach().contiguous().cpu()
            h.update(k.encode())
            h.update(str(t.dtype).encode())
            h.update(str(tuple(t.shape)).encode())
            if t.numel():
                h.update(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))
    return h.hexdigest()


def validate_files(
    files: list[Path],
    inputs: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    *,
    settings: RunSettings,
    jobs: int | None = None,
    use_cache: bool = True,
    on_result: Callable[[FileResult], None] | None = None,
    bundle_paths: tuple[str, str] | None = None,
    cache: ResultCache | None = None,
    should_stop: Callable[[], bool] | None = None,
    executor: Any = None,
) -> Report:
    """Validate ``files`` in order. Files whose normalised text was already validated with
    the same goldens and tolerances re-use that result (marked ``cached``). The allocation
    budget is ``settings.max_alloc`` (None: the default), carried to every run.

    ``jobs``: worker processes; ``AUTO_JOBS`` lets :func:`validate.pool_choice.choose_jobs` decide
    whether a pool pays. ``executor``: a connected ``validate.cluster.DaskExecutor`` (``--cluster``)
    that runs the distinct files instead of this machine."""
    return _validate_files(files, inputs, expected, settings, jobs, use_cache, on_result, bundle_paths, cache, should_stop, executor)


def _validate_files(
    files: list[Path],
    inputs: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    settings: RunSettings,
    jobs: int | None,
    use_cache: bool,
    on_result: Callable[[FileResult], None] | None,
    bundle_paths: tuple[str, str] | None,
    cache: ResultCache | None,
    should_stop: Callable[[], bool] | None,
    executor: Any = None,
) -> Report:
    t0 = time.perf_counter()
    s = settings
    fresh = cache is None and not use_cache
    cache = cache or ResultCache(enabled=use_cache)
    # a cache made here and never written to disk lives for this call, with these goldens: its keys
    # need no content hash of them (hashing 470 MB of goldens at hidden 4096 takes ~0.5 s)
    bid = "this-call" if fresh else bundle_identity(bundle_paths, inputs, expected)
    texts: list[str | FileResult] = []
    keys: list[str | None] = []
    for f in files:
        text = read_dump_text(f)
        texts.append(text)
        keys.append(None if isinstance(text, FileResult) else cache.key(text, bid, s))
    # files whose normalised text is new: run once each (in worker processes when asked)
    todo: dict[str, tuple[str, str]] = {}
    for f, text, key in zip(files, texts, keys, strict=True):
        if key is not None and key not in todo and cache.get(key) is None:
            assert isinstance(text, str)
            todo[key] = (text, str(f))
    if jobs == AUTO_JOBS:
        from .pool_choice import choose_jobs

        jobs = choose_jobs(todo, inputs, expected)
    n_jobs = min(jobs or 1, len(todo))
    parallel: Generator[tuple[str, dict[str, Any]], None, None] | None = None
    workers_of: dict[str, str] = {}  # key -> the Dask worker that ran it
    # the executor the run was given names it even when the cache answered every file (--cluster
    # is what the run asked for; no file then says a worker ran it)
    executor_name = executor.name if executor is not None else "in-process"
    if executor is not None and todo:
        parallel = executor.run(todo, inputs, expected, s, getattr(executor, "cache_dir", None) if use_cache else None, workers_of)
    elif executor is None and n_jobs > 1 and (should_stop is None) and _can_fork():
        parallel = _run_parallel(todo, inputs, expected, s, n_jobs)
        executor_name = f"processes:{n_jobs}"
    results: list[FileResult] = []
    arrived: set[str] = set()  # keys whose result came back from the pool or the cluster
    for f, text, key in zip(files, texts, keys, strict=True):
        if should_stop is not None and should_stop():
            break
        if isinstance(text, FileResult):
            fr = text
        else:
            assert key is not None
            # a file this run sent out waits for its own result, not for its cache entry: Dask
            # workers write a shared cache before their results reach us, and a result also says
            # which worker ran it
            while parallel is not None and key in todo and key not in arrived:
                k, value = next(parallel)
                arrived.add(k)
                _store(cache, k, value)
            hit = cache.get(key)  # in-run memory always; the disk only when enabled
            if hit is not None:
                fr = FileResult.from_json(hit)
                first = todo.get(key, (None, None))[1] == str(f)
                fr.file = str(f)
                fr.cached = not first
                fr.worker = workers_of.get(key)  # a duplicate text: the worker that ran its twin
                if not first:
                    fr.seconds = 0.0
            else:
                fr = run_text(text, inputs, expected, filename=str(f), **s.engine_kwargs())
                _store(cache, key, fr.to_json())
        results.append(fr)
        if on_result is not None:
            on_result(fr)
    if parallel is not None:
        parallel.close()  # the pool's processes end here, whatever is left
    if use_cache:
        cache.prune()
    return Report(results, time.perf_counter() - t0, executor=executor_name)


AUTO_JOBS = 0  # validate_files(jobs=AUTO_JOBS): a pool only where it pays (validate.pool_choice)


# Error kinds the dump, its goldens and the settings do not decide: the machine's load and memory,
# the budget, the clock, the disk, a lost worker. Such a result is never cached (the next run may
# differ); an error of any other kind is the dump's own (a parse, static, codegen, golden error, an
# exception its ops raise) and is deterministic.
TRANSIENT_KINDS = frozenset(
    {
        "TimeoutError",  # a timeout may pass on a quieter machine
        "timeout",
        "cross-core:timeout",
        "alloc-budget",  # an allocation may fit a larger budget
        "MemoryError",
        "RecursionError",
        "OverflowError",  # e.g. a clock that cannot wait that long
        "SystemError",
        "io",
        "internal",
        "worker-lost",  # the pool's process died or was stopped (validate --jobs), or a Dask worker
        "scheduler-lost",  # the Dask scheduler of validate --cluster went away mid-run
        "crash",
        "cancelled",
        # OSError and its kinds (PermissionError, ...): the file system, not the dump
        *(n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, OSError)),
    }
)


def cacheable(value: Mapping[str, Any]) -> bool:
    """Whether a result (``FileResult.to_json()``) is deterministic, hence may be cached: no error,
    or an error of a kind outside :data:`TRANSIENT_KINDS`."""
    err = value.get("error")
    if not isinstance(err, Mapping):
        return True
    if err.get("kind") in TRANSIENT_KINDS:
        return False
    message = str(err.get("message", "")).lower()
    return not any(m in message for m in _OUT_OF_MEMORY)  # torch's CPU allocator raises a RuntimeError


_OUT_OF_MEMORY = ("can't allocate memory", "cannot allocate memory", "out of memory", "not enough memory")


def _store(cache: ResultCache, key: str, value: dict[str, Any]) -> None:
    if cacheable(value):
        cache.put(key, value)
    else:
        cache.memory[key] = value  # this run only: the next may differ


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


# Set in the parent right before forking: the children inherit the goldens without pickling.
_FORK_STATE: dict[str, Any] = {}


def _child_run(item: tuple[str, str, str]) -> tuple[str, dict[str, Any]]:
    key, text, filename = item
    st = _FORK_STATE
    fr = run_text(text, st["inputs"], st["expected"], filename=filename, **st["settings"].engine_kwargs())
    return key, fr.to_json()


def _child_init() -> None:
    import signal

    from ..exec.side_threads import set_helper_threads

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (it ends the pool)
    torch.set_num_threads(1)
    set_helper_threads(1)  # the pool's processes share the cores already
    collect_less()  # a forked child keeps the parent's thresholds only if the parent set them


# ---------------------------------------------------------------------- the folder runner's pool
# Forked processes, one file at a time each, watched by the parent: a process that dies (the OOM
# killer, kill -9), is stopped (SIGSTOP) or stops answering loses its file only -- that file is an
# error result, a fresh process takes the rest, and the run ends. The parent never blocks on a
# child: keys go out as one short line (the texts are inherited at the fork), results come back
# as length-prefixed JSON frames read without blocking.

LOST_KIND = "worker-lost"
STOPPED_S = 5.0  # a process seen stopped (state T) this long is lost
ANSWER_MARGIN_S = 30.0  # beyond the run's own timeout (compile, compare, the child's own timeout thread)
_TICK_S = 0.25


def _child_main(task_fd: int, result_fd: int, close: list[int]) -> None:
    """A pool process: read a key per line, run that file, write its result frame; until EOF."""
    for fd in close:  # the other processes' pipe ends, inherited at the fork
        with contextlib.suppress(OSError):
            os.close(fd)
    _child_init()
    todo: dict[str, tuple[str, str]] = _FORK_STATE["todo"]
    line = b""
    while True:
        b = os.read(task_fd, 64)
        if not b:
            break
        line += b
        while b"\n" in line:
            raw, line = line.split(b"\n", 1)
            key = raw.decode("ascii")
            text, filename = todo[key]
            try:
                value = _child_run((key, text, filename))[1]
            except BaseException as exc:  # run_text makes every failure a result; anything else is ours
                value = FileResult(filename, ERROR, error=ErrorInfo("internal", f"{type(exc).__name__}: {exc}")).to_json()
            data = json.dumps(value).encode("utf-8", "surrogatepass")
            frame = len(data).to_bytes(8, "big") + data
            view = memoryview(frame)
            while view:
                n = os.write(result_fd, view)
                view = view[n:]
    os._exit(0)  # no interpreter shutdown: a timed-out run's thread may still be inside torch


class _Slot:
    """One pool process, and the file it is running."""

    def __init__(self, proc: Any, task_fd: int, result_fd: int) -> None:
        self.proc, self.task_fd, self.result_fd = proc, task_fd, result_fd
        self.buf = bytearray()
        self.key: str | None = None
        self.busy_s = 0.0  # seconds seen running this file (the parent's own pauses not counted)
        self.stopped_s = 0.0  # seconds seen stopped in a row
        self.closed = False

    def frame(self) -> dict[str, Any] | None:
        """The result frame, when whole."""
        if len(self.buf) < 8:
            return None
        n = int.from_bytes(self.buf[:8], "big")
        if len(self.buf) < 8 + n:
            return None
        data = bytes(self.buf[8 : 8 + n])
        del self.buf[: 8 + n]
        value: dict[str, Any] = json.loads(data.decode("utf-8", "surrogatepass"))
        return value

    def drain(self) -> None:
        while True:
            try:
                b = os.read(self.result_fd, 1 << 20)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if not b:
                return
            self.buf += b

    def stopped(self) -> bool:
        """The process is stopped (SIGSTOP, SIGTSTP): state T in /proc (Linux; elsewhere never)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            return False
        state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
        return state in (b"T", b"t")

    def close(self) -> None:
        """Kill the process (stopped or not) and close its pipes; once."""
        import signal

        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            os.kill(self.proc.pid, signal.SIGKILL)  # also ends a stopped process
        self.proc.join(5)
        for fd in (self.task_fd, self.result_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _lost(filename: str, settings: RunSettings, kind: str, message: str) -> dict[str, Any]:
    return FileResult(filename, ERROR, error=ErrorInfo(kind, message), rtol=settings.rtol, atol=settings.atol).to_json()


def _exit_words(code: int | None) -> str:
    import signal

    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory: the OOM killer?)" if -code == signal.SIGKILL else ""
        return f"was killed by {name}{hint}"
    return f"exited with code {code}"


def _run_parallel(
    todo: dict[str, tuple[str, str]],
    inputs: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    settings: RunSettings,
    jobs: int,
) -> Generator[tuple[str, dict[str, Any]], None, None]:
    """Run the distinct files in ``jobs`` forked processes; (key, result) pairs as they finish,
    one for every key of ``todo``: a file whose process was lost is an error result
    (kind ``worker-lost``, or ``TimeoutError`` when it stopped answering)."""
    import multiprocessing
    import select

    from .config import time_limit

    _FORK_STATE.update(inputs=inputs, expected=expected, settings=settings, todo=todo)
    ctx = multiprocessing.get_context("fork")
    limit = time_limit(settings.timeout_s)
    slots: list[_Slot] = []

    def spawn() -> _Slot:
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        # the parent's ends of the live pipes (never a closed slot's numbers: the OS reuses them)
        others = [fd for sl in slots if not sl.closed for fd in (sl.task_fd, sl.result_fd)] + [task_w, result_r]
        proc = ctx.Process(target=_child_main, args=(task_r, result_w, others), daemon=True, name="pypto-lsp-pool")
        proc.start()
        os.close(task_r)
        os.close(result_w)
        os.set_blocking(result_r, False)
        return _Slot(proc, task_w, result_r)

    def gen() -> Generator[tuple[str, dict[str, Any]], None, None]:
        pending = list(todo)
        pending.reverse()
        try:
            for _ in range(jobs):
                slots.append(spawn())
            last = time.monotonic()
            while pending or any(sl.key is not None for sl in slots):
                for sl in slots:
                    if sl.key is None and pending:
                        sl.key = pending.pop()
                        sl.busy_s = sl.stopped_s = 0.0
                        try:
                            os.write(sl.task_fd, sl.key.encode("ascii") + b"\n")  # < PIPE_BUF: never blocks
                        except OSError:
                            pass  # it died: seen below
                busy = [sl for sl in slots if sl.key is not None]
                with contextlib.suppress(InterruptedError):
                    select.select([sl.result_fd for sl in busy] + [sl.proc.sentinel for sl in busy], [], [], _TICK_S)
                now = time.monotonic()
                tick = min(now - last, 1.0)  # a pause of the whole CLI (Ctrl-Z) is not the child's
                last = now
                for i, sl in enumerate(slots):
                    if sl.key is None:
                        continue
                    key, filename = sl.key, todo[sl.key][1]
                    sl.drain()
                    value = sl.frame()
                    if value is not None:
                        sl.key = None
                        if (value.get("error") or {}).get("kind") == "TimeoutError":
                            slots[i] = spawn()  # its timed-out run may still hold a thread: a fresh process
                            sl.close()
                        yield key, value
                        continue
                    lost: dict[str, Any] | None = None
                    if not sl.proc.is_alive():
                        sl.proc.join(1)
                        sl.drain()
                        value = sl.frame()
                        if value is not None:  # it answered, then died
                            sl.key = None
                            slots[i] = spawn()
                            sl.close()
                            yield key, value
                            continue
                        lost = _lost(
                            filename,
                            settings,
                            LOST_KIND,
                            f"worker lost: the process running this file {_exit_words(sl.proc.exitcode)}; the other files went on",
                        )
                    elif sl.stopped():
                        sl.stopped_s += tick
                        if sl.stopped_s >= STOPPED_S:
                            lost = _lost(
                                filename,
                                settings,
                                LOST_KIND,
                                f"worker lost: the process running this file was stopped (SIGSTOP?) for {STOPPED_S:g} s; "
                                "it was killed and the other files went on",
                            )
                    else:
                        sl.stopped_s = 0.0
                        sl.busy_s += tick
                        if limit is not None and sl.busy_s > limit + ANSWER_MARGIN_S:
                            lost = _lost(
                                filename,
                                settings,
                                "TimeoutError",
                                f"timed out: no answer within {limit:g} s (+{ANSWER_MARGIN_S:g} s margin) from the process "
                                "running this file; it was killed and the other files went on",
                            )
                    if lost is not None:
                        sl.key = None
                        if pending:
                            slots[i] = spawn()  # before closing this one: no pipe number reused meanwhile
                        sl.close()
                        yield key, lost
        finally:
            for sl in slots:
                sl.close()
            slots.clear()
            _FORK_STATE.clear()

    return gen()
