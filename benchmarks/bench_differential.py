"""Cost of differential mode (no goldens): the reference, then a folder against it.

    python benchmarks/bench_differential.py

For examples/elementwise and, when the shared fixtures are there, qwen3_scope3_910b (50 dumps):
synthesizing the inputs and running 00_frontend once (cold), loading that reference from the
cache (warm), and validating the whole folder against it versus against the goldens (no result
cache, one process). Best of 3. Prints figures, no asserts.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures"


def _best(fn, n: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> int:
    os.environ["PYPTO_LSP_CACHE_DIR"] = tempfile.mkdtemp(prefix="pypto-lsp-bench-diff-")
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.differential import reference
    from pypto_lsp.validate.folders import ResultCache, validate_files
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()
    cases = [
        ("examples/elementwise", ROOT / "examples" / "elementwise" / "passes_dump", None, ROOT / "examples" / "elementwise" / "golden"),
        ("qwen3_scope3_910b", FIXTURES / "qwen3_scope3_910b" / "passes_dump", "scope3", FIXTURES / "qwen3_scope3_910b"),
    ]
    for label, dumps, entry, gold in cases:
        if not dumps.is_dir():
            print(f"{label}: skipped (no {dumps})")
            continue
        files = sorted(dumps.glob("*.py"))
        cold, ref = _best(lambda files=files, entry=entry: reference(files, entry=entry, use_cache=False))
        reference(files, entry=entry)  # fill the cache
        warm, _ = _best(lambda files=files, entry=entry: reference(files, entry=entry))

        def folder(ins, exp, files=files, entry=entry):
            return validate_files(
                files,
                ins,
                exp,
                settings=RunSettings(0.05, 0.05, entry, timeout_s=0),
                jobs=1,
                use_cache=False,
                cache=ResultCache(enabled=False),
            )

        t_diff, rep = _best(lambda ref=ref: folder(ref.inputs, ref.expected))  # type: ignore[union-attr]
        ins_name = "inputs.pt" if (gold / "inputs.pt").is_file() else "tensors.pt"
        gi, ge = load_bundle(gold / ins_name), load_bundle(gold / "expected.pt")
        t_gold, _ = _best(lambda gi=gi, ge=ge: folder(gi, ge))
        s = rep.summary()  # type: ignore[union-attr]
        print(
            f"{label} ({len(files)} dumps): reference cold {cold * 1e3:.0f} ms (synthesize + run {files[0].name}), "
            f"cached {warm * 1e3:.1f} ms; folder vs reference {t_diff:.2f} s ({s['pass']} pass, {s['fail']} fail), "
            f"vs goldens {t_gold:.2f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
