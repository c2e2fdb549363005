"""Cost against size: the qwen3 scope3 block at hidden 512 (the base fixture), 1024, 2048 and 4096.

    python benchmarks/bench_scale.py [--cases SUBSTR] [--repeat N] [--json OUT] [--exact] [--memory on|off|both]
                                     [--sanitize on|off]

Per size:

* golden: the program's math in eager torch (the formula of ``scale/make_goldens.py``), one
  intra-op thread like the engine, best of ``--repeat`` in this process (warm: its FP32 weight
  copies reuse the heap pages of the call before);
* golden, plain torch: the same math in a fresh process with torch's defaults (its threads, glibc's
  allocator), best of ``--repeat`` calls: the figure issue 16's table gives (1.3 / 12.7 / 44.6 /
  182 ms there). Read in one process before the case's CLI runs and in another after each mode's,
  the best of those so far on each line (all of them in the JSON): a single child can land in a
  slow minute of the host (one read 725 ms against 142-144 ms a minute later). From hidden 2048 on
  every call pays the page faults of its FP32 weight copies (glibc maps blocks that big afresh each
  time); the engine keeps freed heap (``mallopt``), which is what makes the first column's calls
  after the first cheaper;
* folder cold: ``pypto-lsp validate passes_dump --no-cache --no-localize`` in a fresh process
  (``summary.seconds``, 2 worker processes by default);
* last dump cold: the same for ``49_after_...`` alone (``summary.seconds``: parse, checks,
  codegen, run, compare) and the peak resident memory of that process (``peak MB``: inputs, goldens
  and the run; the largest of the runs), and in this process the run of that dump (``run_text``:
  wall and CPU);
* kernel calls of that run and its execute time per call (µs);
* with ``--memory both`` (the default), folder and last dump cold again with ``--memory off`` (values
  only) and their ratio: the memory-model cost.
* ``--sanitize off``: every run without the sanitizer (default on); two invocations, ``--memory on
  --sanitize on`` and ``--memory on --sanitize off``, give the sanitizer's cost (issue 34: <= 1.3x).

Every CLI figure also gives the CPU seconds of the child processes (user + system): on the
shared 2-core machine the wall clock follows the load, the CPU time much less.

Bytecode: the CLI children load this package's modules from ``.pyc`` as an installed package does
(``pip`` compiles them at install; torch's are compiled already). Where ``PYTHONDONTWRITEBYTECODE``
is set (this project's shared machine sets it) a child would compile the modules it imports while
validating (the executor's, the sanitizer's) from source inside ``summary.seconds``: ~40 ms of the
hidden-4096 last dump that no installed user pays. By default (``--bytecode installed``) the children
get a private ``PYTHONPYCACHEPREFIX`` (a temporary folder, never the repository) filled by an untimed
warm-up run, as ``bench_startup.py`` does; ``--bytecode none`` measures them as the environment says.

The scale goldens are regenerated into a temporary folder by the fixtures' own
``make_goldens.py`` (never into the repository or the fixtures). The machine is shared and
noisy: every line also gives the CPU seconds and the ratio to the golden measured in the same
run. No asserts: this measures, it does not judge.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures"
SCALE = FIXTURES / "scale"
CASES = [
    ("qwen3_scope3_910b", FIXTURES / "qwen3_scope3_910b", 512),
    ("qwen3_scope3_910b_h1024", SCALE / "qwen3_scope3_910b_h1024", 1024),
    ("qwen3_scope3_910b_h2048", SCALE / "qwen3_scope3_910b_h2048", 2048),
    ("qwen3_scope3_910b_h4096", SCALE / "qwen3_scope3_910b_h4096", 4096),
]


def golden_math(t: dict[str, Any]) -> Any:
    """The program's math as ``make_goldens.py`` computes it."""
    import torch

    x = {k: v.float() for k, v in t.items()}
    resid1 = x["attn_out"] @ x["wo"] + x["hidden_states"]
    normed = (resid1 * torch.rsqrt(resid1.pow(2).mean(-1, keepdim=True) + 1e-6) * x["post_rms_weight"]).bfloat16().float()
    gate, up = normed @ x["w_gate"], normed @ x["w_up"]
    mlp = (gate * torch.sigmoid(gate) * up).bfloat16().float()
    return (mlp @ x["w_down"] + resid1).bfloat16()


def golden_plain(inputs: Path, repeat: int) -> float:
    """Best wall seconds of ``golden_math`` in a fresh process with torch's defaults (``--golden-plain``)."""
    p = subprocess.run(
        [sys.executable, __file__, "--golden-plain", str(inputs), "--repeat", str(repeat)], capture_output=True, text=True, check=True
    )
    return float(p.stdout.split()[-1])


def _golden_plain(inputs: str, repeat: int) -> int:
    import torch

    t = torch.load(inputs, map_location="cpu", weights_only=True)
    best = float("inf")
    for _ in range(max(1, repeat)):
        w0 = time.perf_counter()
        golden_math(t)
        best = min(best, time.perf_counter() - w0)
    print(f"{best:.6f}")
    return 0


def best_of(fn: Any, repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds of ``fn()`` over ``repeat`` calls."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


# Runs a command as its own child and prints that child's peak resident memory (KB) last on
# stderr. A process started straight from this one would not do: Linux carries the peak of the
# memory a process had before its exec into its own (``getrusage``/``wait4`` report the larger), and
# this process holds the goldens and the golden's FP32 weights by then (1.1 GB at hidden 4096
# against the CLI's own 0.71 GB). The child forked here starts from this small launcher.
_LAUNCH = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.argv[1], sys.argv[1:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "sys.stderr.write(f'\\npypto-lsp-bench-peak-kb {usage.ru_maxrss}\\n')\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


# the environment of the CLI children (see use_bytecode)
CHILD_ENV = dict(os.environ)


def use_bytecode(prefix: str, env: dict[str, str]) -> None:
    """Children started with ``env`` load bytecode from ``prefix`` (written there on first import), as installed."""
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = prefix


def cli_summary_seconds(path: Path, inputs: Path, expected: Path, extra: list[str]) -> tuple[float, float, float]:
    """``summary.seconds`` of one cold ``validate``, the CPU seconds of its processes and the peak
    resident memory (MB) of the CLI's own process (its pool workers, if any, not counted)."""
    cmd = [sys.executable, "-c", _LAUNCH, sys.executable, "-m", "pypto_lsp", "validate", str(path), "--inputs", str(inputs)]
    cmd += ["--expected", str(expected), "--no-cache", "--no-localize", "--json", *extra]
    c0 = os.times()
    p = subprocess.run(cmd, cwd=ROOT, env=CHILD_ENV, capture_output=True, text=True)
    c1 = os.times()
    out, err = p.stdout, p.stderr
    # the launcher's own start-up is in these CPU seconds too (~0.02 s): small beside a validate
    cpu = (c1.children_user + c1.children_system) - (c0.children_user + c0.children_system)
    peak = [ln for ln in err.splitlines() if ln.startswith("pypto-lsp-bench-peak-kb ")]
    try:
        rep = json.loads(out[out.index("{") : out.rindex("}") + 1])
    except ValueError:
        raise RuntimeError(f"validate printed no JSON: {err[-2000:]}") from None
    bad = [f for f in rep["files"] if f["status"] != "pass"]
    if bad:
        print(f"  note: {len(bad)} file(s) did not pass, e.g. {Path(bad[0]['file']).name}: {bad[0]['status']}")
    peak_mb = int(peak[-1].split()[1]) / 1024 if peak else float("nan")  # Linux: KB
    return float(rep["summary"]["seconds"]), cpu, peak_mb


def best_cli(path: Path, inputs: Path, expected: Path, extra: list[str], n: int) -> tuple[float, float, float]:
    runs = [cli_summary_seconds(path, inputs, expected, extra) for _ in range(max(1, n))]
    return min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)


def kernel_calls(text: str, inputs: dict[str, Any], expected: dict[str, Any], memory: bool = True, exact: bool = False) -> int:
    """How many kernel calls one run of ``text`` makes (kernels wrapped with a counter)."""
    from pypto_lsp.exec import runtime
    from pypto_lsp.validate import engine

    count = [0]
    real = runtime.kernel

    def counting(name: str) -> Any:
        k = real(name)

        def wrapped(*a: Any, **kw: Any) -> Any:
            count[0] += 1
            return k(*a, **kw)

        return wrapped

    engine._COMPILED.clear()
    runtime.kernel = counting  # type: ignore[assignment]
    try:
        engine.run_text(text, inputs, expected, rtol=5e-2, atol=5e-2, memory=memory, exact=exact)
    finally:
        runtime.kernel = real  # type: ignore[assignment]
        engine._COMPILED.clear()
    return count[0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=None, help="only cases whose name contains this")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--exact", action="store_true", help="pass --exact (every loop tile by tile)")
    ap.add_argument("--memory", choices=("on", "off", "both"), default="both", help="the memory model (both: the two, and their ratio)")
    ap.add_argument("--sanitize", choices=("on", "off"), default="on", help="the device's sanitizer in every run")
    ap.add_argument("--bytecode", choices=("installed", "none"), default="installed", help="see the module docstring")
    ap.add_argument("--golden-plain", default=None, metavar="BUNDLE", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.golden_plain:
        return _golden_plain(args.golden_plain, args.repeat)
    if not FIXTURES.is_dir():
        print(f"shared fixtures not found at {FIXTURES}")
        return 0
    from pypto_lsp.validate import engine
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    extra = ["--exact"] if args.exact else []
    extra += ["--sanitize", args.sanitize]
    sanitize = args.sanitize == "on"
    results: dict[str, Any] = {}
    modes = ["on", "off"] if args.memory == "both" else [args.memory]
    print(
        f"load average at start: {os.getloadavg()[0]:.1f}; memory model: {', '.join(modes)}; {'exact' if args.exact else 'batched'}; "
        f"sanitizer {args.sanitize}; bytecode: {args.bytecode}"
    )
    print(
        f"{'case':<26} {'hidden':>6} {'memory':>6} {'golden':>9} {'plain':>9} {'folder cold':>11} {'(cpu)':>8} {'last cold':>9}"
        f" {'(cpu)':>8} {'peak MB':>7} {'last run':>9} {'(cpu)':>8} {'x golden':>8} {'x plain':>8} {'calls':>7} {'µs/call':>8} {'load':>5}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        warmed = args.bytecode == "none"
        if not warmed:
            use_bytecode(str(Path(tmp) / "pyc"), CHILD_ENV)
        for name, case, hidden in CASES:
            if args.cases and args.cases not in name:
                continue
            if not case.is_dir():
                print(f"{name}: skipped (no {case})")
                continue
            if (case / "tensors.pt").is_file():
                ins, exp = case / "tensors.pt", case / "expected.pt"
            else:
                out_dir = Path(tmp) / name
                subprocess.run([sys.executable, str(SCALE / "make_goldens.py"), name, str(out_dir)], check=True, capture_output=True)
                ins, exp = out_dir / "tensors.pt", out_dir / "expected.pt"
            inputs, expected = load_bundle(ins), load_bundle(exp)
            gold_wall, _ = best_of(lambda inputs=inputs: golden_math(inputs), args.repeat)
            # read again after each mode's CLI runs, the best taken (see the module docstring)
            plain_readings = [golden_plain(ins, args.repeat)]
            files = sorted((case / "passes_dump").glob("*.py"))
            last = files[-1]
            text = last.read_text()
            for mode in modes:
                flags = [*extra, "--memory", mode]
                memory = mode == "on"
                if not warmed:  # untimed: compiles every module a validate loads into the prefix
                    cli_summary_seconds(last, ins, exp, flags)
                    warmed = True
                folder, folder_cpu, _ = best_cli(case / "passes_dump", ins, exp, flags, args.repeat - 1)
                last_cold, last_cpu, last_mb = best_cli(last, ins, exp, flags, args.repeat)
                plain_readings.append(golden_plain(ins, args.repeat))
                gold_plain = min(plain_readings)

                def one_run(
                    text: str = text, inputs: dict[str, Any] = inputs, expected: dict[str, Any] = expected, memory: bool = memory
                ) -> None:
                    engine._COMPILED.clear()  # cold: parse, check and codegen included
                    r = engine.run_text(text, inputs, expected, rtol=5e-2, atol=5e-2, memory=memory, exact=args.exact, sanitize=sanitize)
                    assert r.status == "pass", r.error

                run_wall, run_cpu = best_of(one_run, args.repeat)
                engine.compile_text(text, memory=memory, exact=args.exact, sanitize=sanitize)  # warm: the execute part alone
                warm_wall, _ = best_of(
                    lambda t=text, i=inputs, e=expected, m=memory: engine.run_text(
                        t, i, e, rtol=5e-2, atol=5e-2, memory=m, exact=args.exact, sanitize=sanitize
                    ),
                    args.repeat,
                )
                calls = kernel_calls(text, inputs, expected, memory, args.exact)
                per_call = warm_wall / calls * 1e6 if calls else 0.0
                results[f"{name}/memory-{mode}"] = {
                    "hidden": hidden,
                    "memory": memory,
                    "exact": args.exact,
                    "golden_s": gold_wall,
                    "golden_plain_torch_s": gold_plain,
                    "golden_plain_torch_readings_s": list(plain_readings),
                    "folder_cold_s": folder,
                    "folder_cold_cpu_s": folder_cpu,
                    "last_cold_s": last_cold,
                    "last_cold_cpu_s": last_cpu,
                    "last_cold_peak_mb": last_mb,
                    "last_run_s": run_wall,
                    "last_run_cpu_s": run_cpu,
                    "last_warm_run_s": warm_wall,
                    "kernel_calls": calls,
                    "us_per_call": per_call,
                    "load": os.getloadavg()[0],
                }
                print(
                    f"{name:<26} {hidden:>6} {mode:>6} {gold_wall * 1e3:6.1f} ms {gold_plain * 1e3:6.1f} ms {folder:9.2f} s"
                    f" {folder_cpu:6.2f} s {last_cold:7.3f} s {last_cpu:6.2f} s {last_mb:7.0f} {run_wall:7.3f} s {run_cpu:6.3f} s"
                    f" {last_cold / gold_wall:7.1f}x {last_cold / gold_plain:7.1f}x {calls:>7} {per_call:8.1f}"
                    f" {os.getloadavg()[0]:5.1f}",
                    flush=True,
                )
            if len(modes) == 2:
                on, off = results[f"{name}/memory-on"], results[f"{name}/memory-off"]
                print(
                    f"{'':<26} memory on / off: folder {on['folder_cold_s'] / off['folder_cold_s']:.2f}x"
                    f" (cpu {on['folder_cold_cpu_s'] / off['folder_cold_cpu_s']:.2f}x), last dump {on['last_cold_s'] / off['last_cold_s']:.2f}x"
                    f" (cpu {on['last_cold_cpu_s'] / off['last_cold_cpu_s']:.2f}x)"
                )
            del inputs, expected
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
