"""What the memory model costs: the qwen3_scope3_910b folder validated cold, memory on vs off.

    python benchmarks/bench_memory.py [--case NAME] [--repeat N]

Two figures per mode, N runs each, the modes interleaved (min and median; the machine is shared,
the minimum is the least disturbed):
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


def in_process(case: str, on: bool, switch: str = "memory") -> tuple[float, int]:
    """The folder validated once in this process with ``switch`` (a RunSettings flag) on or off:
    (seconds, files it counts: with placements for ``memory``, with findings for ``sanitize``)."""
    from pypto_lsp.validate import engine
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import ResultCache, validate_files
    from pypto_lsp.validate.golden import load_bundle

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
        settings=RunSettings(spec["rtol"], spec["atol"], spec.get("entry"), timeout_s=0, **{switch: on}),
        jobs=1,
        use_cache=False,
        cache=ResultCache(enabled=False),
    )
    dt = time.perf_counter() - t0
    if switch == "memory":
        return dt, sum(bool((f.memory or {}).get("checked")) for f in report.files)
    found = ("race", "uninitialised", "out-of-bounds")
    return dt, sum(any(h["kind"] in found for h in (f.memory or {}).get("hazards", [])) for f in report.files)


def cli(folder: Path, on: bool, inputs: Path, expected: Path, entry: str | None, switch: str = "memory") -> float:
    cmd = [sys.executable, "-m", "pypto_lsp", "validate", str(folder), "--no-cache", "--no-localize", "--jobs", "1"]
    cmd += ["--inputs", str(inputs), "--expected", str(expected), f"--{switch}", "on" if on else "off"]
    if entry:
        cmd += ["--entry", entry]
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main(switch: str = "memory", counted: str = "files with placements", goal: float = 1.5) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="qwen3_scope3_910b")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not (FIXTURES / "verdicts.json").is_file():
        print(f"fixtures not found at {FIXTURES}")
        return 0
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    spec = json.loads((FIXTURES / "verdicts.json").read_text())[args.case]
    in_process(args.case, True, switch)  # warm the imports and kernels once
    folder = FIXTURES / spec["dir"] / "passes_dump"
    runs: dict[bool, list[float]] = {True: [], False: []}
    clis: dict[bool, list[float]] = {True: [], False: []}
    checked = {True: 0, False: 0}
    # interleaved, so that load from elsewhere on the machine hits both modes alike
    for _ in range(args.repeat):
        for mem in (True, False):
            dt, checked[mem] = in_process(args.case, mem, switch)
            runs[mem].append(dt)
            clis[mem].append(cli(folder, mem, FIXTURES / spec["inputs"], FIXTURES / spec["expected"], spec.get("entry"), switch))
    print(f"{args.case}: {len(spec['files'])} dumps, cold (no result cache), {args.repeat} interleaved runs per mode")
    print(f"{'mode':<12} {'in-process min/median s':>24} {'CLI min/median s':>18} {counted:>22}")
    for mem in (True, False):
        label = f"{switch} on" if mem else f"{switch} off"
        r, c = runs[mem], clis[mem]
        print(
            f"{label:<12} {min(r):>11.3f} / {statistics.median(r):<10.3f} {min(c):>8.3f} / {statistics.median(c):<7.3f} {checked[mem]:>22}"
        )
    print(
        f"ratio on/off (min): in-process {min(runs[True]) / min(runs[False]):.2f}x, CLI {min(clis[True]) / min(clis[False]):.2f}x; "
        f"(median): in-process {statistics.median(runs[True]) / statistics.median(runs[False]):.2f}x, "
        f"CLI {statistics.median(clis[True]) / statistics.median(clis[False]):.2f}x (goal <= {goal}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
