"""`pypto-lsp check` over the real dumps: no error where a file must run, the error on the right line
where it must not. Skipped when ../shared/fixtures is absent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conformance import FIXTURES

pytestmark = pytest.mark.conformance
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checked() -> dict[str, list[dict]]:
    if not (FIXTURES / "verdicts.json").is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}: conformance suite skipped")
    # the documented CLI, once over the whole folder
    proc = subprocess.run(
        [sys.executable, "-m", "pypto_lsp", "check", str(FIXTURES), "--json"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    data = json.loads(proc.stdout)
    return {str(Path(f["file"]).resolve()): f["diagnostics"] for f in data["files"]}


def _verdicts() -> list[tuple[Path, dict]]:
    verdicts = json.loads((FIXTURES / "verdicts.json").read_text())
    out = []
    for spec in verdicts.values():
        for name, v in spec["files"].items():
            out.append(((FIXTURES / spec["dir"] / "passes_dump" / name).resolve(), v))
    return out


def test_no_error_in_files_that_must_run(checked: dict[str, list[dict]]) -> None:
    bad = []
    for path, v in _verdicts():
        if v["status"] == "error":
            continue
        errs = [d for d in checked[str(path)] if d["severity"] == "error"]
        if errs:
            bad.append(f"{path.relative_to(FIXTURES)}:{errs[0]['line']}: {errs[0]['message']}")
    assert not bad, "\n".join(bad[:20])


def test_free_var_errors_are_on_the_line_that_uses_the_name(checked: dict[str, list[dict]]) -> None:
    n = 0
    for path, v in _verdicts():
        if v["status"] != "error" or "FREE_VAR" not in v.get("why", ""):
            continue
        lines = path.read_text().splitlines()
        uses = {i + 1 for i, line in enumerate(lines) if "__FREE_VAR" in line}
        errs = [d for d in checked[str(path)] if d["severity"] == "error" and d["code"] == "free-var"]
        assert errs, f"{path.relative_to(FIXTURES)}: no free-var error"
        assert {d["line"] for d in errs} == uses, (
            f"{path.relative_to(FIXTURES)}: errors on {sorted(d['line'] for d in errs)}, uses on {sorted(uses)}"
        )
        n += 1
    assert n == 58  # example_flash_attention 22-34 and ops/cf_while 05-49


def test_ill_typed_add_is_reported_where_the_operand_was_reshaped(checked: dict[str, list[dict]]) -> None:
    # ops/dm_partial_rowsum_fillpad 20-49: ResolveBackendOpLayouts reshaped one operand of an add only
    for path, v in _verdicts():
        if "dm_partial_rowsum_fillpad" in str(path) and v["status"] == "error":
            errs = [d for d in checked[str(path)] if d["severity"] == "error"]
            assert errs, path.name
            line = path.read_text().splitlines()[errs[0]["line"] - 1]
            assert "pl.tile.add(" in line, (path.name, line)
