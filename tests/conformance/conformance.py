"""Conformance against ../shared/fixtures/verdicts.json: the verdict pypto-lsp must reach per dump.

Used by test_conformance.py and runnable on its own:
    python tests/conformance/conformance.py [CASE_SUBSTRING]
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


# Verdicts we deliberately do not reach, with the reason. Each is checked to still disagree
# exactly as described, so an entry cannot silently go stale. Empty: every verdict is reached.
KNOWN_DISAGREEMENTS: dict[tuple[str, str], tuple[str, str, str]] = {
    # (case, file): (verdict, our status, why)
}

# Cases whose bug is a memory placement ("kind": "memory" in verdicts.json). Values-only execution
# cannot see them; until the memory model reaches their verdicts they are counted as expected
# failures (listed in the tally, never silently). Set to False when the memory model lands.
MEMORY_CASES_EXPECTED_TO_FAIL = True


@dataclass
class Mismatch:
    case: str
    file: str
    tol: float
    want: str
    got: str
    detail: str


@dataclass
class Tally:
    right: int = 0
    listed: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    diff_violations: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    expected_failures: list[str] = field(default_factory=list)


def load_verdicts() -> dict:
    return json.loads((FIXTURES / "verdicts.json").read_text())


def run(selector: str | None = None, verbose: bool = False) -> Tally:
    import torch  # noqa: F401

    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.run import ResultCache, validate_files

    verdicts = load_verdicts()
    tally = Tally()
    for case, spec in verdicts.items():
        if selector and selector not in case:
            continue
        folder = FIXTURES / spec["dir"] / "passes_dump"
        files = [folder / name for name in spec["files"]]
        inputs = load_bundle(FIXTURES / spec["inputs"])
        expected = load_bundle(FIXTURES / spec["expected"])
        runs = [(spec["rtol"], spec["atol"], spec["files"])]
        for extra in spec.get("extra", []):
            runs.append((extra.get("rtol", extra.get("atol", spec["rtol"])), extra.get("atol", spec["atol"]), extra["files"]))
        for rtol, atol, want_files in runs:
            report = validate_files(
                files,
                inputs,
                expected,
                rtol=rtol,
                atol=atol,
                entry=spec.get("entry"),
                timeout=60,
                jobs=2,
                use_cache=False,
                cache=ResultCache(enabled=False),
                bundle_paths=(str(FIXTURES / spec["inputs"]), str(FIXTURES / spec["expected"])),
            )
            for fr in report.files:
                name = Path(fr.file).name
                want = want_files[name]
                tally.listed += 1
                known = KNOWN_DISAGREEMENTS.get((case, name))
                if fr.status == want["status"]:
                    tally.right += 1
                    if known is not None:
                        tally.stale.append(f"{case}/{name}: listed as a known disagreement but now reaches its verdict")
                elif MEMORY_CASES_EXPECTED_TO_FAIL and spec.get("kind") == "memory":
                    tally.expected_failures.append(f"{case}/{name}: want {want['status']}, got {fr.status} (memory placement)")
                elif known is not None and (want["status"], fr.status) == known[:2]:
                    tally.known.append(f"{case}/{name}: verdict {known[0]}, ours {known[1]}: {known[2]}")
                else:
                    detail = (
                        f"{fr.error.kind}: {fr.error.message[:300]} @line {fr.error.line}"
                        if fr.error
                        else str({k: v.max_abs_diff for k, v in fr.tensors.items()})
                    )
                    tally.mismatches.append(Mismatch(case, name, atol, want["status"], fr.status, detail))
                oracle = want.get("oracle_max_abs_diff") or {}
                if want.get("oracle_passed", fr.status == "pass") and fr.status == "pass":
                    for k, ref in oracle.items():
                        ours = fr.tensors[k].max_abs_diff if k in fr.tensors else None
                        if ours is None or ref is None:
                            continue
                        if ours > 2 * ref + 1e-3:
                            tally.diff_violations.append(f"{case}/{name} {k}: ours {ours:.3e} > 2*ref {ref:.3e} + 1e-3")
        if verbose:
            print(f"{case}: {tally.right}/{tally.listed} so far", file=sys.stderr)
    return tally


def main() -> int:
    sel = sys.argv[1] if len(sys.argv) > 1 else None
    tally = run(sel, verbose=True)
    for m in tally.mismatches:
        print(f"MISMATCH {m.case}/{m.file} tol={m.tol}: want {m.want}, got {m.got}: {m.detail}")
    for v in tally.diff_violations:
        print("DIFF", v)
    for k in tally.known:
        print("KNOWN", k)
    print(
        f"conformance: {tally.right}/{tally.listed} files right ({len(tally.known)} documented disagreement(s), "
        f"{len(tally.expected_failures)} expected failure(s) of the memory cases)"
    )
    return 0 if not tally.mismatches and not tally.stale and not tally.diff_violations else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    raise SystemExit(main())
