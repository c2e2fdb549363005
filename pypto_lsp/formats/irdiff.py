"""The report's "What each pass changed": every pass's IR against the pass before, as HTML.

Each pass's dump is diffed against the previous one as the comparison sees them
(:func:`ir.passdiff.line_diff`: comments, ``pl.tile.alloc`` lines and ``pl.MemRef`` items ignored).
On the diff are marked the first differing value (the localisation's line), the file's findings
(its error line, memory and sanitizer hazards) and, on the first divergent pass, the changed
lines the localisation names ("look there first"). Passes that changed nothing are collapsed
into one line; changed passes are folded (``<details>``), the first divergent one open. Plain
HTML and CSS, no script: it reads in any viewer, offline.
"""

from __future__ import annotations

import html
from pathlib import Path

from ..ir.passdiff import changed_blocks, line_diff, pass_name
from ..validate.report import Report, hazards_of

MAX_LINES = 400  # per pass: a pass that rewrote the whole file says little line by line

CSS = """
.irdiff details { margin: 4px 0; border: 1px solid var(--line); border-radius: 4px; }
.irdiff summary { cursor: pointer; padding: 3px 8px; }
.irdiff summary .tag { margin-left: 8px; }
.irdiff pre { margin: 0; padding: 4px 0; overflow-x: auto; font: 12px ui-monospace, monospace; }
.irdiff .ln { display: inline-block; width: 4.5em; color: var(--muted); text-align: right; padding-right: 6px; user-select: none; }
.irdiff .add { background: rgba(46,160,67,0.18); } .irdiff .del { background: rgba(248,81,73,0.18); }
.irdiff .skip { color: var(--muted); }
.irdiff .blamed { box-shadow: inset 3px 0 0 #d29922; }
.irdiff .finding { box-shadow: inset 3px 0 0 var(--bad); }
.irdiff .fdv { outline: 2px solid var(--bad); font-weight: 600; }
.irdiff .mark { font: 11px system-ui, sans-serif; color: var(--bad); margin-left: 8px; }
"""


def _read(path: str) -> str | None:
    from ..ir.parser import read_dump  # never more than the size limit

    try:
        return read_dump(path).decode("utf-8-sig", "replace")
    except OSError:
        return None


def _marks(report: Report, i: int, text: str, previous: str) -> tuple[dict[int, list[str]], set[int]]:
    """Line -> what is marked there (current file's lines), and the lines the localisation names."""
    fr = report.files[i]
    marks: dict[int, list[str]] = {}
    if fr.error is not None and fr.error.line:
        marks.setdefault(fr.error.line, []).append(f"{fr.error.kind}: {fr.error.message[:160]}")
    for h in hazards_of(fr):
        marks.setdefault(int(h["line"]), []).append(f"{h['kind']}: {h['message'][:160]}")
    blamed: set[int] = set()
    if fr is report.first_divergent:
        v = report.first_differing_value
        if v is not None:
            marks.setdefault(v.line, []).insert(0, f"first differing value: '{v.name}', {v.detail}")
        for a, b in changed_blocks(previous, text):
            blamed.update(range(a, b + 1))
    return marks, blamed


def _pass_diff(report: Report, i: int, previous: str, text: str) -> tuple[str, int]:
    """The diff's HTML and its number of changed lines (0: the pass changed nothing compared)."""
    rows = line_diff(previous, text)
    changed = sum(1 for t, *_ in rows if t in "+-")
    if not changed:
        return "", 0
    marks, blamed = _marks(report, i, text, previous)
    fdv_line = report.first_differing_value.line if report.files[i] is report.first_divergent and report.first_differing_value else None
    out: list[str] = []
    for n, (tag, old, new, line) in enumerate(rows):
        if n >= MAX_LINES:
            out.append(f"<div class='skip'>… {len(rows) - MAX_LINES} more lines</div>")
            break
        if tag == "…":
            out.append("<div class='skip'><span class='ln'>⋯</span></div>")
            continue
        cls = {"+": "add", "-": "del", " ": "ctx"}[tag]
        extra = ""
        if new is not None and tag != "-":
            if new in blamed:
                cls += " blamed"
            if new in marks:
                cls += " finding"
                extra = "".join(f"<span class='mark'>◀ {html.escape(m)}</span>" for m in marks[new])
            if new == fdv_line:
                cls += " fdv"
        ln = f"{old or ''}→{new}" if tag == " " else (str(new) if tag == "+" else str(old))
        out.append(f"<div class='{cls}' data-line='{new or ''}'><span class='ln'>{ln}</span>{html.escape(tag + ' ' + line)}{extra}</div>")
    return "<pre>" + "".join(out) + "</pre>", changed


def ir_diff_section(report: Report) -> str:
    """The section's HTML: a fold per changed pass, one line for the unchanged ones."""
    if len(report.files) < 2:
        return ""
    fd = report.first_divergent
    parts: list[str] = [
        "<h2>What each pass changed</h2><p class='muted'>Each pass's IR against the pass before (comments, "
        "<code>pl.tile.alloc</code> lines and <code>pl.MemRef</code> items ignored). Marked: the first differing value "
        "(outlined), findings (red edge), the changed lines the localisation names (amber edge).</p><div class='irdiff'>"
    ]
    unchanged: list[str] = []

    def flush() -> None:
        if unchanged:
            parts.append(f"<p class='muted'>unchanged: {html.escape(', '.join(unchanged))}</p>")
            unchanged.clear()

    texts = [_read(f.file) for f in report.files]
    for i in range(1, len(report.files)):
        fr, previous, text = report.files[i], texts[i - 1], texts[i]
        name = Path(fr.file).name
        if previous is None or text is None:
            flush()
            parts.append(f"<p class='muted'>{html.escape(name)}: cannot be read</p>")
            continue
        body, changed = _pass_diff(report, i, previous, text)
        if not changed:
            unchanged.append(pass_name(Path(fr.file)))
            continue
        flush()
        first = fr is fd
        tags = f"<span class='tag'>{fr.status}</span>" if fr.status in ("fail", "error") else ""
        tags += "<span class='tag'>first divergent</span>" if first else ""
        parts.append(
            f"<details id='irdiff-{i}'{' open' if first else ''}><summary>{html.escape(name)} · {changed} line(s) changed{tags}</summary>{body}</details>"
        )
    flush()
    parts.append("</div>")
    return "".join(parts)
