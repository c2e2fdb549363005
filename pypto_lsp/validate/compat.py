"""PyPTO-compatible entry points: ``validate_pass_ir_codegen_results`` and ``validate_ir``.

Same argument checks, the same banner and per-tensor lines on stdout, and the
same exceptions, so a test written against ``pypto.debug`` can switch to
``pypto_lsp``. One deliberate difference: every file runs (the reference stops
at the first failure); the first failing file is still raised afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch

from .config import discover_dumps
from .engine import run_text
from .process_setup import configure_process
from .report import ERROR, FAIL

_ERROR_TYPES: dict[str, type[Exception]] = {"golden": KeyError, "TimeoutError": TimeoutError}


def _check_args(tensors: object, expected: object, rtol: object, atol: object) -> None:
    for label, d in (("tensors", tensors), ("expected", expected)):
        if not isinstance(d, Mapping):
            raise TypeError(f"{label} must be a dict[str, torch.Tensor], got {type(d).__name__}")
        for k, v in d.items():
            if not isinstance(k, str) or not isinstance(v, torch.Tensor):
                raise TypeError(f"{label}: every entry must be str -> torch.Tensor, got {k!r}: {type(v).__name__}")
    for label, v in (("rtol", rtol), ("atol", atol)):
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"{label} must be a number, got {v!r}")
        if not v >= 0:  # also rejects NaN
            raise ValueError(f"{label} must be >= 0, got {v!r}")


def validate_pass_ir_codegen_results(
    ir_dir: str | Path,
    tensors: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    *,
    rtol: float = 5e-2,
    atol: float = 5e-2,
) -> None:
    """Validate a dump file or every ``*.py`` in a folder; print PyPTO's banner lines; raise on failure."""
    _check_args(tensors, expected, rtol, atol)
    configure_process()
    path = Path(ir_dir)
    if not path.exists():
        raise FileNotFoundError(f"IR path does not exist: {path}")
    if path.is_file() and path.suffix != ".py":
        raise ValueError(f"IR file must be a .py dump: {path}")
    files = discover_dumps(path) if path.is_dir() else [path]
    first_failure: Exception | None = None
    for f in files:
        fr = run_text(
            f.read_text(encoding="utf-8", errors="replace"), tensors, expected, filename=str(f), rtol=float(rtol), atol=float(atol)
        )
        print(f"{'=' * 20} {f.stem} {'=' * 20}")
        for name, t in fr.tensors.items():
            print(f"validate tensor: '{name}', max_abs_diff: {t.max_abs_diff:.6e}, pass: {t.passed}")
        if first_failure is not None:
            continue
        if fr.status == FAIL:
            bad = next(k for k, t in fr.tensors.items() if not t.passed)
            first_failure = AssertionError(
                f"{f}: tensor mismatch for key '{bad}', max abs diff {fr.tensors[bad].max_abs_diff:.6e} "
                f"exceeds tolerance (rtol={float(rtol):.3e}, atol={float(atol):.3e})"
            )
        elif fr.status == ERROR and fr.error is not None:
            where = f":{fr.error.line}" if fr.error.line else ""
            exc_type = _ERROR_TYPES.get(fr.error.kind, RuntimeError)
            first_failure = exc_type(f"{f}{where}: {fr.error.kind}: {fr.error.message}")
    if first_failure is not None:
        raise first_failure


def validate_ir(output_dir: str | Path, tensors: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor], **tol: float) -> None:
    """``CompiledProgram.validate_ir``: validate ``<output_dir>/passes_dump/``."""
    dump = Path(output_dir) / "passes_dump"
    if not dump.is_dir():
        raise FileNotFoundError(f"No passes_dump/ under {output_dir}. Compile with dump_passes=True to write one.")
    validate_pass_ir_codegen_results(dump, tensors, expected, **tol)
