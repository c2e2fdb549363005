"""A document's diagnostics as a pure function of its :class:`.documents.DocView`.

One list per file from both sources -- parse diagnostics and validation diagnostics --
recomputed whenever either changes, so a new parse never wipes a validation result (and the
other way round). :meth:`.lsp.PyptoServer.publish` sends it.
"""

from __future__ import annotations

from lsprotocol import types

from ..ir.passdiff import pass_name
from ..validate.config import ConfigWarning
from . import memory as M
from . import results as R
from .documents import DocView


def diagnostics_for(v: DocView, enc: str) -> list[types.Diagnostic]:
    out: list[types.Diagnostic] = []
    if v.is_open:
        out.extend(R.ir_diagnostic(d, v.parsed_lines, enc, v.uri) for d in v.parse_diags)
    lines = v.lines
    if v.config_error:
        out.append(R.config_error_diagnostic(lines, enc, v.config_error))
    elif v.no_golden:
        out.append(R.no_golden_diagnostic(lines, enc, str(v.path.parent) if v.path else v.uri))
    elif v.result is not None:
        fd = v.first_divergent
        loc = types.Location(fd.uri, R.divergence_range(fd.result, fd.lines, enc)) if fd is not None and fd.result is not None else None
        out.extend(
            R.result_diagnostics(v.result, lines, encoding=enc, include_static=not v.is_open, first_divergent=loc, vs=v.compared_label)
        )
        out.extend(M.memory_diagnostics(v.result, lines, v.uri, enc, include_static=not v.is_open))
        out.extend(changed_by_pass(v, lines, enc))
        out.extend(first_differing_value(v, lines, enc))
    return out


def first_differing_value(v: DocView, lines: list[str], enc: str) -> list[types.Diagnostic]:
    """On the first divergent pass: the first value that differs from the previous pass's run."""
    loc = v.divergence
    if loc is None or loc.key[0] != v.result_hash or loc.value is None or not 0 < loc.value.line <= len(lines):
        return []
    val, prev_path = loc.value, loc.previous
    prev = v.divergence_previous
    prev_uri = prev.uri if prev is not None else prev_path.as_uri()
    prev_lines = prev.lines if prev is not None and prev.lines else []
    related = None
    if 0 < val.previous_line <= len(prev_lines):
        related = [
            types.DiagnosticRelatedInformation(
                types.Location(prev_uri, R.statement_range(prev_lines, val.previous_line, val.previous_line, enc)),
                f"'{val.name}' as {prev_path.name} computes it",
            )
        ]
    for r in val.related:  # the next candidates, in this file
        if 0 < r.line <= len(lines):
            related = (related or []) + [
                types.DiagnosticRelatedInformation(
                    types.Location(v.uri, R.statement_range(lines, r.line, r.line, enc)), f"also a candidate: '{r.name}', {r.detail}"
                )
            ]
    return [
        types.Diagnostic(
            range=R.statement_range(lines, val.line, val.line, enc),
            message=val.describe(prev_path.name) + ": the wrong number is probably made here",
            severity=types.DiagnosticSeverity.Warning,
            code="first-differing-value",
            source=R.SOURCE,
            related_information=related,
        )
    ]


def changed_by_pass(v: DocView, lines: list[str], enc: str) -> list[types.Diagnostic]:
    """On the first divergent pass (this one fails, the previous one passed): what this pass changed.

    The bug is almost always on one of these lines, while the mismatch itself is only seen
    where the output is written.
    """
    if v.previous is None or v.path is None:
        return []
    name = pass_name(v.path)
    return [
        types.Diagnostic(
            range=R.statement_range(lines, a, b, enc),
            message=f"changed by {name}, the first pass whose numbers diverge ({v.previous.path.name} passes): a likely place for the bug",
            severity=types.DiagnosticSeverity.Information,
            code="changed-in-divergent-pass",
            source=R.SOURCE,
        )
        for a, b in v.changed_blocks
    ]


def config_warning_diagnostics(warnings: list[ConfigWarning], lines: list[str]) -> list[types.Diagnostic]:
    """Unknown keys of a config file, each on its key."""
    diags = []
    for w in warnings:
        text = lines[w.line - 1] if 0 < w.line <= len(lines) else ""
        start = max(text.find(w.key), 0)
        end = start + len(w.key) if w.key in text else len(text)
        diags.append(
            types.Diagnostic(
                range=types.Range(types.Position(w.line - 1, start), types.Position(w.line - 1, end)),
                message=w.message,
                severity=types.DiagnosticSeverity.Warning,
                code="unknown-config-key",
                source=R.SOURCE,
            )
        )
    return diags
