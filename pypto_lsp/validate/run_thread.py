"""The thread a run executes in, and its time limit.

A run is our own generated code calling kernels; it executes in a daemon thread so that the caller
can stop waiting when the run's time is up (an endless loop in the IR, a kernel that never returns).
The thread is then asked to stop (an asynchronous exception, raised at its next Python bytecode),
and the frames it was in are kept on the ``TimeoutError``: the error names the IR line the run was
on and, when the innermost frame is not the script's, where in our code it was (:func:`stuck_where`).
A thread that does not stop is remembered (:func:`abandoned_runs`): the inputs of later runs are
then all cloned, and the process leaves with ``os._exit``.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..exec.codegen import GeneratedCode
from ..exec.side_threads import wait_gone
from ..ir.model import For, Program, Span, fold_int
from .config import time_limit

__all__ = ["abandoned_runs", "run_with_timeout", "stuck_loops", "stuck_where"]


def run_with_timeout(fn: Callable[[], Any], timeout: float | None) -> Any:
    """``fn()`` in a run thread, its result or its exception; a ``TimeoutError`` (with the frames
    the thread was in, ``stuck_frames``) when it has not returned within ``timeout`` seconds."""
    limit = time_limit(timeout)  # 0, None, inf, 1e300: no limit (never an OverflowError from the clock)
    if limit is None:
        return fn()
    timeout = limit
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["exc"] = exc

    t = threading.Thread(target=target, name="pypto-lsp-run", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        where = _where_now(t)  # before it is stopped: the frames it was in when its time ran out
        counters = _script_counters(t)
        _stop_thread(t)
        exc = TimeoutError(f"run did not finish within {timeout:g} s (an endless loop in the IR?)")
        exc.stuck_frames = where  # type: ignore[attr-defined]
        exc.stuck_counters = counters  # type: ignore[attr-defined]
        raise exc
    wait_gone(t)  # MKL frees its per-thread buffers as the OS thread ends (exec.side_threads)
    if "exc" in box:
        raise box["exc"]
    return box.get("value")


def _where_now(t: threading.Thread) -> list[tuple[str, int, str]]:
    """The frames ``t`` is in right now, outermost first: (file name, line, function)."""
    frame = sys._current_frames().get(t.ident) if t.ident is not None else None
    return [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_stack(frame)] if frame is not None else []


def _script_counters(t: threading.Thread) -> list[tuple[str, int, dict[str, int]]]:
    """Each generated-script frame ``t`` is in, outermost first: its function, its line and its
    integer locals (where its loops had got to)."""
    frame = sys._current_frames().get(t.ident) if t.ident is not None else None
    out: list[tuple[str, int, dict[str, int]]] = []
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith("<pypto-lsp:"):
            out.append((code.co_name, frame.f_lineno or 0, {k: v for k, v in dict(frame.f_locals).items() if type(v) is int}))
        frame = frame.f_back
    return out[::-1]


def stuck_where(exc: BaseException, gen: GeneratedCode) -> tuple[Span | None, str | None]:
    """A timed-out run: the IR line its innermost generated frame was on, and, when the innermost
    frame is none of the script's (a kernel, the runtime), that frame as ``file:line in function``."""
    frames: list[tuple[str, int, str]] = getattr(exc, "stuck_frames", None) or []
    spans = (gen.ir_span(line) for file, line, _ in reversed(frames) if file == gen.filename)
    span = next((s for s in spans if s is not None), None)
    inner = frames[-1] if frames else None
    if inner is None or inner[0] == gen.filename:
        return span, None
    file = inner[0]
    here = file.find("pypto_lsp")
    return span, f"{file[here:] if here >= 0 else Path(file).name}:{inner[1]} in {inner[2]}"


class _RunAbandoned(BaseException):
    """Raised inside a timed-out run's thread to stop it (between two ops)."""


# timed-out run threads that did not stop: a process exiting with one still inside torch aborts
# ("terminate called without an active exception"); see :func:`abandoned_runs`
_ABANDONED: list[threading.Thread] = []


def _stop_thread(t: threading.Thread, grace: float = 1.0) -> None:
    """Ask the run thread to stop (an async exception, raised at its next Python bytecode:
    generated code returns to Python between ops); remember it if it does not."""
    import ctypes

    if t.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(_RunAbandoned))
    t.join(grace)
    if t.is_alive():
        _ABANDONED.append(t)


def abandoned_runs() -> int:
    """How many timed-out runs are still going (a process with any must leave with ``os._exit``)."""
    _ABANDONED[:] = [t for t in _ABANDONED if t.is_alive()]
    return len(_ABANDONED)


def stuck_loops(exc: BaseException, gen: GeneratedCode, program: Program | None) -> str | None:
    """A timed-out run: how far the loops it was in had got, outermost first (``the loop on line
    23 was at step = 4811 of range(1000000000000)``), for the loops whose variable was a plain
    integer then and whose bound is a constant; None when there is none."""
    counters: list[tuple[str, int, dict[str, int]]] = getattr(exc, "stuck_counters", None) or []
    if program is None or not counters:
        return None
    said = []
    for py_fn, line, values in counters:
        fn = program.function(gen.py_functions.get(py_fn, ""))
        span = gen.ir_span(line)
        if fn is None or span is None:
            continue
        to_py = {ir: py for py, ir in gen.local_names.get(py_fn, {}).items()}
        for s in fn.statements():
            if type(s) is not For or s.var is None or not s.span.line <= span.line <= s.span.end_line:
                continue
            v = values.get(to_py.get(s.var.name, s.var.name))
            stop = fold_int(s.stop)
            if v is None or stop is None:
                continue
            start = fold_int(s.start) if s.start is not None else 0
            step = fold_int(s.step) if s.step is not None else 1
            bounds = f"{stop}" if (start, step) == (0, 1) else f"{start}, {stop}, {step}"
            said.append(f"the loop on line {s.span.line} was at {s.var.name} = {v} of range({bounds})")
    return "; ".join(said[:4]) or None
