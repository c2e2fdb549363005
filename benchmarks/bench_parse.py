"""Parse + static-check time per file over every shared fixture dump.

    python benchmarks/bench_parse.py

Prints the median and the max over all files, and the largest file on its own
(best of 5). No asserts.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures"


def one(text: str) -> float:
    from pypto_lsp.ir.check import check_program
    from pypto_lsp.ir.parser import parse_text

    t0 = time.perf_counter()
    res = parse_text(text)
    if res.program is not None:
        check_program(res.program)
    return time.perf_counter() - t0


def _timed(fn, *args) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main() -> int:
    files = sorted(FIXTURES.glob("**/passes_dump/*.py"))
    if not files:
        print(f"no fixtures at {FIXTURES}")
        return 0
    texts = [(f, f.read_text()) for f in files]
    one(texts[0][1])  # warm imports
    times = [(min(one(t) for _ in range(2)), f, len(t)) for f, t in texts]
    vals = [t for t, _, _ in times]
    largest = max(texts, key=lambda ft: len(ft[1]))
    import ast
    import gc

    gc.collect()
    best = min(one(largest[1]) for _ in range(10))
    ast_best = min(_timed(ast.parse, largest[1]) for _ in range(10))
    worst = max(times)
    print(f"files: {len(files)}")
    print(
        f"parse+check median: {statistics.median(vals) * 1e3:.2f} ms, p95: {sorted(vals)[int(0.95 * len(vals))] * 1e3:.2f} ms, max: {worst[0] * 1e3:.2f} ms ({worst[1].relative_to(FIXTURES)})"
    )
    print(
        f"largest dump {largest[0].relative_to(FIXTURES)} ({len(largest[1]) / 1024:.1f} KiB): {best * 1e3:.2f} ms (best of 10); "
        f"Python's own ast.parse of it alone: {ast_best * 1e3:.2f} ms (ratio {best / ast_best:.2f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
