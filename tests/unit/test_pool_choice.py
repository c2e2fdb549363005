"""Whether a pool pays (``validate`` without ``--jobs``): cheap folders in-process, heavy ones in a pool."""

from __future__ import annotations

import torch

from pypto_lsp.validate.pool_choice import POOL_PAYS_FROM_S, choose_jobs, estimate_seconds, golden_bytes


def _todo(n: int, size: int = 2000) -> dict[str, tuple[str, str]]:
    return {f"k{i}": ("x" * size, f"{i:02d}_after_P.py") for i in range(n)}


def test_fifty_cheap_dumps_run_in_process() -> None:
    small = {"x": torch.zeros(64, 128)}  # the softmax example's size: 32 KB
    assert estimate_seconds(_todo(50), small, small) < POOL_PAYS_FROM_S
    assert choose_jobs(_todo(50), small, small, cores=8) == 1


def test_heavy_goldens_pay_for_a_pool() -> None:
    big = {"w": torch.zeros(4096, 8192, dtype=torch.bfloat16)}  # 64 MB, as at hidden 4096
    assert choose_jobs(_todo(50), big, {}, cores=8) == 8
    huge = {"w": torch.zeros(1, dtype=torch.bfloat16).expand(1 << 30)}  # 2 GB of goldens, no memory taken
    assert choose_jobs(_todo(3), huge, {}, cores=8) == 3  # never more processes than files
    assert choose_jobs(_todo(50), big, {}, cores=1) == 1  # one core: no pool


def test_nothing_to_run_or_one_file_is_in_process() -> None:
    big = {"w": torch.zeros(4096, 8192)}
    assert choose_jobs({}, big, big, cores=8) == 1  # every file answered by the cache
    assert choose_jobs(_todo(1), big, big, cores=8) == 1
    assert golden_bytes({"a": torch.zeros(3, dtype=torch.float64)}, {"b": "not a tensor"}) == 24
