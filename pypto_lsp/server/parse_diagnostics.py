"""The diagnostics as you type: parse + static checks of one text, in-process (pure).

The ``ir`` layer is pure Python without torch, so this runs in the server itself: the core
(:meth:`.core.Core.parse_now`) calls it on a thread, to keep the event loop free for hovers,
~150 ms after the last keystroke, on a snapshot of the text. A parse whose document moved on
meanwhile is dropped; the next one is already scheduled.
"""

from __future__ import annotations

import logging

from ..ir import diagnostics as D
from ..ir.check import check_program
from ..ir.memory import check_memory
from ..ir.model import Program
from ..ir.parser import parse_text

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
