"""The second sweep's cases (issue 27) start from the repo's own examples/ (a clean clone runs them)."""

from __future__ import annotations

import shutil
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LOOP = "            for r in pl.range(0, 64, 32):"


def example(root: Path, name: str = "elementwise") -> Path:
    """A copy of ``examples/<name>`` (dumps, goldens, pypto-lsp.toml) under ``root``."""
    dst = root / name
    shutil.copytree(EXAMPLES / name, dst)
    return dst


def slow_case(root: Path, n: int = 4, iterations: int = 9000) -> Path:
    """``examples/elementwise`` whose folder holds ``n`` distinct dumps of the frontend, each
    repeating its loop ``iterations`` times (+ its index: distinct texts, so none is a cache
    hit): about a second per 3000 iterations under ``--exact``."""
    case = example(root)
    src = (case / "passes_dump" / "00_frontend.py").read_text()
    for f in (case / "passes_dump").iterdir():
        f.unlink()
    lines = src.split("\n")
    at = lines.index(LOOP)
    for i in range(n):
        body = [
            *lines[:at],
            f"            for k in pl.range({iterations + i}):",
            *("    " + x for x in lines[at : at + 5]),
            *lines[at + 5 :],
        ]
        name = "00_frontend.py" if i == 0 else f"{i:02d}_after_Pass{i}.py"
        (case / "passes_dump" / name).write_text("\n".join(body))
    return case
