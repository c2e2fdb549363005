"""One big piece of a run's work split over threads: a golden weight's FP32 conversion
(:func:`pypto_lsp.exec.values.as_f32`) and the K-chunk products of a weight's stripes for every
task of a loop (:func:`pypto_lsp.exec.pipebatch._across_tasks`).

The engine computes on one intra-op thread (dump tensors are small, and a process's thread count
is shared by everything it runs), so torch's own threads never help with these. Each part here is a
plain Python thread that runs torch calls on one intra-op thread itself: torch lets go of the GIL
while it copies or multiplies, so the parts run side by side on the machine's cores, and every
element is computed by the same one-thread call as it would be in the run's own thread (the same
bits). How many threads: :func:`helper_threads` (the CLI's pool processes and Dask workers share
the cores already and set 1). Work beside the run's Python does not pay: a helper needs the GIL
between its torch calls, which the run's Python holds nearly all the time (docs/speed.md,
twenty-second pass); only long native calls on every side do.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable

import torch

__all__ = ["WORTH_SPLITTING", "helper_threads", "set_helper_threads", "side_by_side", "spans", "wait_gone"]

_THREADS = [min(4, os.cpu_count() or 1)]
# a piece of work over fewer elements than this is done by the run's own thread (a helper's turn
# would cost more than it saves)
WORTH_SPLITTING = 1 << 22


def set_helper_threads(n: int) -> None:
    """How many threads one big piece of work may use (1: the run's own thread only)."""
    _THREADS[0] = max(1, n)


def helper_threads() -> int:
    return _THREADS[0]


def spans(n: int, elements: int) -> list[tuple[int, int]]:
    """``[0, n)`` cut into one run per thread that may work on it, for a piece of work over
    ``elements`` elements (one run when that is below :data:`WORTH_SPLITTING`)."""
    parts = min(helper_threads(), n) if elements >= WORTH_SPLITTING else 1
    per = max(1, -(-n // max(1, parts)))
    return [(lo, min(n, lo + per)) for lo in range(0, n, per)]


def side_by_side(parts: list[Callable[[], object]]) -> None:
    """Every part called, the first in this thread and each other one in a helper thread of its own
    (:class:`_Helper`); returns once all are done. The first exception a part raised is raised here
    (after every part has stopped: none is left writing). Inside a helper's part (a conversion a
    product's part asks for) the parts run one after the other here: that helper cannot take them."""
    if len(parts) <= 1 or getattr(_HERE, "helper", False):
        for part in parts:
            part()
        return
    failed: list[BaseException] = []
    done = threading.Semaphore(0)
    inference = torch.is_inference_mode_enabled()  # thread-local: a run's (validate.engine.run)
    helpers = _helpers(len(parts) - 1)
    for helper, part in zip(helpers, parts[1:], strict=True):
        helper.jobs.put((part, inference, done, failed))
    try:
        parts[0]()
    except BaseException as exc:
        failed.append(exc)
    for _ in helpers:
        done.acquire()
    if failed:
        raise failed[0]


class _Helper:
    """A thread that runs parts for :func:`side_by_side` until the process ends. Kept, not started
    per call: a thread's first matmul allocates MKL's per-thread buffers and its first conversions a
    malloc arena, and a fresh thread faults those pages in again every time (~8 000 page faults,
    ~10 ms, a cold hidden-4096 run with a thread per call). Never ending, it never frees MKL's
    buffers under MKL's lock, which a fork could catch held (:func:`wait_gone`); idle, it holds no
    lock a forked child could need, and a child starts helpers of its own (:func:`_forget_helpers`)."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[], object], bool, threading.Semaphore, list[BaseException]]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="pypto-lsp-part", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        _HERE.helper = True
        if torch.get_num_threads() != 1:  # asking applies the process's count to this thread
            torch.set_num_threads(1)
        while True:
            part, inference, done, failed = self.jobs.get()
            try:
                with torch.inference_mode(inference):
                    part()
            except BaseException as exc:  # raised by side_by_side, in the caller's thread
                failed.append(exc)
            finally:
                del part  # its tensors are the caller's to free
                done.release()


_HERE = threading.local()  # .helper: this thread is a helper
_HELPERS: list[_Helper] = []
_HELPERS_LOCK = [threading.Lock()]


def _helpers(n: int) -> list[_Helper]:
    """``n`` helpers of this process, started on first use."""
    with _HELPERS_LOCK[0]:
        while len(_HELPERS) < n:
            _HELPERS.append(_Helper())
        return _HELPERS[:n]


def _forget_helpers() -> None:
    """In a forked child: none of the parent's threads exist there (nor a lock one of them held)."""
    _HELPERS.clear()
    _HELPERS_LOCK[0] = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


def wait_gone(t: threading.Thread, limit: float = 1.0) -> None:
    """Until ``t``'s OS thread has ended (Linux; elsewhere nothing). ``join`` returns once the
    thread's Python state is gone, before the thread runs its native exit handlers: MKL frees its
    per-thread buffers there, under a lock, and a process forked in that window (the CLI's worker
    pool, right after the no-goldens reference run) inherits the lock held and spins on it forever
    at its first matmul. Usually already gone; a few hundred microseconds at most."""
    tid = getattr(t, "native_id", None)
    task = f"/proc/self/task/{tid}"
    if tid is None or not os.path.isdir("/proc/self/task"):
        return
    deadline = time.monotonic() + limit
    while os.path.exists(task) and time.monotonic() < deadline:
        time.sleep(0.0002)
