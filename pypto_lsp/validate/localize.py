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
from typing import Any

import torch

from ..exec import context
from ..exec.trace_hooks import CALL, LoopCounter
from ..exec.values import DTYPES, valid_box
from ..ir.model import stmt_targets
from .engine import compare, compile_text, over_tolerance, run_text, scalars_close
from .report import FAIL, PASS, RAN, Report, ValueDivergence

# snapshots kept per traced run; past it, later values are not recorded (and the report says so)
TRACE_BUDGET_BYTES = 256 * 2**20
_RECORD_BYTES = 256  # a record, its key and a Python scalar, roughly
_MAX_RAN = 1_000_000  # loop/if executions remembered per traced run
_FURTHER = 64  # values compared past twice the first cause's before the run stops looking for more
_LOOP = "loop "  # counter keys of loops and ifs, apart from value names
_IF = "if: "
_LATE_KINDS = ("count", "valid")  # provisional events that count once the outputs differ


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
    shape: tuple[int, ...] | None = None  # a tensor's whole shape (its valid region is ``value``'s)


def _source_name(name: str) -> str:
    """The user's name inside a compiler-made one: passes append ``__<what>`` suffixes
    (``row_sum`` -> ``row_sum__ssa_v0`` in ConvertToSSA, ``t__tmp_v1`` -> ``t__tile_1`` in
    ConvertTensorToTileOps)."""
    head = name.split("__", 1)[0]
    return head or name


def place(ctx: context.Ctx) -> tuple[str | None, int, Any]:
    """Where a value is made, for pairing it with its partner of the previous pass: the role
    ("aic" / "aiv" inside a cross-core group), the AIV lane and the SPMD block, with the rank of
    a multi-rank program (each rank's values are its own: rank r's value is compared with rank
    r's, whatever order the ranks ran in). An assignment's occurrences are counted per place.
    The debugger's previous-pass values use the same key (``pypto_lsp.debug``)."""
    return ctx.role, ctx.lane, ctx.block_idx if ctx.rank is None else (ctx.rank, ctx.block_idx)


class _Hook:
    """The trace hooks of one run (:mod:`pypto_lsp.exec.trace_hooks`): each name's assignments,
    each loop's runs and each if's executions counted per role, lane and SPMD block."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str | None, int, Any], int] = {}

    def _occurrence(self, name: str) -> tuple[context.Ctx, int]:
        """Where this assignment runs, and how many of the same name ran there before it."""
        ctx = context.current()
        where = (name, *place(ctx))
        n = self.counts.get(where, 0)
        self.counts[where] = n + 1
        return ctx, n

    def write(self, value: Any, _names: tuple[str, ...], _line: int, _ops: tuple[str, ...] = ()) -> Any:
        return value

    def __call__(self, value: Any, name: str, line: int, ops: tuple[str, ...] = ()) -> Any:
        return value

    def carry(self, value: Any, name: str, line: int, ops: tuple[str, ...] = ()) -> Any:
        return self(value, name, line, ops)

    def loop(
        self, key: str, line: int, ops: tuple[str, ...] = (), carried: tuple[str, ...] = (), results: tuple[str, ...] = ()
    ) -> LoopCounter:
        return LoopCounter(self.loop_done, key, line, ops, carried, results)

    def loop_done(self, c: LoopCounter) -> None:
        return None

    def branch(self, key: str, line: int, taken: bool, ops: tuple[str, ...] = ()) -> None:
        return None


@dataclass(slots=True)
class _Ran:
    """A loop's trip count or an if's direction in the previous pass's run."""

    line: int
    value: int  # iterations; for an if, 1 when the then-branch ran
    then_count: int = 0  # for an if: then-branches taken up to and including this run


class _Trace(_Hook):
    """The ``_pl_tr`` hook of the previous pass's run: copies of the values worth keeping, in order."""

    def __init__(self, keep: set[str], budget: int) -> None:
        super().__init__()
        self.records: dict[tuple[Any, ...], _Record] = {}  # by (name, role, lane, block, occurrence)
        self.keep = keep  # names the current pass may ask about
        self.budget = budget
        self.truncated = False
        self.ran: dict[tuple[Any, ...], _Ran] = {}
        self.then_counts: dict[tuple[Any, ...], int] = {}

    def __call__(self, value: Any, name: str, line: int, _ops: tuple[str, ...] = ()) -> Any:
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
        self.records[(name, *place(ctx), n)] = _Record(
            name,
            ctx.role,
            ctx.lane,
            ctx.lanes,
            ctx.block_idx,
            line,
            snap,
            n,
            tuple(value.shape) if isinstance(value, torch.Tensor) else None,
        )
        return value

    def loop_done(self, c: LoopCounter) -> None:
        if c.key in self.keep and len(self.ran) < _MAX_RAN:
            ctx, k = self._occurrence(_LOOP + c.key)
            self.ran[(_LOOP + c.key, *place(ctx), k)] = _Ran(c.line, c.n)

    def branch(self, key: str, line: int, taken: bool, ops: tuple[str, ...] = ()) -> None:
        if len(self.ran) < _MAX_RAN:
            ctx, k = self._occurrence(_IF + key)
            where = (_IF + key, *place(ctx))
            then = self.then_counts.get(where, 0) + int(taken)
            self.then_counts[where] = then
            self.ran[(*where, k)] = _Ran(line, int(taken), then)


class _Stop(Exception):
    """Ends the current pass's run once enough is known (run_text reports it as an error)."""


@dataclass(slots=True)
class _Event:
    v: ValueDivergence
    provisional: bool  # from inside a loop (a value handed to the next iteration, a trip count)
    carried: str | None = None  # the iter_arg (for a value handed to the next iteration)


@dataclass(slots=True)
class _Watch:
    """A loop that just ended: if everything it hands out agrees, its provisional events go."""

    where: tuple[str | None, int, Any]
    key: str
    carried: frozenset[str]
    pending: set[str]  # results not yet seen to agree


class _Compare(_Hook):
    """The hooks of the current pass's run: each value against its partner, as it is made.

    Every name's latest value is marked as differing or not (a value without partner
    differs when something it read differs). A differing value whose operands all agree
    is a cause; so is a loop that ran a different number of times, or an if that went
    the other way, on operands that agree.

    What a loop hands to its next iteration and how often it ran are provisional: a pass
    that unrolls or pipelines a loop changes both but not what the loop hands out. They
    are dropped when all the loop's results then agree, kept once a later value differs,
    and dropped if nothing else differs until the end. The run stops at the third cause.
    """

    def __init__(self, prev: _Trace, renamed: dict[str, str], rtol: float, atol: float) -> None:
        super().__init__()
        self.partner = prev.records
        self.ran = prev.ran
        self.renamed = renamed
        self.rtol = rtol
        self.atol = atol
        self.compared = 0
        self.differs: dict[tuple[str, str | None, int, Any], bool] = {}
        self.then_counts: dict[tuple[Any, ...], int] = {}
        self.events: list[_Event] = []
        self.watches: list[_Watch] = []
        self.limit: int | None = None  # values to compare at most, once a cause is known
        self.stopped = False

    def keep_provisional(self) -> None:
        """The run's outputs differ and no value did: the trip counts and valid regions that
        changed, still provisional, count.

        A loop whose results are tensors (a loop over a tensor-level ``pl.at`` region, before
        outlining) hands out nothing that is compared element by element, so a changed trip
        count stays provisional to the end; a valid region may change with a pass that splits
        work between lanes (lane 1 replaying with an empty region). When the outputs then
        differ, they are the candidates."""
        for e in self.events:
            if e.v.kind in _LATE_KINDS:
                e.provisional = False

    @property
    def found(self) -> ValueDivergence | None:
        """The first cause, else the first differing value; the next two candidates related."""
        kept = [e.v for e in self.events if not e.provisional]
        causes = [v for v in kept if v.cause]
        ranked = causes if causes else kept
        if not ranked:
            return None
        top = ranked[0]
        top.related = ranked[1:3]
        return top

    def _tainted(self, ctx: context.Ctx, ops: tuple[str, ...]) -> bool:
        d = self.differs
        return any(d.get((o, *place(ctx)), False) for o in ops)

    def _wanted(self, line: int, cause: bool, provisional: bool) -> bool:
        """Whether an event on ``line`` would be kept (worth describing in full)."""
        if any(e.v.line == line and e.v.cause == cause for e in self.events):
            return False
        if cause or provisional:
            return True
        # a consequence is only reported when no cause is found: the first three, while none is
        return not any(e.v.cause and not e.provisional for e in self.events) and sum(1 for e in self.events if not e.v.cause) < 3

    def _event(self, v: ValueDivergence, provisional: bool = False, carried: str | None = None) -> None:
        if not provisional:
            for e in self.events:
                e.provisional = False  # a later value differs: what the loops did counts
        if any(e.v.line == v.line and e.v.cause == v.cause for e in self.events):
            return  # the same statement again (a later iteration, another lane)
        if not v.cause and not provisional and sum(1 for e in self.events if not e.v.cause) >= 3:
            return  # enough consequences to fall back on
        self.events.append(_Event(v, provisional, carried))
        if len(self.events) > 64:  # keep the first few consequences, every cause
            self.events = [e for i, e in enumerate(self.events) if e.v.cause or i < 8]
        confirmed = [e.v for e in self.events if e.v.cause and not e.provisional]
        if confirmed:
            # the run's cost bounded: no further than twice as far as the first cause
            self.limit = 2 * confirmed[0].compared + _FURTHER
        if len(confirmed) >= 3:
            self.stopped = True
            raise _Stop

    def _value(self, value: Any, name: str, line: int, ops: tuple[str, ...], provisional: bool) -> Any:
        if self.stopped:
            raise _Stop  # a kernel of another lane carried on
        ctx, n = self._occurrence(name)
        key = (name, *place(ctx))
        other = self.partner.get((self.renamed.get(name, name), *place(ctx), n))
        cur = _numeric(value) if other is not None and other.lanes == ctx.lanes else None
        tainted = self._tainted(ctx, ops)  # before this name's own status changes (a yield may read it)
        if ops and ops[-1] == CALL and self.events:
            tainted = True  # the callee's statements differed already: they are the candidates
        if other is None or cur is None:
            self.differs[key] = tainted
            return value
        self.compared += 1
        if self.limit is not None and self.compared > self.limit:
            self.stopped = True  # enough looking for further candidates
            raise _Stop
        d = _valid_differs(value, cur, other) or differs_from_previous(cur, other.value, self.rtol, self.atol, full=False)
        # a valid region that changed alone taints nothing: a pass may cut a lane's share of the work
        self.differs[key] = d is not None and d[2] != "valid"
        if d is None:
            if self.watches and not provisional:
                self._agrees(name, place(ctx))
            return value
        if d[2] != "valid" and self._wanted(line, not tainted, provisional):
            d = differs_from_previous(cur, other.value, self.rtol, self.atol)  # again, with the figures
        assert d is not None
        v = ValueDivergence(
            line=line,
            name=name,
            occurrence=n,
            lane=ctx.lane,
            lanes=ctx.lanes,
            block=ctx.block_idx,
            rank=ctx.rank,
            previous_line=other.line,
            max_abs_diff=d[0],
            detail=d[1],
            compared=self.compared,
            truncated=False,
            kind=d[2],
            cause=not tainted,
        )
        # a changed valid region counts once the outputs differ (see first_differing_value)
        self._event(v, provisional or v.kind == "valid", name if provisional else None)
        return value

    def _agrees(self, name: str, where: tuple[str | None, int, Any]) -> None:
        """A loop result agrees: once all of them do, the loop's provisional events go."""
        for w in list(self.watches):
            if w.where == where and name in w.pending:
                w.pending.discard(name)
                if not w.pending:
                    self.watches.remove(w)
                    self.events = [
                        e
                        for e in self.events
                        if not (e.provisional and (e.carried in w.carried or e.v.kind == "count" and e.v.name == w.key))
                    ]

    def __call__(self, value: Any, name: str, line: int, ops: tuple[str, ...] = ()) -> Any:
        return self._value(value, name, line, ops, False)

    def carry(self, value: Any, name: str, line: int, ops: tuple[str, ...] = ()) -> Any:
        return self._value(value, name, line, ops, True)

    def write(self, value: Any, names: tuple[str, ...], _line: int, ops: tuple[str, ...] = ()) -> Any:
        if self.stopped:
            raise _Stop
        ctx = context.current()
        t = self._tainted(ctx, ops)
        for name in names:
            self.differs[(name, *place(ctx))] = t
        return value

    def _ran(self, key: str, line: int, ops: tuple[str, ...], here: int, before: _Ran, n: int, detail: str, provisional: bool) -> None:
        ctx = context.current()
        v = ValueDivergence(
            line=line,
            name=key,
            occurrence=n,
            lane=ctx.lane,
            lanes=ctx.lanes,
            block=ctx.block_idx,
            rank=ctx.rank,
            previous_line=before.line,
            max_abs_diff=float(abs(here - before.value)),
            detail=detail,
            compared=self.compared,
            truncated=False,
            kind="count",
            cause=not self._tainted(ctx, ops),
        )
        self._event(v, provisional)

    def loop_done(self, c: LoopCounter) -> None:
        if self.stopped:
            raise _Stop
        ctx, k = self._occurrence(_LOOP + c.key)
        where = place(ctx)
        before = self.ran.get((_LOOP + self.renamed.get(c.key, c.key), *where, k))
        if before is not None and before.value != c.n:
            detail = f"loop ran {c.n} time{'s' * (c.n != 1)} here, {before.value} before"
            self._ran(c.key, c.line, c.operands, c.n, before, k, detail, True)
        if c.results and any(e.provisional for e in self.events):
            self.watches = [w for w in self.watches if w.key != c.key or w.where != where][-16:]
            self.watches.append(_Watch(where, c.key, frozenset(c.carried), set(c.results)))

    def branch(self, key: str, line: int, taken: bool, ops: tuple[str, ...] = ()) -> None:
        if self.stopped:
            raise _Stop
        ctx, k = self._occurrence(_IF + key)
        where = (_IF + key, *place(ctx))
        then = self.then_counts.get(where, 0) + int(taken)
        self.then_counts[where] = then
        prev_key = "if " + self.renamed.get(key[3:], key[3:]) if key.startswith("if ") else self.renamed.get(key, key)
        before = self.ran.get((_IF + prev_key, *place(ctx), k))
        if before is not None and before.value != int(taken):
            way = ("then", "else") if taken else ("else", "then")
            detail = f"if took the {way[0]} branch here, the {way[1]} branch before (then-branch taken {then} times here, {before.then_count} before)"
            self._ran(key, line, ops, int(taken), before, k, detail, True)


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
    names: set[str] = set()
    for f in comp.program.functions:
        for s in f.statements():
            names.update(t.name for t in stmt_targets(s))
    return names


def _renames(prev_only: set[str], cur_only: set[str]) -> dict[str, str]:
    """Current name -> previous name, where one name of each pass alone has a source name."""
    prev_by: dict[str, list[str]] = {}
    cur_by: dict[str, list[str]] = {}
    for n in prev_only:
        prev_by.setdefault(_source_name(n), []).append(n)
    for n in cur_only:
        cur_by.setdefault(_source_name(n), []).append(n)
    return {c[0]: prev_by[src][0] for src, c in cur_by.items() if len(c) == 1 and len(prev_by.get(src, ())) == 1}


def _valid_differs(value: Any, cur: Any, other: _Record) -> tuple[float, str, str] | None:
    """A tensor of the same whole shape as its partner whose valid region differs (what a store
    writes of it then differs too): (NaN, "valid region [..] here, [..] before", "valid")."""
    if not isinstance(value, torch.Tensor) or other.shape is None or tuple(value.shape) != other.shape:
        return None
    if not isinstance(cur, torch.Tensor) or not isinstance(other.value, torch.Tensor) or cur.shape == other.value.shape:
        return None
    return math.nan, f"valid region {list(cur.shape)} here, {list(other.value.shape)} before (of {list(value.shape)})", "valid"


def partner_names(
    previous_text: str, text: str, *, entry: str | None = None, previous_filename: str = "<previous>", filename: str = "<dump>"
) -> dict[str, str] | None:
    """Each name ``text`` assigns that has a partner in ``previous_text`` -> that partner's name
    (the same name, or the rename :func:`first_differing_value` pairs it with); None when either
    does not compile. The debugger's previous-pass values use it (``pypto_lsp.debug``)."""
    prev_names = _assigned_names(previous_text, previous_filename, entry)
    cur_names = _assigned_names(text, filename, entry)
    if prev_names is None or cur_names is None:
        return None
    pairs = {n: n for n in prev_names & cur_names}
    pairs.update(_renames(prev_names - cur_names, cur_names - prev_names))
    return pairs


def differs_from_previous(cur: Any, prev: Any, rtol: float, atol: float, full: bool = True) -> tuple[float, str, str] | None:
    """Whether a value differs from its partner of the previous pass (the valid regions: see
    :func:`_numeric`); localisation and the debugger's first-difference stop both ask this.

    None when close; else (max abs diff or NaN, a short description, "value" or "dtype").

    Not ``full``: a tensor that is not close only says so (NaN, no description)."""
    if isinstance(cur, torch.Tensor) != isinstance(prev, torch.Tensor):
        return None  # a scalar became a tensor (or back): a change of form, not of number
    if isinstance(cur, torch.Tensor):
        if tuple(cur.shape) != tuple(prev.shape):
            return None  # reshaped by the pass: not comparable element by element
        if cur.dtype == prev.dtype and torch.equal(cur, prev):
            return None  # most values are the very same bits in both passes: the cheap test first
        retyped = ""
        if cur.dtype != prev.dtype:
            retyped = f"dtype {_dt(cur.dtype)} here, {_dt(prev.dtype)} before"
            if cur.dtype.is_floating_point != prev.dtype.is_floating_point or torch.bool in (cur.dtype, prev.dtype):
                # a float made an integer (or back) is a difference whatever its numbers; a
                # precision change (FP16 -> FP32, as passes legitimately make) is judged by them
                diff = float((cur.to(torch.float64) - prev.to(torch.float64)).abs().max()) if cur.numel() else 0.0
                return diff, f"{retyped} (max |Δ| {diff:.4g})", "dtype"
            wide = torch.promote_types(cur.dtype, prev.dtype)
            cur, prev = cur.to(wide), prev.to(wide)
        if cur.numel() == 0:
            return None
        if not full:  # the test compare() makes (allclose in float64), without its statistics
            c64, p64 = cur.to(torch.float64), prev.to(torch.float64)
            if not bool(over_tolerance(torch.where(c64 == p64, 0.0, (c64 - p64).abs()), p64, rtol, atol).any()):
                return None
            return math.nan, "", "value"
        tr = compare(cur, prev, rtol, atol)
        if tr.passed:
            return None
        return tr.max_abs_diff, f"max |Δ| {tr.max_abs_diff:.4g}{_where_worst(cur, prev)}{'; ' + retyped if retyped else ''}", "value"
    a, b = float(cur), float(prev)
    if scalars_close(a, b, rtol, atol):
        return None
    return abs(a - b), f"{cur!r} instead of {prev!r}", "value"


def _dt(dt: torch.dtype) -> str:
    """A torch dtype by its IR name (``FP32``, ``INT32`` ...)."""
    for name, d in DTYPES.items():
        if d == dt:
            return name
    return str(dt).removeprefix("torch.")


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


def _outputs_differ(prev: Mapping[str, torch.Tensor], cur: Mapping[str, torch.Tensor], rtol: float, atol: float) -> bool:
    """Whether a tensor both runs finished with (the entry's parameters, returned values) is not close."""
    for k, a in cur.items():
        b = prev.get(k)
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and differs_from_previous(a, b, rtol, atol, full=False) is not None:
            return True
    return False


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
    max_alloc: int | None = None,
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
    prev_after: dict[str, torch.Tensor] = {}
    _check_timeout(
        run_text(
            previous_text,
            inputs,
            {},
            filename=previous_filename,
            entry=entry,
            timeout=timeout,
            trace=prev,
            keep=prev_after,
            max_alloc=max_alloc,
        )
    )
    if not prev.records and not prev.ran:
        return None
    cmp = _Compare(prev, renamed, rtol, atol)
    cur_after: dict[str, torch.Tensor] = {}
    _check_timeout(
        run_text(text, inputs, {}, filename=filename, entry=entry, timeout=timeout, trace=cmp, keep=cur_after, max_alloc=max_alloc)
    )
    found = cmp.found
    if (
        found is None
        and any(e.v.kind in _LATE_KINDS and e.provisional for e in cmp.events)
        and _outputs_differ(prev_after, cur_after, rtol, atol)
    ):
        cmp.keep_provisional()
        found = cmp.found
    if found is not None:
        found.truncated = prev.truncated
    return found


def localize_report(
    report: Report,
    inputs: Mapping[str, torch.Tensor],
    *,
    rtol: float,
    atol: float,
    entry: str | None,
    timeout: float | None,
    max_alloc: int | None = None,
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
        from ..ir.parser import read_dump  # never more than the size limit

        prev_text = read_dump(prev.file).decode("utf-8")
        text = read_dump(fd.file).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        report.first_differing_value = first_differing_value(
            prev_text,
            text,
            inputs,
            rtol=rtol,
            atol=atol,
            entry=entry,
            timeout=timeout,
            previous_filename=prev.file,
            filename=fd.file,
            max_alloc=max_alloc,
        )
    except TimeoutError:
        return None  # both passes ran within the timeout untraced; say nothing rather than guess
    return report.first_differing_value
