"""What the commands import: ``check``, ``codegen`` and ``--help`` never load torch (two seconds of
start-up on a loaded machine, for commands that run nothing); a local ``validate`` never loads Dask.

Each command runs in its own interpreter with ``-X importtime``, which lists every module the
process imported, so a lazy import that turned eager anywhere below fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = ROOT / "examples" / "softmax" / "passes_dump"


def _imported(*args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pypto_lsp", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:") and "|" in line}


@pytest.mark.parametrize(
    "args",
    [("--help",), ("check", str(SOFTMAX)), ("codegen", str(SOFTMAX / "00_frontend.py")), ("validate", "--help")],
    ids=["help", "check", "codegen", "validate-help"],
)
def test_commands_that_run_nothing_never_import_torch(args: tuple[str, ...]) -> None:
    modules = _imported(*args)
    assert "pypto_lsp.cli" in modules  # the listing works
    assert "torch" not in modules
    assert not {"distributed", "dask"} & modules


def test_a_local_validate_never_imports_dask() -> None:
    modules = _imported("validate", str(SOFTMAX), "--no-cache")
    assert "torch" in modules  # it ran
    assert not {"distributed", "dask"} & modules
