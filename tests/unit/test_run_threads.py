"""A run computes on one intra-op thread, whichever thread it executes in and whatever the process
set: no team of MKL/OpenMP threads is started by a run (process_setup.one_intra_op_thread).

Why it matters: such a team outlives the run thread by a moment, its threads free MKL's buffers
under MKL's allocator lock as they exit, and a process forked in that moment (the folder runner's
pool) inherits the lock held and hangs at its first matmul (seen in CI: ``TimeoutError ... stopped
in pypto_lsp/exec/kernels/matmul.py in _mm``; ~1 fork in 400 on a loaded machine before the fix,
0 in 7200 after). The fork race itself is too rare to test in the suite; its cause is tested here.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

import pypto_lsp
from pypto_lsp.exec.observe import Observer, RunInfo
from pypto_lsp.validate import engine
from pypto_lsp.validate.golden import load_bundle

EXAMPLE = Path(pypto_lsp.__file__).resolve().parent.parent / "examples" / "mixed_matmul"
TASKS = Path("/proc/self/task")

pytestmark = pytest.mark.skipif(
    not TASKS.is_dir() or (os.cpu_count() or 1) < 2,
    reason="counts the process's OS threads (Linux /proc) around a matmul that MKL splits only on 2+ cores",
)


class ThreadsAroundMatmul(Observer):
    """The OS threads that appeared in the process during each matmul kernel call (their ids).
    A thread of an earlier test ending meanwhile is not counted: only new ids are."""

    def __init__(self) -> None:
        self.new_threads: list[set[str]] = []

    def kernel(self, op: str, fn: Any, run: RunInfo) -> Any:
        if "matmul" not in op:
            return None

        def counted(*args: Any, **kw: Any) -> Any:
            before = set(os.listdir(TASKS))
            try:
                return fn(*args, **kw)
            finally:
                self.new_threads.append(set(os.listdir(TASKS)) - before)

        return counted


def _run(timeout: float | None) -> ThreadsAroundMatmul:
    inputs = load_bundle(EXAMPLE / "golden" / "inputs.pt")
    path = EXAMPLE / "passes_dump" / "00_frontend.py"
    comp = engine.compile_text(path.read_text(), str(path))
    seen = ThreadsAroundMatmul()
    out = engine.run(comp, inputs, observers=[seen], timeout=timeout)
    assert out.error is None, out.error
    assert seen.new_threads, "no matmul kernel ran"
    return seen


@pytest.mark.parametrize("timeout", [60.0, None], ids=["run-thread", "caller-thread"])
def test_a_matmul_in_a_run_starts_no_thread_team(timeout: float | None) -> None:
    """In the run thread (a time limit) and in a fresh thread of the caller's (none), even in a
    process whose count is 2: the matmul adds no OS thread."""
    was = torch.get_num_threads()
    torch.set_num_threads(2)  # a process that never called configure_process, or set its own count
    try:
        box: dict[str, Any] = {}
        t = threading.Thread(target=lambda: box.update(seen=_run(timeout)))  # a thread that never asked torch
        t.start()
        t.join()
    finally:
        torch.set_num_threads(was)
    assert "seen" in box
    assert not any(box["seen"].new_threads), box["seen"].new_threads


def test_a_forked_child_starts_helpers_of_its_own() -> None:
    """The helper threads a run's big products use (exec.side_threads) are kept for the process's
    life; a process forked after they started (the CLI's pool after a run in the parent) has none
    of them: its own parts go to helpers it starts, and they are done (a child that handed a part
    to its parent's helper would wait for it forever; the test's time limit says so)."""
    import multiprocessing

    from pypto_lsp.exec import side_threads

    before, was = side_threads.helper_threads(), torch.get_num_threads()
    side_threads.set_helper_threads(2)
    torch.set_num_threads(1)  # as every process that validates runs (process_setup): no OpenMP team to fork
    try:
        out = torch.empty(2, 64, 64)
        a = torch.randn(64, 64)
        parts = [lambda i=i: torch.matmul(a, a, out=out[i]) for i in range(2)]
        side_threads.side_by_side(parts)  # the parent's helper, started here (or kept from before)
        assert any(t.name == "pypto-lsp-part" for t in threading.enumerate())
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(1) as pool:
            names, equal = pool.apply_async(_child_parts).get(timeout=60)
        assert equal
        assert names == ["MainThread", "pypto-lsp-part"]  # the child's own helper took the second part
    finally:
        side_threads.set_helper_threads(before)
        torch.set_num_threads(was)


def _child_parts() -> tuple[list[str], bool]:
    from pypto_lsp.exec import side_threads

    a = torch.randn(64, 64)
    out = torch.empty(2, 64, 64)
    names: list[str] = []

    def part(i: int) -> None:
        names.append(threading.current_thread().name)
        torch.matmul(a, a, out=out[i])

    side_threads.set_helper_threads(2)
    side_threads.side_by_side([lambda: part(0), lambda: part(1)])
    return sorted(names), bool(torch.equal(out[0], out[1]))
