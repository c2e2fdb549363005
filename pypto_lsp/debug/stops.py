"""The stop policy: small predicates the session asks at every place the run can stop. Each says
whether (and why) the run stops there: a NaN, the first difference from the previous pass (the
rule localisation uses: :func:`pypto_lsp.validate.localize.differs_from_previous`), a new memory or
sanitizer finding, a step that is done."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch

from ..validate.localize import differs_from_previous
from .code import Code
from .state import Breakpoint, Thread, hit_condition_problem
from .threads import ORCH
from .values import numeric

__all__ = ["Reason", "nan_in", "first_difference", "new_finding", "step_done", "output_difference", "summary", "breakpoints"]


@dataclass(slots=True)
class Reason:
    """Why the run stops (the ``stopped`` event's description and text), and on which line."""

    description: str
    text: str
    line: int


def nan_in(bound: dict[str, Any], line: int) -> Reason | None:
    """A value just bound holding a NaN or an infinity."""
    for name, v in bound.items():
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            nv = numeric(v)
            bad = ~torch.isfinite(nv)
            if bool(bad.any()):
                n_nan = int(torch.isnan(nv).sum())
                return Reason("NaN / Inf", f"'{name}' holds {n_nan} NaN and {int(bad.sum()) - n_nan} Inf on line {line}", line)
        elif isinstance(v, float) and not math.isfinite(v):
            return Reason("NaN / Inf", f"'{name}' is {v} on line {line}", line)
    return None


def first_difference(bound: dict[str, Any], prev: dict[str, Any], line: int, rtol: float, atol: float, previous: str) -> Reason | None:
    """A value just bound that differs from its partner of the previous pass."""
    for name, pv in prev.items():
        a, b = numeric(bound[name]), numeric(pv)
        if a is None or b is None:
            continue
        d = differs_from_previous(a, b, rtol, atol)
        if d is not None:
            return Reason("first difference", f"'{name}' on line {line} differs from the previous pass {previous}: {d[1]}", line)
    return None


def new_finding(memory: Sequence[Any], seen_memory: int, sanitizer: Sequence[Any], seen_sanitizer: int, line: int) -> Reason | None:
    """The first memory finding (then sanitizer finding) after those seen already. The check runs
    when the value goes into its bytes, after its own hook: the finding is seen at the next
    statement, and shown on its own line."""
    if len(memory) > seen_memory:
        f0 = memory[seen_memory]
        return Reason(f"memory {f0.kind}", f"memory {f0.kind} on line {f0.line}: {f0.message}", f0.line or line)
    if len(sanitizer) > seen_sanitizer:
        h = sanitizer[seen_sanitizer]
        at = h.get("other_line") or h["line"]  # the access (an uninitialised read, a window)
        return Reason(f"sanitizer {h['kind']}", f"sanitizer {h['kind']} on line {at}: {h['message']}", at or line)
    return None


def step_done(step: tuple[str, int, int], th: Thread, frame: FrameType, depth: Callable[[Thread, FrameType], int]) -> bool:
    """Whether a step (kind, thread id, depth at its start) ends at this statement of ``th``."""
    kind, tid, start = step
    # the orchestration waits while a kernel runs: its next statement means the kernel is done
    kernel_done = tid != ORCH and th.id == ORCH
    if kind == "in":
        return th.id == tid or tid == ORCH or kernel_done
    if th.id == tid:
        d = depth(th, frame)
        return d <= start if kind == "next" else d < start
    return kernel_done


def output_difference(fr: Any, compared_with: str) -> Reason | None:
    """At the end of the run: the first output that differs from the goldens (on its last write)."""
    bad = [k for k, tr in fr.tensors.items() if not tr.passed]
    if not bad:
        return None
    k = bad[0]
    writes = fr.writes.get(k) or []
    line = writes[-1][0] if writes else 1
    tr = fr.tensors[k]
    return Reason("first difference", f"output '{k}' differs from {compared_with} (max |Δ| {tr.max_abs_diff:.4g})", line)


def summary(fr: Any) -> list[tuple[str, str]]:
    """The run's verdict as console lines (text, output category)."""
    out: list[tuple[str, str]] = []
    err = fr.error
    status = str(fr.status).upper()
    if err is not None:
        at = f" (line {err.line})" if err.line else ""
        out.append((f"{status}: {err.kind}{at}: {err.message}\n", "stderr"))
    else:
        out.append((f"{status}\n", "console"))
    for k, tr in fr.tensors.items():
        out.append((f"  {k}: {'close' if tr.passed else 'differs'} (max |Δ| {tr.max_abs_diff:.4g})\n", "console"))
    for h in (fr.memory or {}).get("hazards", []):
        out.append((f"  memory {h.get('kind')} on line {h.get('line')}: {h.get('message')}\n", "console"))
    return out


def breakpoints(code: Code, lines: list[tuple[int, str | None]]) -> tuple[dict[int, Breakpoint], list[dict[str, Any]]]:
    """Breakpoints on IR lines (by line) and the client's answer per requested line: a line with
    nothing to stop at moves to the next line that has in the same function (a decorator line: the
    function's first statement); an invalid hit condition leaves it unverified, with the reason."""
    ex = sorted(code.stop_lines)
    found: dict[int, Breakpoint] = {}
    out: list[dict[str, Any]] = []
    for i, (line, cond) in enumerate(lines):
        bid = i + 1
        k = bisect.bisect_left(ex, line)
        at = ex[k] if k < len(ex) else None
        if at is not None and at != line and not code.same_function(line, at):
            at = None
        if at is None:
            out.append({"id": bid, "verified": False, "line": line, "message": "no statement of the run on or after this line"})
            continue
        problem = hit_condition_problem(cond)
        if problem is not None:
            out.append({"id": bid, "verified": False, "line": at, "message": problem})
            continue
        found[at] = Breakpoint(bid, at, line, cond)
        out.append({"id": bid, "verified": True, "line": at})
    return found, out
