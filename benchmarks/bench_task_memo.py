"""What a store of kernel calls already run would save a folder's first run: the upper bound, measured.

    python benchmarks/bench_task_memo.py [FOLDER] [--setting default|no-sanitizer|no-checks]

Most passes leave most kernels as they were. A kernel is a function of its code and the bytes it is
given, so an orchestrator task that calls a kernel (or a Group of them) with the code and the
argument bytes of a call an earlier dump of the folder made could take that call's effects instead
of running. This runs the folder once in-process (``validate_files``, ``--jobs 1``, no cache, a
fresh process's first run), times every task call the orchestrator makes, and says, per distinct
dump, how many of them and how much of their time an earlier call matched under three keys:

* ``same code``: the function's generated code (its block, the script's constants spelt out, its
  memory plans spelt out) and the same argument bytes, shapes, strides and offsets: what a store
  that trusts nothing else could serve;
* ``plans aside``: the same with the memory plans left out of the code: what it could serve if a
  kernel whose plan the memory model has proven (``exec.memory``) were keyed by its values only;
* and how much of that falls in dumps whose tasks the runtime orders by their directions (the
  sanitizer keeps every such task's accesses: a store would have to replay them too).

The key and the digest are computed outside the timed calls. No asserts: this measures, it does
not judge. docs/speed.md, twenty-first pass, has the figures and what was tried.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
QWEN3 = ROOT.parent / "shared" / "fixtures" / "qwen3_scope3_910b"
SETTINGS = {"default": {}, "no-sanitizer": {"sanitize": False}, "no-checks": {"sanitize": False, "memory": False}}
_CONSTANT = re.compile(r"(?<![\w])_pl_k\d+(?!\w)")


def code_texts(gen: Any, plans: bool) -> dict[str, str]:
    """Python function name -> its block with every ``_pl_kN`` constant spelt out (memory plans by
    their contents, or as ``(plan)`` when ``plans`` is False)."""
    lines = gen.executable.splitlines()
    starts = list(gen.blocks) + [len(lines) + 1]
    defs: dict[str, str] = {}
    blocks: dict[str, str] = {}
    for a, b in zip(starts, starts[1:], strict=False):
        text = "\n".join(lines[a - 1 : b - 1])
        if text.startswith("def "):
            blocks[text[4 : text.index("(")]] = text
        else:
            for line in text.splitlines():
                m = re.match(r"(_pl_k\d+) = (.*)", line)
                if m:
                    defs[m.group(1)] = m.group(2)
    for name, spec in gen.built.items():
        defs[name] = repr(spec) if plans else "plan"

    def spelt(text: str, depth: int = 0) -> str:
        if depth > 8:
            return text
        return _CONSTANT.sub(lambda m: "(" + spelt(defs.get(m.group(0), m.group(0)), depth + 1) + ")", text)

    return {name: spelt(text) for name, text in blocks.items()}


def digest(args: tuple[Any, ...]) -> str:
    import torch

    h = hashlib.blake2b(digest_size=16)
    for a in args:
        if isinstance(a, torch.Tensor):
            h.update(repr((a.dtype, tuple(a.shape), a.stride(), a.storage_offset())).encode())
            c = a.contiguous()
            h.update(ctypes.string_at(c.data_ptr(), c.nbytes))
        else:
            h.update(repr((type(a).__name__, a)).encode())
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=QWEN3)
    ap.add_argument("--setting", choices=sorted(SETTINGS), default="default")
    args = ap.parse_args()

    import torch

    from pypto_lsp.exec import runtime
    from pypto_lsp.exec.observe import Observer
    from pypto_lsp.validate import engine
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import validate_files
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    seen: dict[str, set[tuple[str, str]]] = {"same code": set(), "plans aside": set()}
    current = [""]  # the dump running (set below)
    rows: list[dict[str, Any]] = []

    class Watch(Observer):
        def __init__(self, program: Any, ordered: bool) -> None:
            self.program = program
            self.ordered = ordered  # the runtime orders its tasks by their directions

        def started(self, ns: dict[str, Any], run: Any) -> None:
            gen = run.gen
            texts = {p: code_texts(gen, p) for p in (True, False)}
            kinds = {f.name: f.kind for f in self.program.functions}
            row: dict[str, Any] = {"dump": Path(current[0]).name, "calls": 0, "ms": 0.0, "ordered": self.ordered}
            for k in seen:
                row[k] = [0, 0.0]
            rows.append(row)
            depth = [0]

            def code_of(fns: tuple[Any, ...], plans: bool) -> str:
                return "|".join(texts[plans].get(getattr(f, "__name__", ""), "?") if f is not None else "" for f in fns)

            def timed(fns: tuple[Any, ...], call_args: tuple[Any, ...], invoke: Any) -> Any:
                if depth[0]:
                    return invoke()
                bytes_key = digest(call_args)
                keys = {"same code": (code_of(fns, True), bytes_key), "plans aside": (code_of(fns, False), bytes_key)}
                depth[0] += 1
                t = time.perf_counter()
                try:
                    return invoke()
                finally:
                    dt = time.perf_counter() - t
                    depth[0] -= 1
                    row["calls"] += 1
                    row["ms"] += dt * 1e3
                    for k, key in keys.items():
                        if key in seen[k]:
                            row[k][0] += 1
                            row[k][1] += dt * 1e3
                        seen[k].add(key)

            for ir, py in gen.functions.items():
                fn = ns.get(py)
                if kinds.get(ir) in ("InCore", "AIC", "AIV") and callable(fn):
                    ns[py] = (lambda f: lambda *a: timed((f,), a, lambda: f(*a)))(fn)
                    ns[py].__name__ = py
            rt = ns.get("_pl_rt")
            if rt is runtime:
                from types import SimpleNamespace

                proxy = SimpleNamespace(**vars(rt))

                def run_group(name: str, aic: Any, aiv: Any, a: tuple[Any, ...], **kw: Any) -> Any:
                    return timed((aic, aiv), a, lambda: runtime.run_group(name, aic, aiv, a, **kw))

                proxy.run_group = run_group
                ns["_pl_rt"] = proxy

    original = engine.run

    def run(comp: Any, *a: Any, observers: Any = (), **kw: Any) -> Any:
        w = Watch(comp.program, any(s.directions is not None for s in comp.task_sites or ()))
        return original(comp, *a, observers=(*observers, w), **kw)

    engine.run = run  # type: ignore[assignment]
    from pypto_lsp.validate import folders

    run_text = folders.run_text

    def named(text: str, *a: Any, filename: str = "", **kw: Any) -> Any:
        current[0] = filename
        return run_text(text, *a, filename=filename, **kw)

    folders.run_text = named  # type: ignore[assignment]
    folder: Path = args.folder
    tensors = load_bundle(folder / "tensors.pt")
    expected = load_bundle(folder / "expected.pt")
    files = sorted((folder / "passes_dump").glob("*.py"))
    inputs = {k: v.clone() for k, v in tensors.items() if isinstance(v, torch.Tensor)}
    t0 = time.perf_counter()
    report = validate_files(files, inputs, expected, settings=RunSettings(**SETTINGS[args.setting]), jobs=1, use_cache=False)
    whole = time.perf_counter() - t0
    print(
        f"{folder.name}: {len(files)} dumps, {len(rows)} runs, setting {args.setting}; the whole first run {whole * 1e3:.0f} ms (keys and digests included)"
    )
    print(f"{'dump':<44}{'task calls':>11}{'ms':>8}{'same code':>18}{'plans aside':>18}")
    tot = {"calls": 0, "ms": 0.0, "same code": [0, 0.0], "plans aside": [0, 0.0], "ordered": [0, 0.0]}
    for r in rows:
        mark = " (ordered)" if r["ordered"] else ""
        print(
            f"{(r['dump'][:34] + mark):<44}{r['calls']:>11}{r['ms']:>8.1f}"
            f"{r['same code'][0]:>8} {r['same code'][1]:>6.1f} ms{r['plans aside'][0]:>8} {r['plans aside'][1]:>6.1f} ms"
        )
        tot["calls"] += r["calls"]
        tot["ms"] += r["ms"]
        for k in ("same code", "plans aside"):
            tot[k][0] += r[k][0]
            tot[k][1] += r[k][1]
        if r["ordered"]:
            tot["ordered"][0] += r["plans aside"][0]
            tot["ordered"][1] += r["plans aside"][1]
    print(
        f"{'all':<44}{tot['calls']:>11}{tot['ms']:>8.1f}{tot['same code'][0]:>8} {tot['same code'][1]:>6.1f} ms"
        f"{tot['plans aside'][0]:>8} {tot['plans aside'][1]:>6.1f} ms"
    )
    print(f"of 'plans aside', in runs whose tasks are ordered by their directions: {tot['ordered'][0]} calls, {tot['ordered'][1]:.1f} ms")
    statuses = sorted({f.status for f in report.files})
    print(f"statuses: {statuses}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
