"""What the sort, random and MX matmul kernels cost (issue 31), and the coverage dumps that use them.

    python benchmarks/bench_sort_random_mx.py [--repeat 5]

1. Kernel calls, min of ``--repeat``: sort32 + three mrgsort_format1 passes over [1, 2048] (the
   pypto test's dynamic-block_len pipeline), random over [64, 1024], matmul_mx 256x512x256.
2. The coverage cases (../shared/fixtures-coverage) these kernels make run: every file of each
   validated against its goldens, seconds per folder.

Prints figures, asserts nothing. Report the load average with them (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COVERAGE = ROOT.parent / "shared" / "fixtures-coverage"
if not COVERAGE.is_dir():
    COVERAGE = Path("/work/shared/fixtures-coverage")
sys.path.insert(0, str(ROOT))

CASES = ("mrgsort1", "random_determ_uint32_950", "matmul_mx_fp8_950")


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import torch

    from pypto_lsp.exec.kernels import KERNELS as K
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import ResultCache, validate_files
    from pypto_lsp.validate.golden import load_bundle

    g = torch.Generator().manual_seed(0)
    src, idx = torch.randn(1, 2048, generator=g), torch.arange(2048).reshape(1, 2048)

    def sort_chain() -> None:
        t = K["tile.sort32"](src, idx)
        for i in range(3):
            t = K["tile.mrgsort_format1"](t, 1 << (6 + 2 * i))

    a, b = torch.randn(256, 512, generator=g), torch.randn(512, 256, generator=g)
    sa, sb = torch.ones(256, 16), torch.ones(16, 256)
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print(f"sort32 + 3x mrgsort_format1 [1, 2048]: {_best(sort_chain, args.repeat) * 1e3:.1f} ms")
    rnd = _best(lambda: K["tile.random"](1, 2, 3, 4, 5, 6, [64, 1024], dtype=torch.int64, rounds=10), args.repeat)
    print(f"random [64, 1024], 10 rounds: {rnd * 1e3:.1f} ms")
    print(f"matmul_mx 256x512x256: {_best(lambda: K['tile.matmul_mx'](a, sa, b, sb), args.repeat) * 1e3:.1f} ms")
    if not COVERAGE.is_dir():
        print("coverage fixtures not found: skipped")
        return
    verdicts = json.loads((COVERAGE / "verdicts.json").read_text())
    for case in CASES:
        spec = verdicts.get(case)
        if spec is None:
            continue
        files = [COVERAGE / spec["dir"] / "passes_dump" / f for f in spec["files"]]
        inputs, expected = load_bundle(COVERAGE / spec["inputs"]), load_bundle(COVERAGE / spec["expected"])
        t0 = time.perf_counter()
        settings = RunSettings(spec["rtol"], spec["atol"], spec.get("entry"), timeout_s=60)
        report = validate_files(files, inputs, expected, settings=settings, jobs=1, use_cache=False, cache=ResultCache(enabled=False))
        took = time.perf_counter() - t0
        passed = sum(1 for f in report.files if f.status == "pass")
        print(f"{case}: {passed}/{len(files)} files pass in {took:.2f} s")


if __name__ == "__main__":
    main()
