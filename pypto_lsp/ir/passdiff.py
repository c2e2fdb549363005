"""What a pass changed: the lines of a dump that differ from the previous pass's dump, and
whether it changed nothing (:func:`ir_unchanged`, the one definition the pass chart, the report
and the editor's pass tree all use).

When pass N is the first whose numbers diverge, the bug is almost always in a line
pass N changed. Memory-address annotations (``pl.MemRef(...)`` items, ``pl.tile.alloc``
lines) and comments are normalised away first, so address passes do not drown the
real edit. Text only: no torch, no LSP.
"""

from __future__ import annotations

import bisect
import difflib
import os
import re
from pathlib import Path

# a ``, pl.MemRef(...)`` type item (an optional ``[...]`` suffix included); shared with the result
# cache's normalisation (validate/folders.py): one definition of what an address annotation is
MEMREF_ITEM = re.compile(r",\s*pl\.MemRef\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)(?:\[[^\]]*\])?")
_ALLOC = re.compile(r"^\s*\w+: pl\.Ptr = pl\.tile\.alloc\(.*\)\s*$")
_PASS = re.compile(r"^\d+_after_(\w+)$")


def _normalised_lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("#") or _ALLOC.match(line):
            out.append("")
        else:
            out.append(MEMREF_ITEM.sub("", line).rstrip())
    return out


def ir_lines(text: str) -> list[str]:
    """The IR of a dump as its comparison sees it: comments, blank lines, ``pl.tile.alloc`` lines
    and ``pl.MemRef(...)`` items dropped, trailing spaces stripped."""
    return [x for x in _normalised_lines(text) if x]


def ir_unchanged(previous: str | None, current: str | None) -> bool:
    """Whether a pass left the IR as it was: ``current``'s :func:`ir_lines` equal ``previous``'s.
    False when either text is unknown (the first dump of a folder, an unreadable file)."""
    if previous is None or current is None:
        return False
    return ir_lines(previous) == ir_lines(current)


def changed_blocks(previous: str, current: str, limit: int = 40) -> list[tuple[int, int]]:
    """1-based inclusive line ranges of ``current`` that are new or changed against ``previous``.

    Blank (or normalised-to-blank) lines are never reported. At most ``limit`` blocks:
    a pass that rewrote the whole file says little about where a bug is.
    """
    a = _normalised_lines(previous)
    b = _normalised_lines(current)
    out: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag not in ("replace", "insert"):
            continue
        lines = [j for j in range(j1, j2) if b[j].strip()]
        if not lines:
            continue
        start = prev = lines[0]
        for j in lines[1:]:
            if j != prev + 1:
                out.append((start + 1, prev + 1))
                start = j
            prev = j
        out.append((start + 1, prev + 1))
        if len(out) > limit:
            return []
    return out


def line_diff(previous: str, current: str, context: int = 2) -> list[tuple[str, int | None, int | None, str]]:
    """What a pass changed, as lines to show: ``(tag, previous_line, current_line, text)`` with tag
    ``" "`` (context), ``"-"`` (gone), ``"+"`` (new) or ``"…"`` (lines skipped), 1-based line numbers
    of each file, the text as compared (comments, allocs and ``pl.MemRef`` items removed). Empty
    when the pass changed nothing the comparison sees."""
    a = _normalised_lines(previous)
    b = _normalised_lines(current)
    out: list[tuple[str, int | None, int | None, str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        if out:
            out.append(("…", None, None, ""))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend((" ", i + 1, j1 + (i - i1) + 1, a[i]) for i in range(i1, i2) if a[i])
                continue
            out.extend(("-", i + 1, None, a[i]) for i in range(i1, i2) if a[i])
            out.extend(("+", None, j + 1, b[j]) for j in range(j1, j2) if b[j])
    return out if any(t in "+-" for t, *_ in out) else []


def pass_name(path: Path) -> str:
    """``22_after_ExpandMixedKernel.py`` -> ``ExpandMixedKernel``; other names as they are."""
    m = _PASS.match(path.stem)
    return m.group(1) if m else path.stem


_NUMBER = re.compile(r"\d+")


def dump_order_key(name: str | Path) -> tuple[int, int, str]:
    """Pipeline order of dump file names: by the numeric prefix (``89_after_Y`` before
    ``1001_after_X``), then by name; names without a number come last."""
    s = name.name if isinstance(name, Path) else name
    m = _NUMBER.match(s)
    return (0, int(m.group()), s) if m else (1, 0, s)


# folder -> (its mtime_ns, the .py files in pipeline order, their order keys): a folder is
# listed once per change, not once per question (a folder run asks once per result)
_SIBLINGS: dict[Path, tuple[int, list[Path], list[tuple[int, int, str]]]] = {}


def previous_dump(path: Path) -> Path | None:
    """The dump before ``path`` in its folder, in pipeline order (see :func:`dump_order_key`)."""
    folder = path.parent
    try:
        mtime = folder.stat().st_mtime_ns
    except OSError:
        return None
    key = dump_order_key(path.name)
    hit = _SIBLINGS.get(folder)
    if hit is not None and hit[0] == mtime:
        i = bisect.bisect_left(hit[2], key)
        if i < len(hit[2]) and hit[2][i] == key:
            return hit[1][i - 1] if i > 0 else None
        hit = None  # a file new within the folder's timestamp granularity: list again
    if hit is None or hit[0] != mtime:
        try:
            with os.scandir(folder) as it:
                names = [e.name for e in it if e.name.endswith(".py") and e.is_file()]
        except OSError:
            return None
        names.sort(key=dump_order_key)
        if len(_SIBLINGS) > 64:
            _SIBLINGS.clear()
        hit = (mtime, [folder / n for n in names], [dump_order_key(n) for n in names])
        _SIBLINGS[folder] = hit
    i = bisect.bisect_left(hit[2], key)
    return hit[1][i - 1] if i > 0 else None
