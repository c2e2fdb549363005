"""Differential mode (no goldens) over ../shared/fixtures.

(a) ``run_frontend_expected``: each case's own inputs, the expected values computed by its
    ``00_frontend.py`` instead of the goldens: every file must reach its verdicts.json status
    (``pass`` for a ``ran`` file when the frontend gave values to compare: its returned result),
    apart from the files listed in FRONTEND_AS_GOLDEN with the reason.
(b) ``run_synthesized``: every ``broken/`` copy validated on synthesized inputs against its own
    frontend: the first divergent pass of each verdict run (base tolerance and every ``extra``
    one) must still be found, apart from the cases listed in SYNTHESIZED with the reason.

Runnable on its own: ``python tests/conformance/differential_conf.py [a|b] [CASE_SUBSTRING]``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

try:
    from .conformance import FIXTURES, known_finding, load_verdicts
except ImportError:  # run as a script: this folder is on sys.path
    from conformance import FIXTURES, known_finding, load_verdicts  # type: ignore[no-redef]

# (a) files whose verdict the frontend-as-reference does not reach, with why: (case, file) -> (want, got, why).
# Each is checked to still disagree exactly so, so an entry cannot go stale.
FRONTEND_AS_GOLDEN: dict[tuple[str, str], tuple[str, str, str]] = {}

# (b) broken/ cases (and tolerance) whose first divergent pass synthesized inputs cannot find, with why.
SYNTHESIZED: dict[tuple[str, float], str] = {}


def _runs(spec: dict) -> list[tuple[float, float, dict]]:
    runs = [(spec["rtol"], spec["atol"], spec["files"])]
    for extra in spec.get("extra", []):
        runs.append((extra.get("rtol", extra.get("atol", spec["rtol"])), extra.get("atol", spec["atol"]), extra["files"]))
    return runs


def _validate(files: list[Path], inputs, expected, rtol: float, atol: float, entry: str | None):
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import ResultCache, validate_files

    return validate_files(
        files,
        inputs,
        expected,
        settings=RunSettings(rtol, atol, entry, timeout_s=60),
        jobs=2,
        use_cache=False,
        cache=ResultCache(enabled=False),
    )


@dataclass
class TallyA:
    right: int = 0
    listed: int = 0
    mismatches: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    expected_failures: list[str] = field(default_factory=list)


def run_frontend_expected(selector: str | None = None, verbose: bool = False) -> TallyA:
    from pypto_lsp.validate.differential import DifferentialError, frontend_outputs
    from pypto_lsp.validate.golden import load_bundle

    tally = TallyA()
    for case, spec in load_verdicts().items():
        if selector and selector not in case:
            continue
        folder = FIXTURES / spec["dir"] / "passes_dump"
        files = [folder / name for name in spec["files"]]
        inputs = load_bundle(FIXTURES / spec["inputs"])
        try:
            expected = frontend_outputs(sorted(files, key=lambda f: f.name)[0], inputs, entry=spec.get("entry"), timeout=60)
        except DifferentialError as exc:
            for name in spec["files"]:
                tally.listed += 1
                tally.mismatches.append(f"{case}/{name}: no reference: {exc}")
            continue
        for rtol, atol, want_files in _runs(spec):
            report = _validate(files, inputs, expected, rtol, atol, spec.get("entry"))
            for fr in report.files:
                name = Path(fr.file).name
                want = want_files[name]["status"]
                if want == "ran" and expected:
                    # 'ran': the goldens hold nothing to compare (a program returning its result); the
                    # frontend's returned values are compared here, so the file must pass (issue 28)
                    want = "pass"
                tally.listed += 1
                known = FRONTEND_AS_GOLDEN.get((case, name))
                proven = known_finding(case, name, (fr.memory or {}).get("hazards", []))
                if proven is not None and fr.status == "fail" and want in ("pass", "ran"):
                    known = (want, "fail", proven)  # a sanitizer finding the device really has (conformance.KNOWN_FINDINGS)
                if fr.status == want:
                    tally.right += 1
                    if known is not None:
                        tally.stale.append(f"{case}/{name}: listed but now reaches its verdict")
                elif known is not None and (want, fr.status) == known[:2]:
                    tally.known.append(f"{case}/{name}: verdict {want}, ours {fr.status}: {known[2]}")
                else:
                    detail = (
                        f"{fr.error.kind}: {fr.error.message[:200]}"
                        if fr.error
                        else str({k: v.max_abs_diff for k, v in fr.tensors.items()})
                    )
                    tally.mismatches.append(f"{case}/{name} (atol {atol}): want {want}, got {fr.status}: {detail}")
        if verbose:
            print(f"{case}: {tally.right}/{tally.listed}", file=sys.stderr)
    return tally


@dataclass
class TallyB:
    found: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    expected_failures: list[str] = field(default_factory=list)


def _first_bad(files: dict) -> str | None:
    for name in sorted(files):
        if files[name]["status"] in ("fail", "error"):
            return name
    return None


def run_synthesized(selector: str | None = None, verbose: bool = False) -> TallyB:
    from pypto_lsp.validate.differential import reference

    tally = TallyB()
    for case, spec in load_verdicts().items():
        if not case.startswith("broken/") or (selector and selector not in case):
            continue
        folder = FIXTURES / spec["dir"] / "passes_dump"
        files = sorted(folder / name for name in spec["files"])
        ref = reference(files, entry=spec.get("entry"), timeout=60, use_cache=False)
        for rtol, atol, want_files in _runs(spec):
            want = _first_bad(want_files)
            if want is None:
                continue  # nothing to find at this tolerance
            report = _validate(files, ref.inputs, ref.expected, rtol, atol, spec.get("entry"))
            got = Path(report.first_divergent.file).name if report.first_divergent else None
            line = f"{case} (atol {atol}): want {want}, got {got}"
            known = SYNTHESIZED.get((case, atol))
            if got == want:
                tally.found.append(line)
                if known is not None:
                    tally.stale.append(f"{line}: listed but now found")
            elif known is not None:
                tally.known.append(f"{line}: {known}")
            else:
                tally.missed.append(line)
            if verbose:
                print(line, file=sys.stderr)
    return tally


def main() -> int:
    which = sys.argv[1] if len(sys.argv) > 1 else "a"
    sel = sys.argv[2] if len(sys.argv) > 2 else None
    if which == "a":
        a = run_frontend_expected(sel, verbose=True)
        for m in a.mismatches:
            print("MISMATCH", m)
        for k in a.known:
            print("LISTED", k)
        print(
            f"(a) frontend as golden: {a.right}/{a.listed} files reach their verdict; {len(a.known)} listed, "
            f"{len(a.expected_failures)} expected failure(s) of the memory cases, {len(a.mismatches)} mismatch(es)"
        )
        return 1 if a.mismatches or a.stale else 0
    b = run_synthesized(sel, verbose=True)
    for m in b.missed:
        print("MISSED", m)
    for k in b.known:
        print("LISTED", k)
    print(
        f"(b) synthesized inputs: first divergent pass found in {len(b.found)} verdict run(s); {len(b.known)} listed, "
        f"{len(b.expected_failures)} expected failure(s) of the memory cases, {len(b.missed)} missed"
    )
    return 1 if b.missed or b.stale else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    raise SystemExit(main())
