"""Whether a pool of worker processes pays for a folder (``validate`` without ``--jobs``).

A pool costs its start-up and each process's first run (the codegen and kernel caches warm per
process), and it only pays when there are idle cores to run it on. So the work is estimated
before anything runs, from what is known then: the files the cache does not answer, their text,
and the goldens' bytes (the tensors every file computes scale with them); and the machine's load
is read, as ``make -l`` does. A folder runs in this process when its estimated work is below
:data:`POOL_PAYS_FROM_S` or when the machine has no idle core (1-minute load average at least the
number of cores).

Measured on the shared fixtures on a quiet 2-core machine (``summary.seconds``, ``--jobs 1``
against ``--jobs 2``, best of 2): below ~0.25 s of in-process work the pool is as fast or slower
(softmax 0.12 s: 0.84-1.3x, the cross-core examples 0.15-0.25 s: 0.97-1.08x); from ~0.3 s on it
pays (bidirect 0.36 s: 0.60-0.68x; qwen3 2.26 s: 0.73x; hidden 1024 3.73 s: 0.50x). Under load
(load average 5-10 on 2 cores) the pool made the softmax folder 1.5x slower (issue 33): no idle
core, no pool.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

# the estimate of in-process seconds, fitted to the fixtures above (quiet machine): per file to run,
# per byte of its text (parse, checks, codegen and the kernels the lines become), and per byte of
# goldens per file (the tensors it computes); qwen3 at hidden 512 / 4096: 1.7 / 19.4 s estimated
# against 2.26 / 19.2 s measured, softmax 0.14 against 0.12 s
SECONDS_PER_FILE = 0.01
SECONDS_PER_TEXT_BYTE = 2.5e-6
SECONDS_PER_GOLDEN_BYTE = 4e-9
POOL_PAYS_FROM_S = 0.5  # estimated in-process seconds from which forking a pool is worth it


def golden_bytes(*bundles: Mapping[str, Any]) -> int:
    """Bytes of the tensors in the bundles (anything without ``numel``/``element_size`` counts 0)."""
    n = 0
    for b in bundles:
        for t in b.values():
            try:
                n += int(t.numel()) * int(t.element_size())
            except (AttributeError, TypeError):
                continue
    return n


def estimate_seconds(todo: Mapping[str, tuple[str, str]], inputs: Mapping[str, Any], expected: Mapping[str, Any]) -> float:
    """In-process seconds the files to run would take, roughly."""
    per_file = SECONDS_PER_FILE + SECONDS_PER_GOLDEN_BYTE * golden_bytes(inputs, expected)
    return sum(per_file + SECONDS_PER_TEXT_BYTE * len(text) for text, _ in todo.values())


def load_average() -> float:
    """The 1-minute load average, 0.0 where the system does not say (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def choose_jobs(
    todo: Mapping[str, tuple[str, str]],
    inputs: Mapping[str, Any],
    expected: Mapping[str, Any],
    cores: int | None = None,
    load: float | None = None,
) -> int:
    """Worker processes for this run: 1 (in-process) unless the estimated work pays for a pool and
    a core is idle (``load``: the 1-minute load average; None reads the machine's)."""
    cores = cores or os.cpu_count() or 1
    if cores < 2 or len(todo) < 2 or estimate_seconds(todo, inputs, expected) < POOL_PAYS_FROM_S:
        return 1
    if (load_average() if load is None else load) >= cores:
        return 1  # every core is busy already: more processes only share them
    return min(cores, len(todo))
