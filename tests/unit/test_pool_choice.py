"""Whether a pool pays (``validate`` without ``--jobs``): cheap folders in-process, heavy ones in a
pool, and no pool on a machine with no idle core."""

from __future__ import annotations

from pathlib import Path

import torch

from pypto_lsp.validate.folders import keyed_text
from pypto_lsp.validate.golden import load_bundle
from pypto_lsp.validate.pool_choice import POOL_PAYS_FROM_S, choose_jobs, estimate_seconds, golden_bytes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _todo(n: int, size: int = 2000) -> dict[str, tuple[str, str]]:
    return {f"k{i}": ("x" * size, f"{i:02d}_after_P.py") for i in range(n)}


def _folder(name: str) -> tuple[dict[str, tuple[str, str]], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """An example's distinct dumps (as the folder runner keys them) and its goldens."""
    case = EXAMPLES / name
    todo: dict[str, tuple[str, str]] = {}
    for f in sorted((case / "passes_dump").glob("*.py")):
        text = f.read_text()
        todo.setdefault(keyed_text(text, True), (text, str(f)))
    return todo, load_bundle(case / "golden" / "inputs.pt"), load_bundle(case / "golden" / "expected.pt")


def test_a_folder_of_cheap_dumps_runs_in_process() -> None:
    todo, inputs, expected = _folder("softmax")
    assert len(todo) >= 2
    assert estimate_seconds(todo, inputs, expected) < POOL_PAYS_FROM_S
    assert choose_jobs(todo, inputs, expected, cores=8, load=0.0) == 1
    small = {"x": torch.zeros(64, 128)}
    assert choose_jobs(_todo(20), small, small, cores=8, load=0.0) == 1  # 20 distinct 2 kB dumps: ~0.3 s


def test_a_folder_of_many_large_dumps_pays_for_a_pool_on_an_idle_machine() -> None:
    small = {"x": torch.zeros(64, 128)}
    qwen3_like = _todo(19, 27_000)  # the qwen3 block's 19 distinct dumps: ~2.3 s in one process
    assert choose_jobs(qwen3_like, small, small, cores=2, load=0.4) == 2
    assert choose_jobs(qwen3_like, small, small, cores=2, load=2.0) == 1  # both cores busy: no pool
    assert choose_jobs(qwen3_like, small, small, cores=8, load=9.5) == 1
    assert choose_jobs(qwen3_like, small, small, cores=8, load=3.0) == 8


def test_heavy_goldens_pay_for_a_pool() -> None:
    big = {"w": torch.zeros(4096, 8192, dtype=torch.bfloat16)}  # 64 MB, as at hidden 4096
    assert choose_jobs(_todo(50), big, {}, cores=8, load=0.0) == 8
    huge = {"w": torch.zeros(1, dtype=torch.bfloat16).expand(1 << 30)}  # 2 GB of goldens, no memory taken
    assert choose_jobs(_todo(3), huge, {}, cores=8, load=0.0) == 3  # never more processes than files
    assert choose_jobs(_todo(50), big, {}, cores=1, load=0.0) == 1  # one core: no pool


def test_nothing_to_run_or_one_file_is_in_process() -> None:
    big = {"w": torch.zeros(4096, 8192)}
    assert choose_jobs({}, big, big, cores=8, load=0.0) == 1  # every file answered by the cache
    assert choose_jobs(_todo(1), big, big, cores=8, load=0.0) == 1
    assert golden_bytes({"a": torch.zeros(3, dtype=torch.float64)}, {"b": "not a tensor"}) == 24
