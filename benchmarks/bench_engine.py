"""Engine figures: per stage for every shared fixture case, folder validation cold/warm, one-line edits.

    python benchmarks/bench_engine.py [--cases SUBSTR] [--json OUT] [--repeat N]

Prints a table; every timing also as a ratio to an eager-torch calibration
workload measured in the same run (the machine is noisy; ratios travel).
No asserts: this measures, it does not judge.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures"


def eager_calibration(repeat: int = 20) -> float:
    """Median seconds of a qwen3-decode-like step in eager torch (the 'golden' yardstick)."""
    import torch

    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 512, generator=g)
    w = torch.randn(512, 512, generator=g).to(torch.bfloat16)
    wg = torch.randn(512, 1024, generator=g).to(torch.bfloat16)
    wd = torch.randn(1024, 512, generator=g).to(torch.bfloat16)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        h = x + (x.to(torch.bfloat16).float() @ w.float())
        r = h * torch.rsqrt((h * h).mean(-1, keepdim=True) + 1e-6)
        a = r.to(torch.bfloat16).float() @ wg.float()
        m = torch.nn.functional.silu(a) * a
        _ = (h + m.to(torch.bfloat16).float() @ wd.float()).to(torch.bfloat16)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def stage_times(path: Path, inputs, expected, rtol: float, atol: float, entry: str | None) -> dict[str, float]:
    from pypto_lsp.exec import codegen
    from pypto_lsp.exec.runtime import SAFE_BUILTINS
    from pypto_lsp.ir.check import check_program
    from pypto_lsp.ir.parser import parse_text
    from pypto_lsp.validate.engine import compare, resolve_args

    text = path.read_text()
    t0 = time.perf_counter()
    res = parse_text(text, str(path))
    if res.program is None:
        return {}
    diags = check_program(res.program, entry=entry)
    t1 = time.perf_counter()
    if any(d.severity == "error" for d in diags) or any(d.severity == "error" for d in res.diagnostics):
        return {"parse_check": t1 - t0}
    gen = codegen.generate(res.program, entry=entry, filename="<bench>")
    code = compile(gen.source, gen.filename, "exec")
    t2 = time.perf_counter()
    run = {k: v.clone() for k, v in inputs.items()}
    args = resolve_args(res.program, gen.entry, run)
    ns = {"__builtins__": SAFE_BUILTINS}
    exec(code, ns)
    time.perf_counter()
    try:
        ns[gen.functions[gen.entry]](*args)
    except Exception:
        pass
    t4 = time.perf_counter()
    for k, e in expected.items():
        if k in run and tuple(run[k].shape) == tuple(e.shape):
            compare(run[k], e, rtol, atol)
    t5 = time.perf_counter()
    return {"parse_check": t1 - t0, "codegen": t2 - t1, "execute": t4 - t2, "compare": t5 - t4}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=None, help="only cases whose name contains this")
    ap.add_argument("--json", default=None, help="write results here")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not (FIXTURES / "verdicts.json").is_file():
        print(f"shared fixtures not found at {FIXTURES}")
        return 0
    import torch

    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import ResultCache, validate_files
    from pypto_lsp.validate.golden import load_bundle

    torch.set_num_threads(1)
    verdicts = json.loads((FIXTURES / "verdicts.json").read_text())
    eager = eager_calibration()
    out: dict = {"eager_seconds": eager, "cases": {}}
    print(f"eager calibration step: {eager * 1e3:.2f} ms (ratios below are x this)")
    print(f"{'case':<42} {'files':>5} {'parse+check':>12} {'codegen':>9} {'execute':>9} {'compare':>9} {'folder cold':>12} {'warm':>8}")
    for case, spec in verdicts.items():
        if args.cases and args.cases not in case:
            continue
        folder = FIXTURES / spec["dir"] / "passes_dump"
        files = sorted(folder.glob("*.py"))
        inputs = load_bundle(FIXTURES / spec["inputs"])
        expected = load_bundle(FIXTURES / spec["expected"])
        stages: dict[str, list[float]] = {"parse_check": [], "codegen": [], "execute": [], "compare": []}
        for f in files:
            best: dict[str, float] = {}
            for _ in range(args.repeat):
                st = stage_times(f, inputs, expected, spec["rtol"], spec["atol"], spec.get("entry"))
                for k, v in st.items():
                    best[k] = min(best.get(k, v), v)
            for k, v in best.items():
                stages[k].append(v)
        bundle = (str(FIXTURES / spec["inputs"]), str(FIXTURES / spec["expected"]))
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["PYPTO_LSP_CACHE_DIR"] = tmp
            from pypto_lsp.validate import engine

            engine._COMPILED.clear()

            run = functools.partial(
                validate_files,
                files,
                inputs,
                expected,
                settings=RunSettings(spec["rtol"], spec["atol"], spec.get("entry"), timeout_s=0),
                bundle_paths=bundle,
            )
            cold = run(use_cache=False, cache=ResultCache(enabled=False)).seconds
            run(use_cache=True, cache=ResultCache(Path(tmp)))  # fills the cache
            warm = run(use_cache=True, cache=ResultCache(Path(tmp))).seconds
        med = {k: (statistics.median(v) if v else 0.0) for k, v in stages.items()}
        mx = {k: (max(v) if v else 0.0) for k, v in stages.items()}
        out["cases"][case] = {"files": len(files), "median": med, "max": mx, "folder_cold_s": cold, "folder_warm_s": warm}

        print(
            f"{case:<42} {len(files):>5} {med['parse_check'] * 1e3:9.1f} ms {med['codegen'] * 1e3:6.1f} ms {med['execute'] * 1e3:6.1f} ms {med['compare'] * 1e3:6.2f} ms {cold:9.3f} s {warm:6.3f} s"
        )
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {out['peak_rss_mb']:.0f} MB")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
