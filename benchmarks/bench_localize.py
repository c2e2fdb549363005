"""Time of localising a divergence: both passes re-run traced, values paired and compared.

    python benchmarks/bench_localize.py

For the shipped broken example and, when the shared fixtures are there, the hand-broken
qwen3 copy (34 -> 35, the largest programs): best of 3, with the untraced run of the
failing pass for comparison. No asserts.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures"


def main() -> int:
    import torch

    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    torch.set_num_threads(1)
    cases = [
        (
            "examples/broken_elementwise 09 -> 11",
            ROOT / "examples" / "broken_elementwise" / "passes_dump",
            "09_",
            "11_",
            ROOT / "examples" / "elementwise" / "golden" / "inputs.pt",
            ROOT / "examples" / "elementwise" / "golden" / "expected.pt",
        ),
        (
            "broken/qwen3_910b_wrong_slice_offset 34 -> 35",
            FIXTURES / "broken" / "qwen3_910b_wrong_slice_offset" / "passes_dump",
            "34_",
            "35_",
            FIXTURES / "qwen3_scope3_910b" / "tensors.pt",
            FIXTURES / "qwen3_scope3_910b" / "expected.pt",
        ),
    ]
    for label, dumps, a, b, ins_path, exp_path in cases:
        if not dumps.is_dir():
            print(f"{label}: skipped (no {dumps})")
            continue
        prev = next(dumps.glob(a + "*.py")).read_text()
        cur = next(dumps.glob(b + "*.py")).read_text()
        print(_one(label, prev, cur, load_bundle(ins_path), load_bundle(exp_path)))
    return 0


def _one(label: str, prev: str, cur: str, ins: dict, exp: dict) -> str:
    from pypto_lsp.validate.engine import run_text
    from pypto_lsp.validate.localize import first_differing_value

    run_text(cur, ins, exp)  # compile + warm
    plain = min(_timed(lambda: run_text(cur, ins, exp)) for _ in range(3))
    found = [first_differing_value(prev, cur, ins, rtol=0.05, atol=0.05)]
    best = min(_timed(lambda: found.append(first_differing_value(prev, cur, ins, rtol=0.05, atol=0.05))) for _ in range(3))
    f = found[-1]
    where = f"line {f.line} '{f.name}' ({f.compared} values compared)" if f else "nothing found"
    return f"{label:<48} localise {best * 1e3:7.1f} ms   one untraced run {plain * 1e3:6.1f} ms   ({best / plain:.1f}x)   -> {where}"


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(main())
