"""Validation results -> LSP diagnostics and lens titles (plain functions, no server state).

Where each kind of result lands:

* a runtime error: on the IR span that raised (``ErrorInfo.line/column``);
* a cross-core deadlock/timeout: on the blocked ``tpop``/``tpush`` line, the message
  naming the op, split, lane and queue depths;
* a numeric mismatch: on every statement that wrote the failing output (``writes``:
  the store/assemble into the output parameter, else the entry's return), with the
  tensor, max abs/rel diff and tolerances, and ``relatedInformation`` pointing at the
  first divergent pass when that is another file;
* a static error: nowhere when the document is open (the parse diagnostics already
  show it), else on its line.
"""

from __future__ import annotations

import math
from typing import Any

from lsprotocol import types

from ..ir import diagnostics as D
from ..validate.report import ERROR, FAIL, PASS, RAN, FileResult, writes_for
from .documents import to_client_col

SOURCE = "pypto-lsp"

_SEVERITY = {
    D.ERROR: types.DiagnosticSeverity.Error,
    D.WARNING: types.DiagnosticSeverity.Warning,
    D.INFORMATION: types.DiagnosticSeverity.Information,
    D.HINT: types.DiagnosticSeverity.Hint,
}


# ---------------------------------------------------------------------- formatting


def fmt_tol(x: float) -> str:
    """Tolerances as people write them: 0.05 -> 5e-2, 0.001 -> 1e-3, 0.0125 -> 1.25e-2."""
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    mant, exp = f"{x:.3e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def fmt_diff(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "nan"
    return f"{x:.2e}"


def fmt_time(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s"


def _ranks_of(detail: dict[str, Any]) -> str:
    """`` on rank 1`` / `` on ranks 0, 1`` for an error of a multi-rank program (exec.ranks), else ''."""
    ranks = detail.get("ranks")
    if isinstance(ranks, list) and len(ranks) > 1:
        return " on ranks " + ", ".join(str(r) for r in ranks)
    rank = detail.get("rank")
    return f" on rank {rank}" if isinstance(rank, int) else ""


def verdict_titles(fr: FileResult, vs: str | None = None) -> list[str]:
    """The top-of-file lens titles for one result (one per output tensor, or the error); ``vs``:
    what it was compared with, when not goldens (``00_frontend (no goldens)``)."""
    took = "cached" if fr.cached else fmt_time(fr.seconds)
    against = f" vs {vs}" if vs else ""
    if fr.status == ERROR or fr.error is not None:
        kind = fr.error.kind if fr.error else "error"
        where = f" (line {fr.error.line})" if fr.error and fr.error.line else ""
        return [f"✗ error: {kind}{where}{_ranks_of(fr.error.detail if fr.error else {})}"]
    if fr.status == RAN:
        return [f"✓ ran (no expected outputs) · {took}"]
    out = []
    for name, t in fr.tensors.items():
        if t.passed:
            out.append(f"✓ {name} max|Δ| {fmt_diff(t.max_abs_diff)}{against} (atol {fmt_tol(fr.atol)}) · {took}")
        else:
            out.append(f"✗ {name} max|Δ| {fmt_diff(t.max_abs_diff)}{against} > atol {fmt_tol(fr.atol)} · {took}")
    if not out:
        out.append(f"{'✓' if fr.status == PASS else '✗'} {fr.status} · {took}")
    return out


# ---------------------------------------------------------------------- ranges


def _line_text(lines: list[str], line0: int) -> str:
    return lines[line0] if 0 <= line0 < len(lines) else ""


def statement_range(lines: list[str], line1: int, end_line1: int | None, encoding: str) -> types.Range:
    """From the first non-blank character of ``line1`` to the end of ``end_line1`` (1-based)."""
    l0 = max(line1 - 1, 0)
    e0 = max((end_line1 or line1) - 1, l0)
    first = _line_text(lines, l0)
    last = _line_text(lines, e0)
    start = len(first) - len(first.lstrip())
    return types.Range(
        types.Position(l0, to_client_col(first, start, encoding)),
        types.Position(e0, to_client_col(last, len(last.rstrip()), encoding)),
    )


def span_range(lines: list[str], line1: int, col0: int, end_line1: int, end_col0: int, encoding: str) -> types.Range:
    l0, e0 = max(line1 - 1, 0), max(end_line1 - 1, 0)
    if (e0, end_col0) <= (l0, col0):
        end_col0 = col0 + 1
        e0 = l0
    return types.Range(
        types.Position(l0, to_client_col(_line_text(lines, l0), col0, encoding)),
        types.Position(e0, to_client_col(_line_text(lines, e0), end_col0, encoding)),
    )


def ir_diagnostic(d: D.Diagnostic, lines: list[str], encoding: str, uri: str | None = None) -> types.Diagnostic:
    """``d`` in LSP terms; its related spans in this file (``uri``) as related information (a
    yield's finding links the loop's first value, which said what the loop carries)."""
    s = d.span
    message = d.message if not d.hint else f"{d.message}\n{d.hint}"
    related = [
        types.DiagnosticRelatedInformation(
            types.Location(uri, span_range(lines, r.span.line, r.span.col, r.span.end_line, r.span.end_col, encoding)), r.message
        )
        for r in d.related
        if uri is not None and r.file is None and 0 < r.span.line <= len(lines)
    ]
    return types.Diagnostic(
        range=span_range(lines, s.line, s.col, s.end_line, s.end_col, encoding),
        message=message,
        severity=_SEVERITY.get(d.severity, types.DiagnosticSeverity.Error),
        code=d.code,
        source=SOURCE,
        related_information=related or None,
    )


def _error_range(fr: FileResult, lines: list[str], encoding: str) -> types.Range:
    e = fr.error
    if e is None or not e.line:
        return statement_range(lines, 1, 1, encoding)
    if e.column:
        end_line = e.end_line or e.line
        end_col = (e.end_column - 1) if e.end_column else (e.column - 1 + 1)
        if end_line == e.line and end_col <= e.column - 1:
            return statement_range(lines, e.line, e.line, encoding)
        return span_range(lines, e.line, e.column - 1, end_line, end_col, encoding)
    return statement_range(lines, e.line, e.end_line, encoding)


def divergence_range(fr: FileResult, lines: list[str], encoding: str) -> types.Range:
    """Where a divergent pass shows its problem: the error, else the first write of a failing output."""
    if fr.error is not None:
        return _error_range(fr, lines, encoding)
    for name, t in fr.tensors.items():
        if not t.passed:
            w = writes_for(fr, name)
            if w:
                return statement_range(lines, w[0][0], w[0][1], encoding)
    return statement_range(lines, 1, 1, encoding)


def _cross_core_message(kind: str, message: str, detail: dict[str, Any]) -> str:
    what = kind.split(":", 1)[1] if ":" in kind else kind
    op = detail.get("op", "pop/push")
    parts = [f"cross-core {what}: {op} blocked"]
    facts = []
    if "split" in detail:
        facts.append(f"split {detail['split']}")
    if "lane" in detail:
        facts.append(f"lane {detail['lane']}")
    if detail.get("role"):
        facts.append(str(detail["role"]))
    if facts:
        parts.append(f" ({', '.join(facts)})")
    depths = detail.get("queue_depths")
    if isinstance(depths, dict) and depths:
        parts.append("; queue depths: " + ", ".join(f"{k}={v}" for k, v in depths.items()))
    return "".join(parts) + f"\n{message}"


def result_diagnostics(
    fr: FileResult,
    lines: list[str],
    *,
    encoding: str = types.PositionEncodingKind.Utf16,
    include_static: bool,
    first_divergent: types.Location | None = None,
    vs: str | None = None,
) -> list[types.Diagnostic]:
    """The diagnostics one validation result puts into its file (``vs``: the reference when not goldens)."""
    out: list[types.Diagnostic] = []
    related = [types.DiagnosticRelatedInformation(first_divergent, "first divergent pass")] if first_divergent is not None else None
    if fr.error is not None:
        e = fr.error
        if e.kind.startswith("static:") and not include_static:
            return out
        if e.kind.startswith("cross-core:"):
            message = _cross_core_message(e.kind, e.message, e.detail)
        elif e.kind in ("timeout", "TimeoutError"):
            message = f"timeout: {e.message}"
        elif e.kind.startswith("static:"):
            message = e.message
        else:
            message = f"{e.kind}: {e.message}" if not e.message.startswith(e.kind) else e.message
        out.append(
            types.Diagnostic(
                range=_error_range(fr, lines, encoding),
                message=message,
                severity=types.DiagnosticSeverity.Error,
                code=e.kind.removeprefix("static:"),
                source=SOURCE,
                related_information=related,
            )
        )
        return out
    if fr.status != FAIL:
        return out
    for name, t in fr.tensors.items():
        if t.passed:
            continue
        rel = "nan" if t.max_rel_diff is None or math.isnan(t.max_rel_diff) else f"{t.max_rel_diff:.2e}"
        message = (
            f"numeric mismatch in '{name}': max |Δ| {fmt_diff(t.max_abs_diff)}, max rel {rel} "
            f"exceed atol {fmt_tol(fr.atol)} + rtol {fmt_tol(fr.rtol)}·|expected|"
        )
        if vs:
            message += f" (expected: {vs})"
        if t.nan_count:
            message += f"; {t.nan_count} NaN in the output"
        spans = writes_for(fr, name) or [[1, 1]]
        for line, end_line in spans:
            out.append(
                types.Diagnostic(
                    range=statement_range(lines, line, end_line, encoding),
                    message=message + ("\nthis statement writes the output" if len(spans) > 1 else ""),
                    severity=types.DiagnosticSeverity.Error,
                    code="numeric-mismatch",
                    source=SOURCE,
                    related_information=related,
                )
            )
    return out


def no_golden_diagnostic(lines: list[str], encoding: str, where: str) -> types.Diagnostic:
    return types.Diagnostic(
        range=statement_range(lines, 1, 1, encoding),
        message=(
            f"no golden tensors for {where}: numeric validation is off for this folder. "
            "Add a pypto-lsp.toml [[cases]] entry (dumps, inputs, expected), put tensors.pt + expected.pt "
            "beside passes_dump/, or set pypto-lsp.golden.inputs/expected."
        ),
        severity=types.DiagnosticSeverity.Information,
        code="no-golden",
        source=SOURCE,
    )


def config_error_diagnostic(lines: list[str], encoding: str, message: str) -> types.Diagnostic:
    return types.Diagnostic(
        range=statement_range(lines, 1, 1, encoding),
        message=f"pypto-lsp configuration: {message}",
        severity=types.DiagnosticSeverity.Warning,
        code="config",
        source=SOURCE,
    )


__all__ = [
    "ERROR",
    "FAIL",
    "PASS",
    "RAN",
    "SOURCE",
    "config_error_diagnostic",
    "divergence_range",
    "fmt_diff",
    "fmt_time",
    "fmt_tol",
    "ir_diagnostic",
    "no_golden_diagnostic",
    "result_diagnostics",
    "statement_range",
    "verdict_titles",
    "writes_for",
]
