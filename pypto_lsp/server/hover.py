"""``textDocument/hover``: type, shape, dtype and memory space of a variable, op docs, last-run value stats.

The language logic lives in :mod:`.navigation` (plain strings from the IR); this module
only converts positions and wraps the Markdown. It answers from the last parse and the
last result held in memory, never waiting for a run, so it stays fast while the worker
is busy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ..ir.model import Program, entry_function
from .documents import from_client_col
from .parse_diagnostics import ensure_parsed

try:
    from . import navigation as NAV
except ImportError:  # pragma: no cover - navigation lands separately
    NAV = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from .app import PyptoServer


def index_for(ls: PyptoServer, uri: str) -> tuple[Program | None, Any]:
    """The last parsed program of ``uri`` and its symbol index (built once per parse)."""
    st = ls.docs.get(uri)
    if st is None or not st.is_open or st.program is None:
        return None, None
    if NAV is None:
        return st.program, None
    if st.nav_index is None or st.nav_program is not st.program:
        st.nav_index = NAV.SymbolIndex.build(st.program)
        st.nav_program = st.program
    return st.program, st.nav_index


def server_position(ls: PyptoServer, uri: str, pos: types.Position) -> tuple[int, int]:
    st = ls.docs.get(uri)
    lines = st.parsed_lines if st is not None else []
    line = lines[pos.line] if 0 <= pos.line < len(lines) else ""
    return pos.line, from_client_col(line, pos.character, ls.position_encoding)


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


_MEMORY_PLANS: dict[str, Any] = {}  # the last hovered program and its memory plan


def register(ls: PyptoServer) -> None:
    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        await ensure_parsed(ls, uri)
        program, index = index_for(ls, uri)
        if program is None or NAV is None:
            return None
        line0, col0 = server_position(ls, uri, params.position)
        st = ls.docs.get(uri)
        stats = value_stats(program, st.result.stats if st is not None and st.result is not None else None)
        try:
            text = NAV.hover_text(program, line0, col0, stats, index=index)
        except Exception as exc:
            ls.log(f"hover failed at {uri}:{line0 + 1}:{col0 + 1}: {type(exc).__name__}: {exc}")
            return None
        try:
            from .memory import hover_text as memory_hover

            mem = memory_hover(program, line0, col0, st.parsed_lines if st is not None else [], _MEMORY_PLANS)
        except Exception as exc:
            ls.log(f"memory hover failed at {uri}:{line0 + 1}: {type(exc).__name__}: {exc}")
            mem = None
        if mem:
            text = f"{text}\n\n---\n\n{mem}" if text else mem
        if not text:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
