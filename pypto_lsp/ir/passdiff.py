"""What a pass changed: the lines of a dump that differ from the previous pass's dump.

When pass N is the first whose numbers diverge, the bug is almost always in a line
pass N changed. Memory-address annotations (``pl.MemRef(...)`` items, ``pl.tile.alloc``
lines) and comments are normalised away first, so address passes do not drown the
real edit. Text only: no torch, no LSP.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

# a ``, pl.MemRef(...)`` type item (an optional ``[...]`` suffix included); shared with the result
# cache's normalisation (validate/run.py): one definition of what an address annotation is
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


def pass_name(path: Path) -> str:
    """``22_after_ExpandMixedKernel.py`` -> ``ExpandMixedKernel``; other names as they are."""
    m = _PASS.match(path.stem)
    return m.group(1) if m else path.stem


def previous_dump(path: Path) -> Path | None:
    """The dump before ``path`` in its folder, in pipeline (file-name) order."""
    try:
        siblings = sorted(p for p in path.parent.iterdir() if p.suffix == ".py" and p.is_file())
    except OSError:
        return None
    earlier = [p for p in siblings if p.name < path.name]
    return earlier[-1] if earlier else None
