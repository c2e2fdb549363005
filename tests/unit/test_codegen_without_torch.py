"""Which ops get ``_rtype=`` is a per-op fact of the catalogue, so generating code needs no torch."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

from pypto_lsp.ir.catalogue import NEEDS_RESULT_TYPE, OPS

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import contextlib, glob, io, json, sys
from pypto_lsp.cli import main
out = {"files": 0, "ok": 0, "with_rtype": 0}
for f in sorted(glob.glob("examples/*/passes_dump/*.py")):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["codegen", f])
    out["files"] += 1
    out["ok"] += rc == 0
    out["with_rtype"] += "_rtype=" in buf.getvalue()
out["torch"] = "torch" in sys.modules
print(json.dumps(out))
"""


def test_codegen_command_imports_no_torch() -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["files"] >= 30 and out["ok"] == out["files"], out
    assert out["with_rtype"] > 0, out  # the scripts do pass result types (loads, matmuls, pops)
    assert out["torch"] is False, "generating code imported torch"


def test_kernels_that_take_a_result_type_are_the_catalogues() -> None:
    from pypto_lsp.exec.kernels import KERNELS

    takes = {name for name, fn in KERNELS.items() if "_rtype" in inspect.signature(fn).parameters}
    assert takes == NEEDS_RESULT_TYPE
    assert {n for n, s in OPS.items() if s.needs_result_type} == NEEDS_RESULT_TYPE
