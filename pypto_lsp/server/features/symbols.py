"""``textDocument/documentSymbol``: the outline: functions (with their kind), nested loops, ifs and scopes.

Hierarchical ``DocumentSymbol``s from :func:`pypto_lsp.ir.symbols.document_symbols`.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from ...ir import symbols as SYM
from ...ir.model import Span
from ..convert import span_to_range
from ..core import Core
from ..lsp import PyptoServer

_KIND = {
    "function": types.SymbolKind.Function,
    "loop": types.SymbolKind.Namespace,
    "scope": types.SymbolKind.Module,
    "if": types.SymbolKind.Operator,
    "variable": types.SymbolKind.Variable,
}


def _contains(outer: Span, inner: Span) -> bool:
    return (outer.line, outer.col) <= (inner.line, inner.col) and (inner.end_line, inner.end_col) <= (outer.end_line, outer.end_col)


def _symbol(info: Any, lines: list[str], encoding: str) -> types.DocumentSymbol:
    span: Span = info.span
    sel: Span = info.selection
    if not _contains(span, sel):  # LSP wants the selection inside the range
        span = Span(
            min(span.line, sel.line),
            span.col if span.line < sel.line else min(span.col, sel.col),
            max(span.end_line, sel.end_line),
            span.end_col if span.end_line > sel.end_line else max(span.end_col, sel.end_col),
        )
    return types.DocumentSymbol(
        name=info.name or "?",
        kind=_KIND.get(info.kind, types.SymbolKind.Object),
        detail=info.detail or None,
        range=span_to_range(lines, span, encoding),
        selection_range=span_to_range(lines, sel, encoding),
        children=[_symbol(c, lines, encoding) for c in info.children] or None,
    )


def register(ls: PyptoServer, core: Core) -> None:
    @ls.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(params: types.DocumentSymbolParams) -> list[types.DocumentSymbol] | None:
        doc = await core.parsed(params.text_document.uri)
        if doc is None:
            return None
        try:
            infos = SYM.document_symbols(doc.program)
        except Exception as exc:
            ls.log(f"documentSymbol failed: {type(exc).__name__}: {exc}")
            return None
        return [_symbol(i, doc.lines, ls.position_encoding) for i in infos]
