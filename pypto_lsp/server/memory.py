"""Memory findings in the editor: a diagnostic per finding, a lens at the top, bytes on hover.

The findings come with the worker's result (``FileResult.memory``, see
:mod:`pypto_lsp.exec.memory`); the hover reads the static plan of the parsed program
(:mod:`pypto_lsp.ir.memory`, no torch).
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types

from ..ir.memory import MemoryPlan, Site, plan_program
from ..ir.model import Program
from ..validate.report import FileResult, Hazard, hazards_of, related_lines
from . import results as R

CODE_PREFIX = "memory-"
# the sanitizer's kinds (exec.sanitizer, ir.initcheck): "sanitizer race: ..." in the editor
SANITIZER_KINDS = ("race", "uninitialised", "out-of-bounds", "fence", "undefined-read")  # fence: exec.rank_hazards
# --sanitize strict's reads that reach nothing: information, no lens, no failure
INFORMATION_KINDS = ("undefined-read",)
_RELATED = {
    "overwrite": "overwritten here",
    "race": "the other task",
    "uninitialised": "reads the undefined value first here",
    "undefined-read": "reads the undefined elements here (the values reach nothing that matters)",
    "fence": "the notify that releases it",
}


def _label(kind: object) -> str:
    return "sanitizer" if kind in SANITIZER_KINDS else "memory"


def hazards(fr: FileResult | None) -> list[Hazard]:
    return hazards_of(fr)


def memory_diagnostics(fr: FileResult, lines: list[str], uri: str, encoding: str, *, include_static: bool) -> list[types.Diagnostic]:
    """One error per finding on its line, the line it collides with as related information.

    Static findings of an open document already come with its parse diagnostics
    (``include_static=False`` leaves them out)."""
    out: list[types.Diagnostic] = []
    for h in hazards(fr):
        line = int(h.get("line") or 0)
        if not 0 < line <= len(lines):
            continue
        if not include_static and h.get("kind") in ("capacity", "bounds", "pipe-slot"):
            continue
        related = None
        other = h.get("other_line")
        what = _RELATED.get(str(h.get("kind")), "reserved here")
        for ln in related_lines(h):
            if 0 < ln <= len(lines):
                text = f"'{h.get('other_name')}' {what}" if ln == other else "the undefined value flows through here"
                related = (related or []) + [
                    types.DiagnosticRelatedInformation(types.Location(uri, R.statement_range(lines, ln, ln, encoding)), text)
                ]
        out.append(
            types.Diagnostic(
                range=R.statement_range(lines, line, line, encoding),
                message=f"{_label(h.get('kind'))} {h.get('kind')}: {h.get('message')}",
                severity=types.DiagnosticSeverity.Information if h.get("kind") in INFORMATION_KINDS else types.DiagnosticSeverity.Error,
                code=("sanitizer-" if h.get("kind") in SANITIZER_KINDS else CODE_PREFIX) + str(h.get("kind")),
                source=R.SOURCE,
                related_information=related,
            )
        )
    return out


def lens_title(fr: FileResult | None) -> tuple[str, int] | None:
    """``⚠ memory: up_acc__iter_v1 overwritten at line 68`` and the line to reveal (1-based)."""
    hs = [h for h in hazards(fr) if h.get("kind") not in INFORMATION_KINDS]
    if not hs:
        return None
    h = hs[0]
    more = f" (+{len(hs) - 1} more)" if len(hs) > 1 else ""
    kind = h.get("kind")
    if kind == "overwrite":
        return f"⚠ memory: {h['name']} overwritten at line {h.get('other_line')}{more}", int(h["line"])
    if kind == "race":
        return f"⚠ race: {h.get('tensor') or h['name']} between line {h.get('other_line')} and line {h['line']}{more}", int(h["line"])
    if kind == "uninitialised":
        return f"⚠ uninitialised: {h['name']} read at line {h.get('other_line')} before any write{more}", int(h["line"])
    if kind == "pipe-slot":
        return f"⚠ memory: {h['name']} inside pipe buffer {h.get('other_name')} (line {h['line']}){more}", int(h["line"])
    return f"⚠ {_label(kind)} {kind}: {h['name']} (line {h['line']}){more}", int(h["line"])


def finding_hover(fr: FileResult | None, line0: int) -> str | None:
    """The sanitizer's findings on (or pointing at) a line of the last run, as hover text."""
    rows = []
    for h in hazards(fr):
        kind = h.get("kind")
        if kind not in SANITIZER_KINDS:
            continue
        here, other = h.get("line"), h.get("other_line")
        if here == line0 + 1:
            rows.append(f"**sanitizer {kind}**: {h.get('message')}")
        elif other == line0 + 1:
            rows.append(f"**sanitizer {kind}** (the finding is on line {here}): {h.get('message')}")
    if not rows:
        return None
    return "\n\n".join(rows[:4]) + ("\n\n…" if len(rows) > 4 else "")


_WORD = re.compile(r"[A-Za-z_]\w*")


def hover_text(program: Program, line0: int, col0: int, lines: list[str], cache: dict[str, Any]) -> str | None:
    """For a placed tile under the cursor: its space, byte range and who else lives there."""
    if not 0 <= line0 < len(lines):
        return None
    word = next((m.group() for m in _WORD.finditer(lines[line0]) if m.start() <= col0 <= m.end()), None)
    if word is None:
        return None
    if cache.get("program") is not program:
        cache.clear()
        cache["program"], cache["plan"] = program, plan_program(program)
    plan: MemoryPlan = cache["plan"]
    for fp in plan.functions.values():
        mine = [s for s in fp.sites.values() if s.name == word]
        if not mine:
            continue
        s = mine[0]
        where = "address" if plan.addressed else "buffer (before AllocateMemoryAddr: virtual addresses)"
        text = f"**memory** · {s.space} on the {fp.core} · bytes [{s.start}, {s.start + s.nbytes}) ({s.nbytes} B, {where})"
        sharing = [o for o in fp.sites.values() if o is not s and o.space == s.space and _overlap(o, s)]
        if sharing:
            names = ", ".join(f"`{o.name}` (line {o.line})" for o in sorted(sharing, key=lambda o: o.line)[:12])
            text += f"\n\nshares bytes with: {names}"
        for r in fp.reserves:
            if r.placed and r.space == s.space and r.start < s.start + s.nbytes and s.start < r.start + r.size:
                text += f"\n\n⚠ inside pipe buffer `{r.name}` [{r.start}, {r.start + r.size}) (line {r.line})"
        return text
    return None


def _overlap(a: Site, b: Site) -> bool:
    return a.start < b.start + b.nbytes and b.start < a.start + a.nbytes
