"""``textDocument/publishDiagnostics``: one list per file, parse diagnostics + validation diagnostics.

Both sources are recomputed into one publish whenever either changes, so a new parse
never wipes a validation result (and the other way round). Closed files get a publish
only when they have something to show, or to clear what they showed before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from . import results as R

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
        out.extend(R.result_diagnostics(st.result, lines, encoding=enc, include_static=not st.is_open, first_divergent=fd))
    return out


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
