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
# real dumps of the op families added last (distributed, gather/scatter/sort, MX, arrays, ...): same format
COVERAGE = FIXTURES.parent / "fixtures-coverage"


# Verdicts we deliberately do not reach, with the reason. Each is checked to still disagree
# exactly as described, so an entry cannot silently go stale. Empty: every verdict is reached.
KNOWN_DISAGREEMENTS: dict[tuple[str, str], tuple[str, str, str]] = {
    # (case, file): (verdict, our status, why)
}

# Coverage cases (../shared/fixtures-coverage) whose op family does not execute yet: case -> why. Their files
# are tallied as pending, not right; a pending case whose every file reaches its verdict is stale (remove it).
# Empty: every family of issue 31 executes.
PENDING_COVERAGE: dict[str, str] = {}

# Real dumps where the sanitizer finds what the NPU would really do (each proven in docs/sanitizer.md,
# "Findings on the fixtures"): case -> (finding kind, the files it fails, why). The verdict of each such
# file is a known disagreement; any other finding on a real compiler dump is a false alarm.
_FLASH_WHY = (
    "the program reads an uninitialised tensor: 00_frontend line 35-36 `mi_102 = pl.tensor.create([64, 1])` "
    "(no init_value) then `pl.tensor.maximum(mi_102, row_max)`; from 11 on it is `tile.create` + `tile.maximum`: "
    "on the NPU mi_102 holds whatever its bytes held (the reference and a zero-filling simulator read 0)"
)
_OOB_WHY = (
    "the program's windows reach past its tensors: `tile.load(a, [64, 0], [64, 64], [64, 64])` and "
    "`tile.store(tc, [64, 0], c)` on [100, 64] tensors (rows 64-127 of 100, valid 64 rows requested): "
    "on the NPU the load reads and the store writes 28 rows of neighbouring global memory"
)
KNOWN_FINDINGS: dict[str, tuple[str, set[str] | None, str]] = {
    "example_flash_attention": ("uninitialised", {f"{n:02d}_" for n in range(22)}, _FLASH_WHY),
    "ops/dm_partial_rows_static": ("out-of-bounds", None, _OOB_WHY),
}
# the kinds of finding each hand-broken kind must show on its edited lines
EDIT_KINDS = {"memory": ("overwrite", "pipe-slot"), "race": ("race",), "uninitialised": ("uninitialised",)}


def known_finding(case: str, name: str, hazards: list[dict]) -> str | None:
    """The documented reason when every finding of this file is the case's known one, else None."""
    known = KNOWN_FINDINGS.get(case)
    if known is None or not hazards:
        return None
    kind, files, why = known
    if files is not None and not any(name.startswith(p) for p in files):
        return None
    return why if all(h["kind"] == kind for h in hazards) else None


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
    pending: list[str] = field(default_factory=list)
    # entries with "edit": the first divergent pass must be the first edited file, and every
    # edited file must carry a memory finding on (or caused by) an edited line
    edit_violations: list[str] = field(default_factory=list)
    edit_checked: int = 0
    # a memory finding on a real compiler dump (any case without "kind": "memory") is a false alarm
    # until proven otherwise by hand
    memory_alarms: list[str] = field(default_factory=list)
    memory_checked: int = 0


def load_verdicts(root: Path = FIXTURES) -> dict:
    return json.loads((root / "verdicts.json").read_text())


def run(selector: str | None = None, verbose: bool = False, root: Path = FIXTURES) -> Tally:
    import torch  # noqa: F401

    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import ResultCache, validate_files
    from pypto_lsp.validate.golden import load_bundle

    verdicts = load_verdicts(root)
    tally = Tally()
    for case, spec in verdicts.items():
        if selector and selector not in case:
            continue
        pending = PENDING_COVERAGE.get(case) if root == COVERAGE else None
        if pending is not None:
            wrong = _pending_case(case, spec, root)
            tally.pending.append(f"{case}: {pending} ({wrong} of {len(spec['files'])} files not at their verdict)")
            if wrong == 0:
                tally.stale.append(f"{case}: listed as pending but every file now reaches its verdict")
            continue
        folder = root / spec["dir"] / "passes_dump"
        files = [folder / name for name in spec["files"]]
        inputs = load_bundle(root / spec["inputs"])
        expected = load_bundle(root / spec["expected"])
        runs = [(spec["rtol"], spec["atol"], spec["files"])]
        for extra in spec.get("extra", []):
            runs.append((extra.get("rtol", extra.get("atol", spec["rtol"])), extra.get("atol", spec["atol"]), extra["files"]))
        for rtol, atol, want_files in runs:
            report = validate_files(
                files,
                inputs,
                expected,
                settings=RunSettings(rtol, atol, spec.get("entry"), timeout_s=60),
                jobs=2,
                use_cache=False,
                cache=ResultCache(enabled=False),
                bundle_paths=(str(root / spec["inputs"]), str(root / spec["expected"])),
            )
            for fr in report.files:
                name = Path(fr.file).name
                want = want_files[name]
                tally.listed += 1
                mem = fr.memory or {}
                tally.memory_checked += bool(mem.get("checked"))
                hazards = mem.get("hazards", [])
                proven = known_finding(case, name, hazards)
                if spec.get("kind") not in EDIT_KINDS and proven is None:
                    for h in hazards:
                        tally.memory_alarms.append(f"{case}/{name}:{h['line']}: {h['kind']}: {h['message'][:300]}")
                known = KNOWN_DISAGREEMENTS.get((case, name))
                if proven is not None and fr.status == "fail" and want["status"] in ("pass", "ran"):
                    known = (want["status"], "fail", proven)
                if fr.status == want["status"]:
                    tally.right += 1
                    if known is not None:
                        tally.stale.append(f"{case}/{name}: listed as a known disagreement but now reaches its verdict")
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
            if "edit" in spec and (rtol, atol) == (spec["rtol"], spec["atol"]):
                check_edit(case, spec["edit"], report, tally, EDIT_KINDS.get(spec.get("kind", "memory"), ()))
        if verbose:
            print(f"{case}: {tally.right}/{tally.listed} so far", file=sys.stderr)
    return tally


def _pending_case(case: str, spec: dict, root: Path) -> int:
    """How many files of a pending coverage case miss their verdict (at the base tolerance)."""
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import ResultCache, validate_files
    from pypto_lsp.validate.golden import GoldenError, load_bundle

    folder = root / spec["dir"] / "passes_dump"
    try:
        inputs, expected = load_bundle(root / spec["inputs"]), load_bundle(root / spec["expected"])
    except GoldenError:
        return len(spec["files"])
    report = validate_files(
        [folder / name for name in spec["files"]],
        inputs,
        expected,
        settings=RunSettings(spec["rtol"], spec["atol"], spec.get("entry"), timeout_s=60),
        jobs=2,
        use_cache=False,
        cache=ResultCache(enabled=False),
    )
    return sum(fr.status != spec["files"][Path(fr.file).name]["status"] for fr in report.files)


def check_edit(case: str, edit: dict, report: object, tally: Tally, kinds: tuple[str, ...] = ()) -> None:
    """The first divergent pass is the first edited file; each edited file has a finding of its
    kind whose line (the read, the later task, the tile.create) or other line (the write or
    reservation it collides with) was edited."""
    files = {Path(fr.file).name: fr for fr in report.files}  # type: ignore[attr-defined]
    fd = report.first_divergent  # type: ignore[attr-defined]
    if fd is None or Path(fd.file).name != edit["first_file"]:
        got = Path(fd.file).name if fd is not None else None
        tally.edit_violations.append(f"{case}: first divergent pass {got}, want {edit['first_file']}")
    for ef in edit["edited_files"]:
        tally.edit_checked += 1
        fr = files.get(ef["file"])
        lines = set(ef["lines"])
        hazards = (fr.memory or {}).get("hazards", []) if fr is not None else []
        hazards = [h for h in hazards if not kinds or h["kind"] in kinds]
        if not any(h["line"] in lines or h.get("other_line") in lines for h in hazards):
            found = sorted({(h["kind"], h["line"], h.get("other_line")) for h in hazards})
            tally.edit_violations.append(f"{case}/{ef['file']}: no memory finding on edited lines {sorted(lines)} (found {found})")


def main() -> int:
    args = sys.argv[1:]
    root = FIXTURES
    if args and args[0] == "--coverage":
        root, args = COVERAGE, args[1:]
    sel = args[0] if args else None
    tally = run(sel, verbose=True, root=root)
    for m in tally.mismatches:
        print(f"MISMATCH {m.case}/{m.file} tol={m.tol}: want {m.want}, got {m.got}: {m.detail}")
    for v in tally.diff_violations:
        print("DIFF", v)
    for k in tally.known:
        print("KNOWN", k)
    for e in tally.edit_violations:
        print("EDIT", e)
    for e in tally.memory_alarms:
        print("MEMORY", e)
    for p in tally.pending:
        print("PENDING", p)
    for p in tally.stale:
        print("STALE", p)
    print(
        f"conformance: {tally.right}/{tally.listed} files right ({len(tally.known)} documented disagreement(s)); "
        f"edited files with a memory finding on an edited line: {tally.edit_checked - len(tally.edit_violations)}/{tally.edit_checked}; "
        f"memory model ran on {tally.memory_checked} file runs, {len(tally.memory_alarms)} finding(s) on real compiler dumps"
    )
    bad = tally.mismatches or tally.stale or tally.diff_violations or tally.edit_violations or tally.memory_alarms
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    raise SystemExit(main())
