"""``textDocument/publishDiagnostics`` as you type: parse + static checks, debounced, in-process.

The ``ir`` layer is pure Python without torch, so this runs in the server itself (on a
thread of the pool, to keep the event loop free for hovers), ~150 ms after the last
keystroke, on a snapshot of the text. A parse whose document moved on meanwhile is
dropped; the next one is already scheduled.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ..ir import diagnostics as D
from ..ir.check import check_program
from ..ir.memory import check_memory
from ..ir.model import Program, split_lines
from ..ir.parser import parse_text
from .documents import text_hash
from .publish import publish

if TYPE_CHECKING:
    from .app import PyptoServer

DEBOUNCE_S = 0.15
log = logging.getLogger(__name__)


def parse_and_check(text: str, filename: str | None, entry: str | None) -> tuple[Program | None, list[D.Diagnostic]]:
    """Parse + static checks; never raises (an internal error becomes a diagnostic)."""
    try:
        res = parse_text(text, filename)
        diags = list(res.diagnostics)
        if res.program is not None:
            try:
                diags.extend(check_program(res.program, entry=entry))
                diags.extend(check_memory(res.program))  # capacity, bounds, tiles in pipe slots
            except Exception as exc:
                log.exception("check_program failed")
                diags.append(D.warning(None, "internal", f"static checks stopped: {type(exc).__name__}: {exc}"))
        diags.sort(key=lambda d: (d.span.line, d.span.col))
        return res.program, diags
    except RecursionError:
        return None, [D.error(None, "too-deep", "nesting is too deep to parse")]
    except Exception as exc:
        log.exception("parse failed")
        return None, [D.error(None, "internal", f"the parser failed: {type(exc).__name__}: {exc}")]


def schedule(ls: PyptoServer, uri: str) -> None:
    """Parse ``uri`` DEBOUNCE_S after the last call."""
    cancel(ls, uri)
    ls.parse_tasks[uri] = asyncio.ensure_future(_debounced(ls, uri))


def cancel(ls: PyptoServer, uri: str) -> None:
    t = ls.parse_tasks.pop(uri, None)
    if t is not None and not t.done():
        t.cancel()


async def _debounced(ls: PyptoServer, uri: str) -> None:
    await asyncio.sleep(DEBOUNCE_S)
    if await parse_now(ls, uri):
        from . import validation

        validation.after_parse(ls, uri)


async def parse_now(ls: PyptoServer, uri: str) -> bool:
    """Parse the current text of ``uri`` and publish; False when the document moved on."""
    st = ls.docs.get(uri)
    if st is None or not st.is_open:
        return False
    doc = ls.workspace.get_text_document(uri)
    text, version = doc.source, doc.version
    h = text_hash(text)
    if st.parsed_hash != h:
        entry = ls.config.get(st.path).entry if st.path is not None else None
        loop = asyncio.get_running_loop()
        program, diags = await loop.run_in_executor(ls.thread_pool, parse_and_check, text, str(st.path) if st.path else uri, entry)
        if ls.workspace.get_text_document(uri).version != version or not st.is_open:
            return False
        st.program, st.parse_diags, st.parsed_hash = program, diags, h
        st.parsed_lines = split_lines(text)
    st.parsed_version = version
    publish(ls, uri)
    return True


async def ensure_parsed(ls: PyptoServer, uri: str) -> None:
    """For requests (hover, lenses, ...): parse now if the last parse is older than the text."""
    st = ls.docs.get(uri)
    if st is None or not st.is_open:
        return
    for _ in range(3):
        if st.parsed_version == ls.workspace.get_text_document(uri).version and st.parsed_hash is not None:
            return
        t = ls.parse_tasks.get(uri)
        if t is not None and not t.done():
            t.cancel()  # the debounce is moot: someone is waiting for this parse
        if await parse_now(ls, uri):
            from . import validation

            validation.after_parse(ls, uri)
            return
