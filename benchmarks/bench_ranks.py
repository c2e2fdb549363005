"""Cost of a multi-rank program against the same work on one rank.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_ranks.py [REPEATS]

Runs ``examples/allreduce_ranks`` (4 ranks, each a chip program: load, notify/wait barrier,
three remote loads, three adds, store) through ``validate.engine.run_text`` and, for the same
per-rank work on one rank, the same dump with its inputs cut to one rank (the HOST loop then
launches one chip program; its barrier and remote loads have no peer to wait for, so they are
cut as well). Prints the median seconds per run and the ratio per rank.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

from pypto_lsp.validate.engine import run_text

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "allreduce_ranks"


def one_rank_text(text: str) -> str:
    """The example's chip work on one rank: no peers to meet, its own slice added three times."""
    text = text.replace("[4, 1, 64]", "[1, 1, 64]").replace("[4, 1]", "[1, 1]")
    text = text.replace("for peer in pl.range(4):", "for peer in pl.range(1):").replace(
        "for src in pl.range(4):", "for src in pl.range(1):"
    )
    return text


def median_seconds(text: str, inputs: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = run_text(text, inputs, expected, filename="bench.py")
        times.append(time.perf_counter() - t0)
        assert res.status in ("pass", "fail"), res.error
    return statistics.median(times)


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    inputs = torch.load(EXAMPLE / "golden" / "inputs.pt")
    expected = torch.load(EXAMPLE / "golden" / "expected.pt")
    for name in ("00_frontend.py", "35_after_AllocateMemoryAddr.py"):
        text = (EXAMPLE / "passes_dump" / name).read_text()
        four = median_seconds(text, inputs, expected, repeats)
        one_in = {k: v[:1].clone() for k, v in inputs.items()}
        one_exp = {"y": (4 * inputs["x"][:1]).clone()}
        one = median_seconds(one_rank_text(text), one_in, one_exp, repeats)
        print(f"{name}: 4 ranks {four * 1e3:.2f} ms, 1 rank {one * 1e3:.2f} ms, per rank {four / 4 / one:.2f}x the one-rank run")


if __name__ == "__main__":
    main()
