"""What the memory model costs: the qwen3_scope3_910b folder validated cold, memory on vs off.

    python benchmarks/bench_memory.py [--case NAME] [--repeat N]

Two figures per mode, each the median of N runs:
* in-process: ``validate_files`` over the 50 dumps, one job, no result cache, the compiled-script
  cache cleared before each run (parse, checks, codegen and execution all counted);
* CLI: ``pypto-lsp validate FOLDER --no-cache --no-localize --jobs 1`` as a fresh process
  (torch import included), with ``--memory on`` / ``--memory off``.
Then the ratio on/off (the issue's goal: <= 1.5x). No asserts: this measures, it does not judge.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures"


def in_process(case: str, memory: bool) -> tuple[float, int]:
    from pypto_lsp.validate import engine
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.run import ResultCache, validate_files

    spec = json.loads((FIXTURES / "verdicts.json").read_text())[case]
    folder = FIXTURES / spec["dir"] / "passes_dump"
    files = [folder / n for n in spec["files"]]
    inputs = load_bundle(FIXTURES / spec["inputs"])
    expected = load_bundle(FIXTURES / spec["expected"])
    engine._COMPILED.clear()
    t0 = time.perf_counter()
    report = validate_files(
        files,
        inputs,
        expected,
        rtol=spec["rtol"],
        atol=spec["atol"],
        entry=spec.get("entry"),
        jobs=1,
        use_cache=False,
        cache=ResultCache(enabled=False),
        memory=memory,
    )
    dt = time.perf_counter() - t0
    return dt, sum(bool((f.memory or {}).get("checked")) for f in report.files)


def cli(folder: Path, memory: bool, inputs: Path, expected: Path, entry: str | None) -> float:
    cmd = [sys.executable, "-m", "pypto_lsp", "validate", str(folder), "--no-cache", "--no-localize", "--jobs", "1"]
    cmd += ["--inputs", str(inputs), "--expected", str(expected), "--memory", "on" if memory else "off"]
    if entry:
        cmd += ["--entry", entry]
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="qwen3_scope3_910b")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not (FIXTURES / "verdicts.json").is_file():
        print(f"fixtures not found at {FIXTURES}")
        return 0
    from pypto_lsp.validate.engine import configure_torch

    configure_torch()
    spec = json.loads((FIXTURES / "verdicts.json").read_text())[args.case]
    in_process(args.case, True)  # warm the imports and kernels once
    rows: dict[str, dict[str, float]] = {}
    for label, mem in (("memory on", True), ("memory off", False)):
        runs = [in_process(args.case, mem) for _ in range(args.repeat)]
        clis = [
            cli(FIXTURES / spec["dir"] / "passes_dump", mem, FIXTURES / spec["inputs"], FIXTURES / spec["expected"], spec.get("entry"))
            for _ in range(args.repeat)
        ]
        rows[label] = {"in_process": statistics.median(r[0] for r in runs), "cli": statistics.median(clis), "checked": runs[0][1]}
    print(f"{args.case}: {len(spec['files'])} dumps, cold (no result cache), median of {args.repeat}")
    print(f"{'mode':<12} {'in-process s':>13} {'CLI s':>8} {'files with placements':>22}")
    for label, r in rows.items():
        print(f"{label:<12} {r['in_process']:>13.3f} {r['cli']:>8.3f} {int(r['checked']):>22}")
    on, off = rows["memory on"], rows["memory off"]
    print(f"ratio on/off: in-process {on['in_process'] / off['in_process']:.2f}x, CLI {on['cli'] / off['cli']:.2f}x (goal <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
