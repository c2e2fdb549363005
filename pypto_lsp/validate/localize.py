"""The first value a divergent pass computes differently from the pass before it.

A failing output is only seen where it is written; the wrong number is usually made
earlier. Given the first divergent pass and the passing pass before it, both run with
every assignment traced (IR name, line, AIV lane, SPMD block, and how often that name
was assigned before on that lane and block). The previous pass keeps a copy of each value
the next one can ask about; the next pass compares each value with its partner as it is
made and stops at the first one that is not close (``allclose`` at the validation
tolerances, over the valid region), which is reported with its line. Most passes keep
SSA names; a renamed value is paired through its source name when the rename is
unambiguous.

Names a pass introduced (or renamed ambiguously) have no partner and are skipped, and a
pass may legitimately change an intermediate that only its output must match; the report
says how many values were compared, and it is a place to look, not a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..exec import context
from ..exec.values import valid_box
from ..ir.model import Assign, walk_stmts
from .engine import compare, compile_text, run_text
from .report import FAIL, PASS, RAN, Report, ValueDivergence

# snapshots kept per traced run; past it, later values are not recorded (and the report says so)
TRACE_BUDGET_BYTES = 256 * 2**20
_RECORD_BYTES = 256  # a record, its key and a Python scalar, roughly


@dataclass(slots=True)
class _Record:
    name: str
    role: str | None  # "aic" / "aiv" inside a cross-core group
    lane: int
    lanes: int
    block: int
    line: int
    value: Any  # a detached copy of the valid region, or a Python scalar
    occurrence: int = 0  # earlier assignments of this name by the same role, lane and block


def _source_name(name: str) -> str:
    """The user's name inside a compiler-made one: passes append ``__<what>`` suffixes
    (``row_sum`` -> ``row_sum__ssa_v0`` in ConvertToSSA, ``t__tmp_v1`` -> ``t__tile_1`` in
    ConvertTensorToTileOps)."""
    head = name.split("__", 1)[0]
    return head or name


class _Hook:
    """A ``_pl_tr`` hook: counts each name's assignments per role, lane and SPMD block."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str | None, int, int], int] = {}

    def _occurrence(self, name: str) -> tuple[context.Ctx, int]:
        """Where this assignment runs, and how many of the same name ran there before it."""
        ctx = context.current()
        where = (name, ctx.role, ctx.lane, ctx.block_idx)
        n = self.counts.get(where, 0)
        self.counts[where] = n + 1
        return ctx, n


class _Trace(_Hook):
    """The ``_pl_tr`` hook of the previous pass's run: copies of the values worth keeping, in order."""

    def __init__(self, keep: set[str], budget: int) -> None:
        super().__init__()
        self.records: list[_Record] = []
        self.keep = keep  # names the current pass may ask about
        self.budget = budget
        self.truncated = False

    def __call__(self, value: Any, name: str, line: int) -> Any:
        if self.truncated or name not in self.keep:
            return value
        ctx, n = self._occurrence(name)
        snap = _numeric(value)
        if snap is None:
            return value
        # every record costs its bookkeeping too: an endless loop of scalar updates stops
        # being recorded at the budget instead of filling memory until the run times out
        size = _RECORD_BYTES + (snap.numel() * snap.element_size() if isinstance(snap, torch.Tensor) else 0)
        if size > self.budget:
            self.truncated = True
            return value
        self.budget -= size
        if isinstance(snap, torch.Tensor):
            snap = snap.detach().clone()  # the run may still write into it
        self.records.append(_Record(name, ctx.role, ctx.lane, ctx.lanes, ctx.block_idx, line, snap, n))
        return value


class _Stop(Exception):
    """Ends the current pass's run at the first value that differs (run_text reports it as an error)."""


class _Compare(_Hook):
    """The ``_pl_tr`` hook of the current pass's run: each value against its partner, as it is made."""

    def __init__(self, partner: dict[tuple[Any, ...], _Record], renamed: dict[str, str], rtol: float, atol: float) -> None:
        super().__init__()
        self.partner = partner
        self.renamed = renamed
        self.rtol = rtol
        self.atol = atol
        self.compared = 0
        self.found: ValueDivergence | None = None

    def __call__(self, value: Any, name: str, line: int) -> Any:
        if self.found is not None:
            raise _Stop  # a kernel of another lane carried on
        ctx, n = self._occurrence(name)
        other = self.partner.get((self.renamed.get(name, name), ctx.role, ctx.lane, ctx.block_idx, n))
        if other is None or other.lanes != ctx.lanes:
            return value
        cur = _numeric(value)
        if cur is None:
            return value
        self.compared += 1
        d = _differs(cur, other.value, self.rtol, self.atol)
        if d is None:
            return value
        self.found = ValueDivergence(
            line=line,
            name=name,
            occurrence=n,
            lane=ctx.lane,
            lanes=ctx.lanes,
            block=ctx.block_idx,
            previous_line=other.line,
            max_abs_diff=d[0],
            detail=d[1],
            compared=self.compared,
            truncated=False,
        )
        raise _Stop


def _numeric(value: Any) -> Any:
    """The valid region of a tensor, a Python number as it is, else None (tuples of task ids, None...)."""
    if isinstance(value, torch.Tensor):
        box = valid_box(value)
        return value[tuple(slice(0, e) for e in box)] if box != tuple(value.shape) else value
    if isinstance(value, bool | int | float):
        return value
    return None


def _assigned_names(text: str, filename: str, entry: str | None) -> set[str] | None:
    """Every name an assignment of the program binds (None: it does not compile)."""
    comp = compile_text(text, filename, entry, trace=True)
    if comp.program is None or comp.error is not None:
        return None
    return {s.target.name for f in comp.program.functions for s in walk_stmts(f.body) if isinstance(s, Assign)}


def _renames(prev_only: set[str], cur_only: set[str]) -> dict[str, str]:
    """Current name -> previous name, where one name of each pass alone has a source name."""
    prev_by: dict[str, list[str]] = {}
    cur_by: dict[str, list[str]] = {}
    for n in prev_only:
        prev_by.setdefault(_source_name(n), []).append(n)
    for n in cur_only:
        cur_by.setdefault(_source_name(n), []).append(n)
    return {c[0]: prev_by[src][0] for src, c in cur_by.items() if len(c) == 1 and len(prev_by.get(src, ())) == 1}


def _differs(cur: Any, prev: Any, rtol: float, atol: float) -> tuple[float, str] | None:
    """None when close; else (max abs diff or NaN, a short description)."""
    if isinstance(cur, torch.Tensor) != isinstance(prev, torch.Tensor):
        return None  # a scalar became a tensor (or back): a change of form, not of number
    if isinstance(cur, torch.Tensor):
        if tuple(cur.shape) != tuple(prev.shape) or cur.dtype != prev.dtype:
            return None  # reshaped or retyped by the pass: not comparable element by element
        if cur.numel() == 0:
            return None
        tr = compare(cur, prev, rtol, atol)
        if tr.passed:
            return None
        return tr.max_abs_diff, f"max |Δ| {tr.max_abs_diff:.4g}{_where_worst(cur, prev)}"
    a, b = float(cur), float(prev)
    if a == b or abs(a - b) <= atol + rtol * abs(b):
        return None
    return abs(a - b), f"{cur!r} instead of {prev!r}"


def _where_worst(cur: torch.Tensor, prev: torch.Tensor) -> str:
    """`` at [i, j] (x here, y before)``: the element that differs most, NaN first."""
    a = cur.detach().to(torch.float64)
    b = prev.detach().to(torch.float64)
    diff = torch.where(a == b, torch.zeros((), dtype=torch.float64), (a - b).abs())
    diff = torch.where(torch.isnan(diff), torch.full((), math.inf, dtype=torch.float64), diff)
    flat = int(torch.argmax(diff.reshape(-1)).item())
    idx = list(torch.unravel_index(torch.tensor(flat), tuple(a.shape))) if a.dim() else []
    at = f" at [{', '.join(str(int(i)) for i in idx)}]" if idx else ""
    return f"{at} ({a.reshape(-1)[flat].item():.6g} here, {b.reshape(-1)[flat].item():.6g} before)"


def _check_timeout(fr: Any) -> None:
    if fr.error is not None and fr.error.kind == "TimeoutError":
        raise TimeoutError(fr.error.message)  # its thread may still run: the caller decides what to do


def first_differing_value(
    previous_text: str,
    text: str,
    inputs: Mapping[str, torch.Tensor],
    *,
    rtol: float,
    atol: float,
    entry: str | None = None,
    timeout: float | None = None,
    previous_filename: str = "<previous>",
    filename: str = "<dump>",
) -> ValueDivergence | None:
    """The first assignment of ``text`` whose value is not close to its partner in ``previous_text``.

    None when every paired value is close (or nothing could be paired, or either program
    does not compile). Raises TimeoutError when a run overran ``timeout``.

    Pairing: by IR name, role, lane, SPMD block and occurrence, and only values computed
    by the same arrangement of lanes: where a pass splits work across AIV lanes (or makes
    the AIC/AIV kernels), a lane's intermediate is partial until its peer has run, so it is
    no partner for the unsplit value. A name only the current pass has is paired through a
    rename (`row_sum` -> `row_sum__ssa_v0`) when exactly one name of each pass, missing in
    the other, shares its source name; a new `kj__tile_t` beside `kj__tile` pairs with nothing.
    """
    prev_names = _assigned_names(previous_text, previous_filename, entry)
    cur_names = _assigned_names(text, filename, entry)
    if prev_names is None or cur_names is None:
        return None
    renamed = _renames(prev_names - cur_names, cur_names - prev_names)
    prev = _Trace((prev_names & cur_names) | set(renamed.values()), TRACE_BUDGET_BYTES)
    _check_timeout(run_text(previous_text, inputs, {}, filename=previous_filename, entry=entry, timeout=timeout, trace=prev))
    if not prev.records:
        return None
    cmp = _Compare({(r.name, r.role, r.lane, r.block, r.occurrence): r for r in prev.records}, renamed, rtol, atol)
    _check_timeout(run_text(text, inputs, {}, filename=filename, entry=entry, timeout=timeout, trace=cmp))
    if cmp.found is not None:
        cmp.found.truncated = prev.truncated
    return cmp.found


def localize_report(
    report: Report, inputs: Mapping[str, torch.Tensor], *, rtol: float, atol: float, entry: str | None, timeout: float | None
) -> ValueDivergence | None:
    """Fill ``report.first_differing_value`` when its first divergent pass fails right after a passing one."""
    fd = report.first_divergent
    if fd is None or fd.status != FAIL:
        return None
    i = report.files.index(fd)
    if i == 0 or report.files[i - 1].status not in (PASS, RAN):
        return None
    prev = report.files[i - 1]
    try:
        prev_text = Path(prev.file).read_text(encoding="utf-8")
        text = Path(fd.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        report.first_differing_value = first_differing_value(
            prev_text, text, inputs, rtol=rtol, atol=atol, entry=entry, timeout=timeout, previous_filename=prev.file, filename=fd.file
        )
    except TimeoutError:
        return None  # both passes ran within the timeout untraced; say nothing rather than guess
    return report.first_differing_value
