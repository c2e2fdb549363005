"""``textDocument/hover``: type, shape, dtype and memory space of a variable, op docs, last-run value stats.

The language logic lives in :mod:`..hover_text` (plain strings from the IR); this module
only converts positions and wraps the Markdown. It answers from the last parse and the
last result held in memory, never waiting for a run, so it stays fast while the worker
is busy.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from ...ir.model import Program, entry_function
from .. import hover_text as HOVER
from ..convert import server_position
from ..core import Core
from ..lsp import PyptoServer
from ..memory import finding_hover
from ..memory import hover_text as memory_hover


def value_stats(program: Program, stats: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]] | None:
    """Last-run stats by golden key, also under the entry's parameter names (``out__ssa_v0`` -> ``out``)."""
    if not stats:
        return None
    out = dict(stats)
    entry = entry_function(program)
    if entry is not None:
        for p in entry.params:
            for key in (p.name, p.name.split("__ssa_v")[0], p.name.split("__")[0]):
                if key in stats:
                    out.setdefault(p.name, stats[key])
                    break
    return out


def register(ls: PyptoServer, core: Core) -> None:
    memory_plans: dict[str, Any] = {}  # the last hovered program and its memory plan

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        doc = await core.parsed(uri)
        if doc is None:
            return None
        program = doc.program
        line0, col0 = server_position(doc.lines, params.position, ls.position_encoding)
        stats = value_stats(program, doc.result.stats if doc.result is not None else None)
        try:
            text = HOVER.hover_text(program, line0, col0, stats, index=doc.index)
        except Exception as exc:
            ls.log(f"hover failed at {uri}:{line0 + 1}:{col0 + 1}: {type(exc).__name__}: {exc}")
            return None
        try:
            mem = memory_hover(program, line0, col0, doc.lines, memory_plans)
        except Exception as exc:
            ls.log(f"memory hover failed at {uri}:{line0 + 1}: {type(exc).__name__}: {exc}")
            mem = None
        if mem:
            text = f"{text}\n\n---\n\n{mem}" if text else mem
        found = finding_hover(doc.result, line0)
        if found:
            text = f"{found}\n\n---\n\n{text}" if text else found
        if not text:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
