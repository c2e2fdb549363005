"""What the debugger costs on qwen3_scope3_910b (issue 26): the answer time of a step and of a
variables request, and a run to a breakpoint on the last line against ``validate`` of that file.

    python benchmarks/bench_debug.py [--case NAME] [--dump FILE] [--steps N] [--repeat N]

Everything through the real adapter (``python -m pypto_lsp debug`` over stdio, tests/dap_client.py):
* step: ``stepIn`` from the entry until its ``stopped`` event, N times (p50 / p95 / max);
* variables: the Locals of the top frame, then the children of its first tile, N times;
* run to the last line: a fresh adapter, launch with the goldens, a breakpoint on the last
  executable line, from ``configurationDone`` to ``stopped`` (the run itself, previous pass
  recorded first: ``recordPrevious`` on and off), and from the process start to ``stopped``;
  beside ``pypto-lsp validate FILE --no-cache --no-localize`` as a fresh process (wall) and its
  own run time (``seconds`` of its JSON); then ``stepBack`` from there (a replay of the run).
  Ratios at the end (goal: <= 2x). No asserts.
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

from tests.dap_client import DapClient  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def last_line(prog: Path, inputs: Path, expected: Path) -> int:
    from pypto_lsp.debug.launch import prepare

    comp = prepare({"program": str(prog), "inputs": str(inputs), "expected": str(expected)}).comp
    assert comp is not None and comp.generated is not None
    return max(comp.generated.stop_lines)


def hits(prog: Path, inputs: Path, expected: Path, line: int) -> int:
    """How often the run passes ``line`` (continue from stop to stop until the end)."""
    c = DapClient()
    try:
        c.start({"program": str(prog), "inputs": str(inputs), "expected": str(expected), "recordPrevious": False}, breakpoints=[line])
        n = 0
        while True:
            ev = c.events.get(timeout=600)
            if ev["event"] == "terminated":
                return n
            if ev["event"] == "stopped":
                n += 1
                c.request("continue", {"threadId": ev["body"]["threadId"]})
    finally:
        c.close()


def run_to(prog: Path, inputs: Path, expected: Path, line: int, nth: int, record: bool) -> tuple[float, float, DapClient, int]:
    """A fresh adapter run to the ``nth`` pass over ``line`` (its last: the end of the run)."""
    t0 = time.perf_counter()
    c = DapClient()
    c.request("initialize", {"adapterID": "pypto"})
    c.request("launch", {"program": str(prog), "inputs": str(inputs), "expected": str(expected), "recordPrevious": record}, timeout=600)
    c.wait_event("initialized")
    c.request("setBreakpoints", {"source": {"path": str(prog)}, "breakpoints": [{"line": line, "hitCondition": f"== {nth}"}]})
    t1 = time.perf_counter()
    c.request("configurationDone")
    ev = c.wait_event("stopped", timeout=600)
    t2 = time.perf_counter()
    return t2 - t1, t2 - t0, c, ev["body"]["threadId"]


def validate(prog: Path, inputs: Path, expected: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pypto_lsp",
            "validate",
            str(prog),
            "--inputs",
            str(inputs),
            "--expected",
            str(expected),
            "--no-cache",
            "--no-localize",
            "--json",
            "--jobs",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    wall = time.perf_counter() - t0
    try:
        data = json.loads(r.stdout)
        secs = float(data["files"][0]["seconds"])
    except (ValueError, KeyError, IndexError):
        secs = float("nan")
    return wall, secs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="qwen3_scope3_910b")
    ap.add_argument("--dump", default=None, help="a dump of the case (default: its last)")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    folder = FIXTURES / a.case
    if not folder.is_dir():
        print(f"skipped: {folder} not found")
        return 0
    files = sorted((folder / "passes_dump").glob("*.py"))
    prog = (folder / "passes_dump" / a.dump) if a.dump else files[-1]
    inputs, expected = folder / "tensors.pt", folder / "expected.pt"
    line = last_line(prog, inputs, expected)
    nth = hits(prog, inputs, expected, line)
    print(f"{a.case}: {prog.name}, last executable line {line}, passed {nth} times in a run (the breakpoint stops at the last)")

    # -- step and variables answer times: from the entry, stepIn after stepIn (into every kernel)
    c = DapClient()
    try:
        c.start({"program": str(prog), "inputs": str(inputs), "expected": str(expected), "stopOnEntry": True})
        tid = c.wait_event("stopped", timeout=600)["body"]["threadId"]
        steps: list[float] = []
        variables: list[float] = []
        locals_: list[float] = []
        rows: list[float] = []
        for _ in range(a.steps):
            t0 = time.perf_counter()
            c.request("stepIn", {"threadId": tid})
            ev = c.wait_event("stopped")
            steps.append(time.perf_counter() - t0)
            tid = ev["body"]["threadId"]
            t0 = time.perf_counter()
            frames = c.stack(tid)
            scopes = c.request("scopes", {"frameId": frames[0]["id"]})["body"]["scopes"]
            t1 = time.perf_counter()
            loc = c.variables(scopes[0]["variablesReference"])
            t2 = time.perf_counter()
            locals_.append(t2 - t1)
            tile = next((v for v in loc if v.get("indexedVariables")), None)
            if tile is not None:
                c.variables(tile["variablesReference"])
                rows.append(time.perf_counter() - t2)
            variables.append(time.perf_counter() - t0)
    finally:
        c.close()
    ms = lambda xs: f"p50 {1e3 * statistics.median(xs):.1f} ms, p95 {1e3 * pct(xs, 0.95):.1f} ms, max {1e3 * max(xs):.1f} ms"  # noqa: E731
    print(f"step (stepIn -> stopped), {len(steps)}: {ms(steps)}")
    print(f"variables (Locals), {len(locals_)}: {ms(locals_)}")
    print(f"variables (a tile's rows), {len(rows)}: {ms(rows)}")
    print(f"stackTrace + scopes + Locals + a tile's rows together, {len(variables)}: {ms(variables)}")

    # -- run to the last line vs validate
    runs: dict[str, list[float]] = {
        "debug run": [],
        "debug run, no previous pass": [],
        "debug wall": [],
        "validate wall": [],
        "validate run": [],
        "stepBack at the end (replay)": [],
    }
    for _ in range(a.repeat):
        for record in (True, False):
            run, wall, c, tid = run_to(prog, inputs, expected, line, nth, record)
            if record:  # one statement back from the end: a replay of the whole run
                t0 = time.perf_counter()
                c.request("stepBack", {"threadId": tid})
                c.wait_event("stopped", timeout=600)
                runs["stepBack at the end (replay)"].append(time.perf_counter() - t0)
            c.close()
            runs["debug run" if record else "debug run, no previous pass"].append(run)
            if record:
                runs["debug wall"].append(wall)
        w, s = validate(prog, inputs, expected)
        runs["validate wall"].append(w)
        runs["validate run"].append(s)
    for k, xs in runs.items():
        print(f"{k}: min {min(xs):.2f} s, median {statistics.median(xs):.2f} s")
    vr, vw = min(runs["validate run"]), min(runs["validate wall"])
    print(
        f"ratio debug run / validate run: {min(runs['debug run']) / vr:.2f}x (without the previous pass: {min(runs['debug run, no previous pass']) / vr:.2f}x)"
    )
    print(f"ratio debug wall / validate wall: {min(runs['debug wall']) / vw:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
