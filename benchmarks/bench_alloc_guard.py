"""What the runtime allocation-budget guard costs (issue 12, item 6).

    python benchmarks/bench_alloc_guard.py [--iters 20000] [--repeat 7]

1. One call of the guard (``exec.alloc_budget.check``) on a 2-D runtime shape: min of ``--repeat``.
2. The hot path: a dump whose loop body computes a dynamic-shaped value ``--iters`` times (the
   guard runs every iteration), run from its generated code as is and with the guard lines blanked
   (same code otherwise): min of ``--repeat`` interleaved runs each, and the difference.
3. How many guards the real compiler dumps get (the shared fixtures' 50-pass programs, the
   repository's examples): their shapes are static, so none, and they run exactly as before.

Prints figures, asserts nothing. Report the load average with them (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures"
sys.path.insert(0, str(ROOT))

HOT = """# pypto.program: Hot
import pypto.language as pl

M = pl.dynamic("M")

@pl.program
class Hot:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, x: pl.Tensor[[M, 16], pl.FP32], out: pl.Out[pl.Tensor[[M, 16], pl.FP32]]) -> pl.Tensor[[M, 16], pl.FP32]:
        for i, (acc,) in pl.range(ITERS, init_values=(x,)):
            nxt: pl.Tensor[[M, 16], pl.FP32] = pl.tensor.muls(acc, 1.0)
            acc_out: pl.Tensor[[M, 16], pl.FP32] = pl.yield_(nxt)
        out: pl.Tensor[[M, 16], pl.FP32] = pl.tensor.assemble(out, acc_out, [0, 0])
        return out
"""


def run_min(fn: Any, args: list[Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()

    import torch

    from pypto_lsp.exec.codegen import generate
    from pypto_lsp.ir import alloc_budget
    from pypto_lsp.ir.parser import parse_text
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    site = (4, "x: pl.tensor.create", "FP32", 0)
    per_call = min(timeit.repeat(lambda: alloc_budget.check((4096, 16), site), number=100000, repeat=a.repeat)) / 100000
    print(f"1. one guard call (2-D shape): {per_call * 1e9:.0f} ns (min of {a.repeat} x 100000)")

    prog = parse_text(HOT.replace("ITERS", str(a.iters))).program
    assert prog is not None
    src = generate(prog).source
    guards = sum(1 for line in src.splitlines() if "_pl_ab.check(" in line)
    plain = "\n".join(line.split("_pl_ab.check(")[0] + "pass" if "_pl_ab.check(" in line else line for line in src.splitlines())
    fns = []
    for text in (src, plain):
        ns: dict[str, Any] = {"__name__": "bench"}
        exec(compile(text, "<bench>", "exec"), ns)  # our own generated code
        fns.append(ns["main"])
    x = torch.randn(64, 16)
    best = [float("inf"), float("inf")]
    for _ in range(a.repeat):  # interleaved: both see the same machine
        for k, fn in enumerate(fns):
            best[k] = min(best[k], run_min(fn, [x, torch.zeros(64, 16)], 1))
    diff = best[0] - best[1]
    print(
        f"2. {a.iters} loop iterations of a dynamic-shaped op ({guards} guard site(s), one call per iteration): "
        f"{best[0] * 1e3:.1f} ms with the guard, {best[1] * 1e3:.1f} ms without (min of {a.repeat}); "
        f"difference {diff * 1e3:+.1f} ms = {diff / a.iters * 1e9:+.0f} ns per iteration ({diff / best[1] * 100:+.1f} %)"
    )

    dumps = sorted(FIXTURES.glob("*/passes_dump/*.py")) + sorted((ROOT / "examples").glob("*/passes_dump/*.py"))
    sites = files = 0
    for f in dumps:
        p = parse_text(f.read_text(encoding="utf-8"), str(f)).program
        if p is None:
            continue
        try:
            s = generate(p).source
        except Exception:
            continue
        files += 1
        sites += s.count("_pl_ab.check(")
    print(f"3. guard sites in {files} real dumps (shared fixtures + examples): {sites}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
