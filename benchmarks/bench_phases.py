"""Where a folder's first in-process run goes, stage by stage: issue 33's qwen3 figure taken apart.

    python benchmarks/bench_phases.py [FOLDER] [--rounds N] [--per-dump N] [--json OUT]

``bench_startup.py`` gives the qwen3 folder's whole in-process time against its golden; this says
what that time is made of, so that a change can be aimed before it is built. Each round runs the
folder (``validate_files``, one process, no cache, the first run of a fresh process: every distinct
dump parsed, checked, generated, compiled and run) under three settings, each in its own fresh
process:

* ``default``: the sanitizer and the memory model on, as ``validate`` runs;
* ``no sanitizer``: ``sanitize = false``;
* ``no checks``: the sanitizer and the memory model off (values only): what the executor and the
  front end cost without the checks.

Per setting it prints the medians over the rounds of: the whole run; the front end (``compile_text``)
and its stages (parse, static checks, memory plan, lowering, code printing, ``compile``, the
sanitizer's readings of the IR); the runs (``engine.run``) and, inside them, the middle tasks of a
planned loop that ran unwatched one by one (``task_watch.LoopWatch.run``; a watched task sweep runs
them as one and is not counted there: 0 when every such loop is swept) and the ``compile`` of the
functions whose block waited for their first call (``script_code.LazyBlock``); the rest (loading,
comparing, the report). Beside them the folder's golden in plain torch
(``bench_scale.golden_plain``, best of 200 calls) times the number of dumps, and the ratio.

``--per-dump N``: also each distinct dump's run under the default settings, as the folder's first run
ran it (the ``compile`` of its functions on their first call left out) and warm (compiled already;
best of N), to see which passes' programs cost most and what a process's first runs pay on top.

Bytecode as installed (see ``bench_startup.py``): the children load our modules from ``.pyc`` files
written by one untimed run first. The stages are timed by wrapping the engine's functions in the child process (wall clock, one
thread); nothing is changed in how they run. No asserts: this measures, it does not judge.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
QWEN3 = ROOT.parent / "shared" / "fixtures" / "qwen3_scope3_910b"
GOLDEN_REPEAT = 200
SETTINGS = {
    "default": {},
    "no sanitizer": {"sanitize": False},
    "no checks": {"sanitize": False, "memory": False},
}
# the front end's stages, in the order compile_text calls them (none calls another of them)
STAGES = (
    ("parse", "pypto_lsp.validate.engine", "parse_text"),
    ("checks", "pypto_lsp.validate.engine", "check_program"),
    ("memory plan", "pypto_lsp.validate.engine", "plan_program"),
    ("lowering", "pypto_lsp.exec.codegen", "lower_program"),
    ("code printing", "pypto_lsp.exec.codegen", "_ProgramGen.generate"),
    ("compile()", "pypto_lsp.validate.engine", "compile_script"),
    ("sanitizer's IR readings", "pypto_lsp.ir.initcheck", "uninitialised_tiles"),
    ("sanitizer's IR readings", "pypto_lsp.ir.tasks", "task_sites"),
    ("sanitizer's IR readings", "pypto_lsp.exec.task_watch", "watched_loops"),
)
TOTALS = (
    ("front end", "pypto_lsp.validate.engine", "compile_text"),
    ("runs", "pypto_lsp.validate.engine", "run"),
    ("unwatched tasks", "pypto_lsp.exec.task_watch", "LoopWatch.run"),
    ("compile() on a first call", "pypto_lsp.exec.script_code", "LazyBlock.code"),
)


def _wrap(spent: dict[str, float], label: str, module: str, name: str) -> None:
    import importlib

    owner: Any = importlib.import_module(module)
    *outer, attr = name.split(".")
    for part in outer:
        owner = getattr(owner, part)
    fn = getattr(owner, attr)

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - t0

    setattr(owner, attr, timed)


def child(folder: Path, setting: str, per_dump: int) -> dict[str, Any]:
    """One fresh process: the folder's first run under ``setting``, stage by stage (seconds)."""
    import torch

    from pypto_lsp.validate import engine
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import keyed_text, validate_files
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    spent: dict[str, float] = {}
    for label, module, name in STAGES + TOTALS:
        _wrap(spent, label, module, name)
    firsts_run: dict[str, float] = {}  # each distinct dump's run in the folder's run, its first calls' compile left out
    if per_dump:
        timed_run = engine.run

        def first_run(comp: Any, *args: Any, **kwargs: Any) -> Any:
            lazy, t0 = spent.get("compile() on a first call", 0.0), time.perf_counter()
            try:
                return timed_run(comp, *args, **kwargs)
            finally:
                took = time.perf_counter() - t0 - (spent.get("compile() on a first call", 0.0) - lazy)
                firsts_run.setdefault(Path(comp.program.filename or "").name, took)

        engine.run = first_run  # type: ignore[assignment]
    tensors = {k: v for k, v in load_bundle(folder / "tensors.pt").items() if isinstance(v, torch.Tensor)}
    expected = load_bundle(folder / "expected.pt")
    files = sorted((folder / "passes_dump").glob("*.py"))
    settings = RunSettings(timeout_s=0, **SETTINGS[setting])  # timeout 0: in this thread, as --jobs 1 with no limit
    t0 = time.perf_counter()
    report = validate_files(files, {k: v.clone() for k, v in tensors.items()}, expected, settings=settings, jobs=1, use_cache=False)
    whole = time.perf_counter() - t0
    # a copy: the warm runs below go through the same wrapped functions and must not count here
    out: dict[str, Any] = {"whole": whole, "files": len(files), "stages": dict(spent), "verdicts": [r.status for r in report.files]}
    if per_dump:
        out["first_run"] = dict(firsts_run)
        engine.run = timed_run  # type: ignore[assignment]
        kw = settings.engine_kwargs()
        firsts: dict[str, Path] = {}
        for f in files:
            firsts.setdefault(keyed_text(f.read_text(), settings.memory), f)
        runs: dict[str, float] = {}
        for f in firsts.values():
            text = f.read_text()
            best = float("inf")
            for _ in range(per_dump):
                t = time.perf_counter()
                engine.run_text(text, tensors, expected, filename=f.name, **kw)
                best = min(best, time.perf_counter() - t)
            runs[f.name] = best
        out["per_dump"] = runs
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=QWEN3, help="a case folder (passes_dump/, tensors.pt, expected.pt)")
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per setting, interleaved (default 3)")
    ap.add_argument("--per-dump", type=int, default=0, metavar="N", help="each distinct dump's warm run, best of N (default: not measured)")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        json.dump(child(args.folder, args.child, args.per_dump), sys.stdout)
        return 0
    from benchmarks.bench_scale import golden_plain, use_bytecode

    env = dict(os.environ, PYTHONWARNINGS="ignore")
    # bytecode as installed (bench_startup.py says why): a private prefix, filled by one untimed run
    use_bytecode(tempfile.mkdtemp(prefix="pypto-lsp-pyc-"), env)
    subprocess.run([sys.executable, __file__, str(args.folder), "--child", "default"], cwd=ROOT, env=env, capture_output=True, check=True)
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in SETTINGS}
    golds: list[float] = []
    for r in range(args.rounds):
        for s in SETTINGS:
            extra = ["--per-dump", str(args.per_dump)] if args.per_dump and s == "default" and r == 0 else []
            cmd = [sys.executable, __file__, str(args.folder), "--child", s, *extra]
            p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
            rows[s].append(json.loads(p.stdout))
        golds.append(golden_plain(args.folder / "tensors.pt", GOLDEN_REPEAT))
    gold = statistics.median(golds)
    n = rows["default"][0]["files"]
    load = os.getloadavg()[0]
    print(f"{args.folder.name}: {n} dumps, first in-process run; medians of {args.rounds} fresh processes per setting; load {load:.2f}")
    print(f"golden in plain torch {gold * 1e3:.2f} ms x {n} = {gold * n * 1e3:.0f} ms; ten times that: {gold * n * 1e4:.0f} ms")
    labels = [
        "whole",
        "front end",
        *dict.fromkeys(label for label, _, _ in STAGES),
        "runs",
        "unwatched tasks",
        "compile() on a first call",
        "the rest",
    ]
    print(f"{'ms':<26}" + "".join(f"{s:>15}" for s in SETTINGS))
    figures: dict[str, dict[str, float]] = {}
    for s, results in rows.items():
        fig: dict[str, list[float]] = {}
        for res in results:
            st = res["stages"]
            row = {"whole": res["whole"], **st, "the rest": res["whole"] - st.get("front end", 0.0) - st.get("runs", 0.0)}
            for label in labels:
                fig.setdefault(label, []).append(row.get(label, 0.0))
        figures[s] = {label: statistics.median(v) for label, v in fig.items()}
    for label in labels:
        indent = "  " if label not in ("whole", "front end", "runs", "the rest") else ""
        indent = "    " if label in ("unwatched tasks", "compile() on a first call") else indent
        print(f"{indent + label:<26}" + "".join(f"{figures[s][label] * 1e3:>15.0f}" for s in SETTINGS))
    print(f"{'x golden x ' + str(n):<26}" + "".join(f"{figures[s]['whole'] / (gold * n):>14.1f}x" for s in SETTINGS))
    verdicts = {s: rows[s][0]["verdicts"] for s in SETTINGS}
    if len({tuple(v) for v in verdicts.values()}) > 1:
        print("note: the settings reached different verdicts:", {s: sorted(set(v)) for s, v in verdicts.items()})
    per_dump = rows["default"][0].get("per_dump")
    if per_dump:
        first = rows["default"][0].get("first_run", {})
        print(
            f"\neach distinct dump's run (default settings): in the folder's first run (its first calls' compile() left out), and warm (best of {args.per_dump})"
        )
        print(f"  {'':<48}{'first':>8}   {'warm':>8}")
        for name, sec in per_dump.items():
            print(f"  {name:<48}{first.get(name, float('nan')) * 1e3:8.1f}   {sec * 1e3:8.1f} ms")
        print(f"  {'sum':<48}{sum(first.get(k, 0.0) for k in per_dump) * 1e3:8.1f}   {sum(per_dump.values()) * 1e3:8.1f} ms")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"golden_s": gold, "files": n, "settings": figures, "per_dump": per_dump, "first_run": rows["default"][0].get("first_run")},
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
