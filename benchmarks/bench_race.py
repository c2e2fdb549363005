"""What the race analysis costs as tasks grow: an orchestration loop submitting N tasks that all
write one buffer (issue 34's repro), validated in-process with the sanitizer on and off.

    python benchmarks/bench_race.py [--tasks 600,2400,9600] [--timeout 3]

``output_existing``: every task races with every other (one finding per pair of call sites);
``inout``: a chain (no race); ``program order``: the same calls with no ``arg_directions`` (a dump
before DeriveCallDirections: every task after every earlier one). The analysis is near-linear
(exec/race_index.py) and stops at the run's deadline with a timeout error. Prints seconds per run
and how far the sanitized run grew the process's memory (peak RSS over the run, sampled every
10 ms); no asserts. (Before the happens-before floors of 6 Dec, program order kept a bit and an
id per earlier task: 9600 tasks in program order took 13.7 s and 4.2 GB, now 0.9 s and nothing.)
"""

from __future__ import annotations

import argparse
import sys
import threading
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

    peak = [0]

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    def sample() -> None:
        while True:
            peak[0] = max(peak[0], rss())
            time.sleep(0.01)

    threading.Thread(target=sample, daemon=True).start()
    print(f"{'tasks':>6} {'tags':<16} {'off s':>7} {'on s':>7} {'ratio':>6} {'on +MB':>7}  on: status / findings")
    for n in (int(x) for x in a.tasks.split(",")):
        for tag in ("output_existing", "inout", "program order"):
            text = many_tasks(n, "inout" if tag == "program order" else tag)
            if tag == "program order":
                text = text.replace(', attrs={"arg_directions": [pl.adir.input, pl.adir.inout]}', "")
            secs = {}
            for san in (False, True):
                base = peak[0] = rss()
                t0 = time.perf_counter()
                r = run_text(
                    text, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": 2 * A}, filename="<bench>", sanitize=san, timeout=a.timeout
                )
                secs[san] = time.perf_counter() - t0
                grew = (peak[0] - base) / 2**20
            what = r.error.message[:60] if r.error is not None else f"{r.status} / {len((r.memory or {}).get('hazards', []))}"
            print(f"{n:>6} {tag:<16} {secs[False]:>7.2f} {secs[True]:>7.2f} {secs[True] / secs[False]:>6.2f} {grew:>7.0f}  {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
