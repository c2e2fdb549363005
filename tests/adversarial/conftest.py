"""Shared pieces of the adversarial suite (issue 12): a small real case copied into tmp_path,
the real CLI as a subprocess, big inputs generated here (never committed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
CASE = FIXTURES / "example_elementwise_chunked_add"
needs_fixtures = pytest.mark.skipif(not CASE.is_dir(), reason=f"shared fixtures not found at {FIXTURES}")


def make_case(root: Path, n: int = 3, *, names: list[str] | None = None, bug_from: int | None = None) -> Path:
    """``root/case`` with ``passes_dump/`` (``n`` real dumps, or one per name in ``names``) and
    ``tensors.pt`` + ``expected.pt``; from index ``bug_from`` on, the add is a sub (fails)."""
    case = root / "case"
    dumps = case / "passes_dump"
    dumps.mkdir(parents=True)
    for name in ("tensors.pt", "expected.pt"):
        shutil.copyfile(CASE / name, case / name)
    srcs = sorted((CASE / "passes_dump").glob("*.py"))
    names = names or [p.name for p in srcs[:n]]
    for i, name in enumerate(names):
        text = srcs[i % len(srcs)].read_text()
        if bug_from is not None and i >= bug_from:
            text = text.replace("pl.tile.add(", "pl.tile.sub(")
        (dumps / name).write_text(text)
    return case


def cli(*args: str, cache: Path | None = None, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, **(env or {})}
    if cache is not None:
        e["PYPTO_LSP_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "pypto_lsp", *args], capture_output=True, text=True, env=e, timeout=timeout)


def report(p: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The ``--json`` report; fails the test when stdout is not one whole JSON document."""
    try:
        out: dict[str, Any] = json.loads(p.stdout)
    except ValueError as exc:
        raise AssertionError(f"stdout is not JSON (exit {p.returncode}):\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-2000:]}") from exc
    return out


def statuses(rep: dict[str, Any]) -> dict[str, str]:
    return {Path(f["file"]).name: f["status"] for f in rep["files"]}
