"""Whether a pool of worker processes pays for a folder (``validate`` without ``--jobs``).

A pool costs its start-up and each process's first run (the codegen and kernel caches warm per
process), about a second per process on a loaded two-core machine; a folder of 50 cheap dumps
does all its work in a quarter of that (issue 33: the default pool made the softmax folder
1.5x slower than ``--jobs 1``). So the work is estimated before anything runs, from what is
known then: the files the cache does not answer, their text, and the goldens' bytes (the
tensors every file computes scale with them). Below :data:`POOL_PAYS_FROM_S` the folder runs in
this process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

# measured on the fixtures (benchmarks/bench_startup.py): qwen3 at hidden 512 (3.7 MB of goldens)
# ~0.03 s a file, softmax (52 KB) ~2 ms a file, qwen3 at hidden 4096 (235 MB) ~2 s a file
SECONDS_PER_FILE = 2e-3
SECONDS_PER_TEXT_BYTE = 1e-7
SECONDS_PER_GOLDEN_BYTE = 1e-8
POOL_PAYS_FROM_S = 4.0  # estimated in-process seconds from which forking a pool is worth it


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


def choose_jobs(
    todo: Mapping[str, tuple[str, str]], inputs: Mapping[str, Any], expected: Mapping[str, Any], cores: int | None = None
) -> int:
    """Worker processes for this run: 1 (in-process) unless the estimated work pays for a pool."""
    cores = cores or os.cpu_count() or 1
    if cores < 2 or len(todo) < 2 or estimate_seconds(todo, inputs, expected) < POOL_PAYS_FROM_S:
        return 1
    return min(cores, len(todo))
