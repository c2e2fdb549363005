"""What the race analysis costs as tasks grow: an orchestration loop submitting N tasks that all
write one buffer (issue 34's repro), validated in-process with the sanitizer on and off.

    python benchmarks/bench_race.py [--tasks 600,2400,9600] [--timeout 3]

``output_existing``: every task races with every other (one finding per pair of call sites);
``inout``: a chain (no race). The analysis is near-linear (exec/race_index.py) and stops at the
run's deadline with a timeout error. Prints seconds per run; no asserts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "unit"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="600,2400,9600")
    ap.add_argument("--timeout", type=float, default=3.0)
    a = ap.parse_args()
    import torch
    from test_sanitizer import A, many_tasks  # the dump the unit test runs

    from pypto_lsp.validate.engine import run_text

    print(f"{'tasks':>6} {'tags':<16} {'off s':>7} {'on s':>7} {'ratio':>6}  on: status / findings")
    for n in (int(x) for x in a.tasks.split(",")):
        for tag in ("output_existing", "inout"):
            text = many_tasks(n, tag)
            secs = {}
            for san in (False, True):
                t0 = time.perf_counter()
                r = run_text(
                    text, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": 2 * A}, filename="<bench>", sanitize=san, timeout=a.timeout
                )
                secs[san] = time.perf_counter() - t0
            what = r.error.message[:60] if r.error is not None else f"{r.status} / {len((r.memory or {}).get('hazards', []))}"
            print(f"{n:>6} {tag:<16} {secs[False]:>7.2f} {secs[True]:>7.2f} {secs[True] / secs[False]:>6.2f}  {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
