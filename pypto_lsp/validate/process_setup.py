"""How a process that validates is set up: torch on one intra-op thread, glibc keeping freed heap,
the cyclic GC run less often. Called once by each entry point (the CLI, the worker, the debug
adapter, the pool's children, the library functions); the measured reasons are in each docstring."""

from __future__ import annotations

import torch


def configure_process() -> None:
    """One intra-op thread: dump tensors are small, and on a busy 2-core machine torch's
    thread pool costs 10x more than it saves (a 1 MB clone: 1 ms with 2 threads, 0.1 ms
    with 1); freed heap kept; the cyclic GC less often. Called by the CLI, the worker and the
    validate_* entry points."""
    one_intra_op_thread()
    _keep_freed_memory()
    collect_less()


def one_intra_op_thread() -> None:
    """The calling thread computes on one intra-op thread, OpenMP's and MKL's included; called by
    :func:`configure_process` and by every run, on the thread the run executes in.

    torch keeps the count per process but applies it to a thread's OpenMP and MKL settings only
    when that thread first asks for it (``torch.get_num_threads``). A run thread that never asked
    runs its matmuls on a team of MKL threads (the machine's cores), whatever the process set. That
    team outlives the run thread by a moment: its threads free MKL's buffers as they exit, under
    MKL's allocator lock, and a process forked in that moment (the folder runner's pool, right after
    the no-goldens reference run) inherits the lock held and spins at its first matmul forever
    (``TimeoutError ... stopped in pypto_lsp/exec/kernels/matmul.py in _mm``: one fork in ~400 on a
    loaded 2-core machine, a matmul of the hung child seen in gdb inside ``mkl_serv_allocate``).
    With one thread no team is started; the run thread itself is waited for
    (``exec.side_threads.wait_gone``). A process that set a count of its own has it set to one here:
    runs compute on one intra-op thread in every process, so their bits do not depend on who ran them."""
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


# the cyclic GC's thresholds in a process that validates (Python's default: 700, 10, 10)
GC_THRESHOLDS = (20_000, 20, 10)


def collect_less() -> None:
    """Fewer cyclic-GC passes while runs allocate: a parse, a codegen and a run each make tens of
    thousands of short-lived acyclic objects (IR nodes, generated lines, tensor views), and at
    Python's default thresholds the collections they trigger walk the heap again and again (8-13 %
    of a cold qwen3 folder in one process, `benchmarks/bench_startup.py`). The objects that exist by
    now (the modules, torch) are moved out of the collector's reach (``gc.freeze``); cycles are still
    collected, only less often. Idempotent: raises the thresholds, never lowers what a caller set."""
    import gc

    now = gc.get_threshold()
    if now[0] < GC_THRESHOLDS[0]:
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)


_MALLOC_TUNED = False


def _keep_freed_memory() -> None:
    """glibc: serve big blocks from the heap and keep what is freed (``mallopt``), instead of a fresh
    ``mmap`` per block that the kernel zero-fills page by page on first touch. A run at hidden 4096
    allocates its weight conversions (~0.5 GB) again and again: 20-25 % of its time went to page
    faults. The cost: the process keeps its peak heap. Not glibc (macOS, musl): nothing."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "mallopt") and hasattr(libc, "gnu_get_libc_version"):
            libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD: blocks up to 1 GB from the heap
            libc.mallopt(-1, 1 << 31)  # M_TRIM_THRESHOLD: keep up to 2 GB of freed heap
    except (OSError, AttributeError):
        pass
