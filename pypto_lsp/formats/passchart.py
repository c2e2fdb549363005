"""Where in the pipeline: the pass chart's data (max |Δ| per pass and output tensor). No torch.

Built from file results as JSON (``FileResult.to_json()``, or what the worker sends), so the
CLI report, the worker and the language server share it. A pass whose IR did not change from
the pass before (comments and memory-address annotations ignored, see :mod:`..ir.passdiff`)
is ``unchanged`` (:func:`..ir.passdiff.ir_unchanged`); an error is a distinct mark; a result's optional ``memory`` field
(``{"checked": bool, "hazards": [...]}``, from the memory model when there is one) is passed
on as a count and the first hazard's text, and never required.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..ir.passdiff import ir_lines, pass_name


def _finite(x: Any) -> float | None:
    if not isinstance(x, int | float) or isinstance(x, bool) or math.isnan(x):
        return None
    return float(x)


def _memory(d: Mapping[str, Any]) -> dict[str, Any] | None:
    mem = d.get("memory")
    if not isinstance(mem, Mapping):
        return None
    hazards = mem.get("hazards")
    hz = list(hazards) if isinstance(hazards, Sequence) and not isinstance(hazards, str) else []
    first = hz[0] if hz else None
    if isinstance(first, Mapping):
        first = first.get("message") or first.get("kind") or str(dict(first))
    return {"checked": bool(mem.get("checked", False)), "hazards": len(hz), "first": None if first is None else str(first)[:300]}


def pass_chart(
    files: Sequence[Mapping[str, Any]],
    first_divergent: str | None = None,
    texts: Mapping[str, str] | None = None,
    folder: str | None = None,
) -> dict[str, Any]:
    """The chart's data for ``files`` (file results as JSON, in pipeline order).

    ``texts``: dump text by file (read from disk when missing, for ``unchanged``).
    ``first_divergent``: the first failing/erroring file (default: found here).
    """
    passes: list[dict[str, Any]] = []
    points: list[dict[str, Any]] = []
    tensors: list[str] = []
    prev_lines: list[str] | None = None
    rtol = atol = None
    fd = first_divergent
    for i, d in enumerate(files):
        file = str(d.get("file", ""))
        status = str(d.get("status", ""))
        if fd is None and status in ("fail", "error"):
            fd = file
        text = texts.get(file) if texts is not None else None
        if text is None:
            try:
                from ..ir.parser import read_dump  # never more than the size limit

                text = read_dump(file).decode("utf-8-sig")
            except (OSError, UnicodeDecodeError):
                text = None
        lines = ir_lines(text) if text is not None else None  # ir_unchanged, each text normalised once
        unchanged = lines is not None and prev_lines is not None and lines == prev_lines
        prev_lines = lines
        rtol = d.get("rtol", rtol)
        atol = d.get("atol", atol)
        err = d.get("error")
        stem = Path(file).stem
        pn = pass_name(Path(file))
        label = f"{stem.split('_', 1)[0]} {pn}" if pn != stem else stem
        entry: dict[str, Any] = {
            "index": i,
            "file": file,
            "name": stem,
            "label": label,
            "status": status,
            "unchanged": unchanged,
            "first_divergent": False,
            "error": {"kind": err.get("kind"), "message": str(err.get("message", ""))[:500], "line": err.get("line")}
            if isinstance(err, Mapping)
            else None,
            "memory": _memory(d),
            "seconds": _finite(d.get("seconds")),
            "cached": bool(d.get("cached", False)),
        }
        tmax: float | None = None
        for name, t in (d.get("tensors") or {}).items():
            if name not in tensors:
                tensors.append(name)
            m = _finite(t.get("max_abs_diff")) if isinstance(t, Mapping) else None
            ok = bool(t.get("pass")) if isinstance(t, Mapping) else False
            points.append(
                {
                    "index": i,
                    "label": label,
                    "file": file,
                    "tensor": name,
                    "max_abs_diff": m,
                    "passed": ok,
                    "status": status,
                    "unchanged": unchanged,
                }
            )
            if m is not None:
                tmax = m if tmax is None else max(tmax, m)
        entry["max_abs_diff"] = tmax
        passes.append(entry)
    fd_index = None
    for p in passes:
        if fd is not None and p["file"] == fd:
            p["first_divergent"] = True
            fd_index = p["index"]
    return {
        "folder": folder,
        "rtol": rtol,
        "atol": atol,
        "tensors": tensors,
        "passes": passes,
        "points": points,
        "first_divergent": fd,
        "first_divergent_index": fd_index,
        "counts": {s: sum(1 for p in passes if p["status"] == s) for s in ("pass", "fail", "error", "ran")},
    }
