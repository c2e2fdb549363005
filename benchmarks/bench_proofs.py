"""What the memory model's proofs kept across runs save (``exec.memory.Session.frame``).

    python benchmarks/bench_proofs.py [FOLDER] [--rounds N]

A same-path kernel one call of which met no hazard is proven for the rest of the process, filed
under its code and placements. Two figures, each taken both ways in this one process:

* the calls followed in the arenas (``Frame``s made) in the folder's first run, with the proofs kept
  across the files against forgotten before each file (each run proving its own kernels again, as
  before the proofs outlived a run). A count, no clock.
* the folder's warm runs (every dump compiled already, as a language server re-checks on save), with
  proofs forgotten before each file against kept: ``--rounds`` runs each way, interleaved, median
  and range of the CPU milliseconds.

One process and interleaved runs because the effect is a few per cent and fresh processes on a
shared machine differ by more than that. No asserts: this measures, it does not judge.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
QWEN3 = ROOT.parent / "shared" / "fixtures" / "qwen3_scope3_910b"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", type=Path, default=QWEN3, help="a folder with passes_dump/, tensors.pt, expected.pt")
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    if not (args.folder / "passes_dump").is_dir():
        print(f"no passes_dump/ in {args.folder}")
        return 0

    import torch

    import pypto_lsp.validate.folders as folders
    from pypto_lsp.exec import memory
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    inputs = {k: v for k, v in load_bundle(args.folder / "tensors.pt").items() if isinstance(v, torch.Tensor)}
    expected = load_bundle(args.folder / "expected.pt")
    files = sorted((args.folder / "passes_dump").glob("*.py"))
    forget = [False]
    made = [0]
    run_text, frame_init = folders.run_text, memory.Frame.__init__

    def each_file(*a: Any, **k: Any) -> Any:
        if forget[0]:
            memory.forget_proofs()
        return run_text(*a, **k)

    def counted(self: Any, *a: Any) -> None:
        made[0] += 1
        frame_init(self, *a)

    folders.run_text = each_file  # type: ignore[assignment]
    memory.Frame.__init__ = counted  # type: ignore[method-assign]

    def folder_run(forgetting: bool) -> tuple[float, int]:
        forget[0], made[0] = forgetting, 0
        t = time.process_time()
        folders.validate_files(files, inputs, expected, settings=RunSettings(timeout_s=0), jobs=1, use_cache=False)
        return (time.process_time() - t) * 1e3, made[0]

    try:
        _ms, first_without = folder_run(True)  # the first run of the process: compiles every dump
        memory.forget_proofs()
        _ms, first_with = folder_run(False)
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.rounds):
            for forgetting in (True, False):
                times[forgetting].append(folder_run(forgetting)[0])
    finally:
        folders.run_text = run_text  # type: ignore[assignment]
        memory.Frame.__init__ = frame_init  # type: ignore[method-assign]

    print(f"{args.folder.name}: {len(files)} dumps, one process, --jobs 1, no result cache")
    print(
        f"calls followed in the arenas, a first run: {first_without} with each run proving its own kernels, {first_with} with proofs kept"
    )
    for forgetting, label in ((True, "proofs forgotten before each file"), (False, "proofs kept")):
        v = times[forgetting]
        print(f"warm folder run, {label:34s} median {statistics.median(v):7.1f} ms CPU  ({min(v):.1f}-{max(v):.1f}, {len(v)} runs)")
    ratio = statistics.median(times[False]) / statistics.median(times[True])
    print(f"kept / forgotten: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
