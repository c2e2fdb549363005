"""``textDocument/publishDiagnostics``: one list per file, parse diagnostics + validation diagnostics.

Both sources are recomputed into one publish whenever either changes, so a new parse
never wipes a validation result (and the other way round). Closed files get a publish
only when they have something to show, or to clear what they showed before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..ir.passdiff import changed_blocks, pass_name, previous_dump
from ..validate.report import ERROR, FAIL, PASS, RAN
from . import memory as M
from . import results as R
from .documents import DocState

if TYPE_CHECKING:
    from .app import PyptoServer


def diagnostics_for(ls: PyptoServer, uri: str) -> list[types.Diagnostic]:
    st = ls.docs.get(uri)
    if st is None:
        return []
    enc = ls.position_encoding
    out: list[types.Diagnostic] = []
    if st.is_open:
        out.extend(R.ir_diagnostic(d, st.parsed_lines, enc) for d in st.parse_diags)
    lines = st.result_lines or st.parsed_lines
    if st.config_error:
        out.append(R.config_error_diagnostic(lines, enc, st.config_error))
    elif st.no_golden:
        out.append(R.no_golden_diagnostic(lines, enc, str(st.path.parent) if st.path else uri))
    elif st.result is not None:
        fd = ls.first_divergent_location(uri)
        vs = ls.config.get(st.path).compared_label if st.path is not None else None
        out.extend(R.result_diagnostics(st.result, lines, encoding=enc, include_static=not st.is_open, first_divergent=fd, vs=vs))
        out.extend(M.memory_diagnostics(st.result, lines, uri, enc, include_static=not st.is_open))
        out.extend(changed_by_pass(ls, st, lines, enc))
        out.extend(first_differing_value(ls, st, lines, enc))
    return out


def first_differing_value(ls: PyptoServer, st: DocState, lines: list[str], enc: str) -> list[types.Diagnostic]:
    """On the first divergent pass: the first value that differs from the previous pass's run."""
    loc = st.divergence
    if loc is None or loc.key[0] != st.result_hash or loc.value is None or not 0 < loc.value.line <= len(lines):
        return []
    v, prev_path = loc.value, loc.previous
    prev_uri = prev_path.as_uri()
    prev = ls.docs.get(prev_uri)
    prev_lines = prev.result_lines if prev is not None and prev.result_lines else []
    related = None
    if 0 < v.previous_line <= len(prev_lines):
        related = [
            types.DiagnosticRelatedInformation(
                types.Location(prev_uri, R.statement_range(prev_lines, v.previous_line, v.previous_line, enc)),
                f"'{v.name}' as {prev_path.name} computes it",
            )
        ]
    for r in v.related:  # the next candidates, in this file
        if 0 < r.line <= len(lines):
            related = (related or []) + [
                types.DiagnosticRelatedInformation(
                    types.Location(st.uri, R.statement_range(lines, r.line, r.line, enc)), f"also a candidate: '{r.name}', {r.detail}"
                )
            ]
    return [
        types.Diagnostic(
            range=R.statement_range(lines, v.line, v.line, enc),
            message=v.describe(prev_path.name) + ": the wrong number is probably made here",
            severity=types.DiagnosticSeverity.Warning,
            code="first-differing-value",
            source=R.SOURCE,
            related_information=related,
        )
    ]


def changed_by_pass(ls: PyptoServer, st: DocState, lines: list[str], enc: str) -> list[types.Diagnostic]:
    """On the first divergent pass (this one fails, the previous one passed): what this pass changed.

    The bug is almost always on one of these lines, while the mismatch itself is only seen
    where the output is written.
    """
    if st.result is None or st.result.status not in (FAIL, ERROR) or st.path is None:
        return []
    prev_path = previous_dump(st.path)
    if prev_path is None:
        return []
    prev = ls.docs.get(prev_path.as_uri())
    if prev is None or prev.result is None or prev.result.status not in (PASS, RAN):
        return []
    key = (st.result_hash, prev.result_hash, prev_path.name)
    cached = _CHANGED.get(st.uri)
    if cached is not None and cached[0] == key:
        blocks = cached[1]
    else:
        try:
            prev_text = (
                "\n".join(prev.parsed_lines)
                if prev.is_open and prev.parsed_lines
                else prev_path.read_text(encoding="utf-8", errors="replace")
            )
        except OSError:
            return []
        blocks = changed_blocks(prev_text, "\n".join(lines))
        _CHANGED[st.uri] = (key, blocks)
    name = pass_name(st.path)
    return [
        types.Diagnostic(
            range=R.statement_range(lines, a, b, enc),
            message=f"changed by {name}, the first pass whose numbers diverge ({prev_path.name} passes): a likely place for the bug",
            severity=types.DiagnosticSeverity.Information,
            code="changed-in-divergent-pass",
            source=R.SOURCE,
        )
        for a, b in blocks
    ]


_CHANGED: dict[str, tuple[tuple[object, ...], list[tuple[int, int]]]] = {}


def publish(ls: PyptoServer, uri: str) -> None:
    st = ls.docs.get(uri)
    if st is None:
        return
    diags = diagnostics_for(ls, uri)
    if not diags and not st.is_open and uri not in ls.published:
        return
    if diags:
        ls.published.add(uri)
    else:
        ls.published.discard(uri)
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=st.version if st.is_open else None)
    )
