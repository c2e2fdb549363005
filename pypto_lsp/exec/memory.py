"""Memory-faithful execution: tiles live in per-core byte arenas where the IR places them.

Generated code (see :mod:`.codegen`, ``memory=True``) calls into this module:

* at the start of a kernel with placements, ``_pl_m = _pl_mem_session.frame(PLAN)``: one
  :class:`Frame` per kernel invocation (an AIV lane, the AIC, an SPMD block), with a zeroed
  ``uint8`` arena per memory space;
* ``x = _pl_m.wr(value, SITE, *operands)`` after each placed assignment: the operands are
  checked (their bytes must still be theirs), then the result is written into its bytes and
  ``x`` becomes a view of them, so a later overlapping write changes ``x`` exactly as on the
  hardware; a view op (reshape, move, ...) whose result lies on its operand's bytes aliases;
* ``_pl_m.rd(SITE, *operands)`` before a statement that reads placed tiles without placing
  a result (store, tpush, ...);
* ``x = _pl_m.pop(value, SITE)`` after a ``tpop``: the k-th pop of a pipe lands in slot
  ``k mod slot_num`` of the consumer's ring and ``x`` is a view of it.

The hazard sanitizer: each arena is cut, once per plan, into *atoms* at every boundary a
site can have, and remembers per atom which write last touched it. A read of a value whose
atoms were written by something else since the value was written is an ``overwrite``
finding (on the reading line, naming the value and the line that overwrote it). Static
findings (``capacity``, ``bounds``, ``pipe-slot``) come from :mod:`pypto_lsp.ir.memory`.

Placements are decided statically (per site: arena, atom range, view dtype/shape); the per-op
cost is a few list operations and one ``copy_``.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import torch

from ..ir.memory import DTYPE_BITS, Finding, Hazard
from . import context, sanitizer
from .observe import Observer, RunInfo
from .values import DTYPES

__all__ = ["build", "Plan", "Session", "WriteLog", "Frame", "Unplaced", "UNPLACED", "Proven", "Finding", "forget_proofs"]

_TAG = "_pl_mem"  # on a tensor: its Placement


class Placement(NamedTuple):
    """Where a placed tile's bytes are (the tag on its tensor): which frame placed it, the space,
    its atom range, the write that made it, its byte range."""

    frame: Any
    space: str
    lo: int
    hi: int
    write: int
    start: int
    stop: int


_VALID = "_pl_valid"


class Site:
    """One site of a plan (see :class:`Plan`), with its atom range decided once."""

    kind: str
    name: str
    line: int
    space: str
    start: int
    nbytes: int
    dtype: str
    shape: tuple[int, ...]
    memref: str
    operands: tuple[str, ...]
    scratch: frozenset[int]
    view_op: bool
    pipe: int
    slot_size: int
    slot_num: int

    def __init__(
        self,
        *,
        kind: str,
        name: str,
        line: int,
        space: str,
        start: int,
        nbytes: int,
        dtype: str,
        shape: tuple[int, ...],
        memref: str,
        operands: tuple[str, ...],
        scratch: tuple[int, ...],
        view_op: bool,
        pipe: tuple[int, int, int] | None,
    ) -> None:
        self.kind, self.name, self.line, self.space = kind, name, line, space
        self.start, self.nbytes, self.dtype, self.shape, self.memref = start, nbytes, dtype, shape, memref
        self.view_op = view_op
        ops = operands
        self.operands = tuple(ops)
        self.scratch = frozenset(scratch)
        self.pipe, self.slot_size, self.slot_num = pipe if pipe else (0, 0, 1)
        self.lo = self.hi = 0
        self.slots: list[tuple[int, int, int]] = []  # pop sites: (start, atom_lo, atom_hi) per slot
        self.alias_ok = False
        self.exclusive = False  # no other site or pipe slot touches these bytes


class Plan:
    """A kernel's placements, built once per script execution from literals codegen wrote.

    ``sites``: :class:`Site` objects built with keywords by the generated code; kind ``"w"`` (placed
    assignment), ``"r"`` (reads only), ``"p"`` (pop: ``start`` is the ring's base, ``pipe`` =
    (index, slot_size, slot_num)).
    """

    def __init__(self, function: str, core: str, sites: tuple[Site, ...], same_path: bool = False, key: str | None = None) -> None:
        self.function = function
        self.core = core
        # every call of the kernel on one core runs the same statements in the same order
        # (:func:`pypto_lsp.ir.invariance.same_path_every_call`): see Session.frame
        self.same_path = same_path
        # the kernel's code and placements as a digest (codegen_text.code_key), the same in
        # every script that runs this kernel as it is: what a proof kept across runs is filed under
        self.key = key
        self.sites: list[Site] = []
        bounds: dict[str, set[int]] = {}
        for s in sites:
            self.sites.append(s)
            if s.kind == "w":
                bounds.setdefault(s.space, set()).update((s.start, s.start + s.nbytes))
            elif s.kind == "p":
                for j in range(s.slot_num):
                    a = s.start + j * s.slot_size
                    bounds.setdefault(s.space, set()).update((a, a + s.nbytes))
        self.atoms: dict[str, list[int]] = {sp: sorted(b) for sp, b in bounds.items()}
        self.sizes: dict[str, int] = {sp: (b[-1] if b else 0) for sp, b in self.atoms.items()}
        for s in self.sites:
            if s.kind == "w":
                s.lo, s.hi = self._atoms(s.space, s.start, s.start + s.nbytes)
                s.alias_ok = _aliasable(s.dtype, s.start)
            elif s.kind == "p":
                for j in range(s.slot_num):
                    a = s.start + j * s.slot_size
                    lo, hi = self._atoms(s.space, a, a + s.nbytes)
                    s.slots.append((a, lo, hi))
                s.alias_ok = _aliasable(s.dtype, s.start) and _aliasable(s.dtype, s.slot_size)
        # bytes only one site ever writes need no arena copy: nothing else can change them, so the
        # value's own tensor is as good as its bytes (a rewrite by the same site while an older
        # value of it is still read is found by the write log all the same)
        users: dict[tuple[str, int], set[int]] = {}
        for i, s in enumerate(self.sites):
            ranges = [(s.lo, s.hi)] if s.kind == "w" else [(lo, hi) for _a, lo, hi in s.slots]
            for lo, hi in ranges:
                for k in range(lo, hi):
                    users.setdefault((s.space, k), set()).add(i)
        pops = {i for i, s in enumerate(self.sites) if s.kind == "p"}
        for i, s in enumerate(self.sites):
            if s.kind == "w":
                s.exclusive = all(users[(s.space, k)] == {i} for k in range(s.lo, s.hi))
            elif s.kind == "p":
                # a ring only pops write: a popped tile read after a later pop reused its slot is
                # found by the write log; numbers matter only when a placed tile shares the ring
                s.exclusive = all(users[(s.space, k)] <= pops for _a, lo, hi in s.slots for k in range(lo, hi))

    def _atoms(self, space: str, start: int, end: int) -> tuple[int, int]:
        b = self.atoms[space]
        return bisect_left(b, start), bisect_left(b, end)

    def atom_range(self, space: str, lo: int, hi: int) -> tuple[int, int]:
        b = self.atoms[space]
        return b[lo], b[hi]


def build(kind: str, keywords: dict[str, Any]) -> Plan:
    """What :attr:`pypto_lsp.exec.codegen.GeneratedCode.built` names, made as the script's own
    ``_pl_mem.Plan(..., sites=(_pl_mem.Site(...), ...))`` line makes it: fresh objects each run."""
    if kind != "plan":
        raise ValueError(f"no constant of kind {kind!r}")
    sites = tuple(Site(**s) for s in keywords["sites"])
    return Plan(keywords["function"], keywords["core"], sites, keywords["same_path"], keywords.get("key"))


def _aliasable(dtype: str, start: int) -> bool:
    """Numbers can live in the bytes when torch stores the dtype in the hardware's size."""
    tdt = DTYPES.get(dtype)
    bits = DTYPE_BITS.get(dtype)
    if tdt is None or bits is None:
        return False
    size = torch.empty((), dtype=tdt).element_size()
    return size * 8 == bits and start % size == 0


class WriteLog:
    """Write id -> (site, slot, core) of a run's tile writes, the last ``cap`` kept: a kernel that
    spins writes without end (under the debugger, with no timeout), and a finding only names the
    writer of bytes, which an older write than that no longer is in practice."""

    CAP = 1 << 18

    def __init__(self, cap: int = CAP) -> None:
        self.cap = cap
        self.items: list[tuple[Site, int, str]] = []
        self.total = 0

    def __len__(self) -> int:
        return self.total  # the id the next write gets

    def append(self, rec: tuple[Site, int, str]) -> None:
        if self.total < self.cap:
            self.items.append(rec)
        else:
            self.items[self.total % self.cap] = rec
        self.total += 1

    def get(self, w: int) -> tuple[Site, int, str] | None:
        """Write ``w``, None once it fell out of the log."""
        return self.items[w % self.cap] if 0 <= w < self.total and w >= self.total - self.cap else None

    def kept(self) -> int:
        return len(self.items)


# (plan key, core) of the kernels one call of which met no hazard in an earlier run of this process
# (Session.frame, Session.proofs): the same code on the same placements meets none in any run
_PROVEN_BEFORE: set[tuple[str, str]] = set()
PROVEN_MAX = 1 << 16  # kept (a key is a few dozen bytes); all forgotten when full


def _remember(plan: Plan, core: str) -> None:
    if plan.key is None:
        return
    if len(_PROVEN_BEFORE) >= PROVEN_MAX:
        _PROVEN_BEFORE.clear()
    _PROVEN_BEFORE.add((plan.key, core))


def forget_proofs() -> None:
    """Forget what earlier runs proved (tests that count the calls followed in the arenas)."""
    _PROVEN_BEFORE.clear()


class Session:
    """One run's memory state: the write log and the findings of every frame."""

    def __init__(self) -> None:
        self.writes = WriteLog()
        self.findings: list[Finding] = []
        self.events = 0  # hazards met, a repeat of a reported one included (see Sweep.peeled)
        self._seen: set[tuple[Any, ...]] = set()
        # (plan, core) -> (arenas, views): invocations of one kernel on one core run one after the
        # other (SPMD blocks, calls in a loop) and reuse its memory, as the hardware does
        self.pool: dict[tuple[int, str], tuple[dict[str, torch.Tensor], dict[tuple[int, int], torch.Tensor]]] = {}
        self.started: dict[tuple[int, str], int] = {}  # (plan, core) -> events when its last call began
        self.proven: set[tuple[int, str]] = set()  # (plan, core) whose calls need no arenas
        self.plans: dict[int, Plan] = {}  # id -> plan, of the keys in ``started``

    def frame(self, plan: Plan) -> Frame | Unplaced:
        """The memory of one call of ``plan``'s kernel on the current core.

        A kernel whose every call takes the same path (``plan.same_path``) is followed in the arenas
        until one call met no hazard, and nothing else did while it ran (``events`` unchanged from
        its start to the next call's: calls of one kernel on one core never overlap); its later
        calls run values only (:data:`UNPLACED`). Exact: a call's checks start from a fresh write
        log (``Frame.own``), its placements are static and the same path meets the same checks in
        the same order, so every later call would meet no hazard either, and a run without one
        computes the values-only values. Not used for traced runs or with ``exact`` (codegen).

        The proof outlives the run: the checks of such a call depend on nothing but the kernel's
        code, its placements and the core, which ``plan.key`` and the core name. A kernel with
        the key of one proven in an earlier run of this process (a dump before it in the folder
        that left the kernel as it was, the same file validated again on save) runs values only
        from its first call. That call still peels its loops as a followed call does
        (:class:`Proven`), and which calls are followed or values only is decided as without the
        earlier proof: the run's lanes then interleave as they would have, and the findings of the
        other kernels come in the same order whatever ran in the process before. A kernel called
        once a run is proven when the run ends with no hazard met since that call began
        (:meth:`proofs`)."""
        core = "AIC" if plan.core == "AIC" else f"AIV{context.lane()}"
        key = (id(plan), core)
        if key in self.proven:
            return UNPLACED
        known = False
        if plan.same_path:
            began = self.started.get(key)
            if began is not None and began == self.events:
                self.proven.add(key)
                _remember(plan, core)
                return UNPLACED
            known = plan.key is not None and (plan.key, core) in _PROVEN_BEFORE
            if not known:
                self.plans[id(plan)] = plan
        self.started[key] = self.events
        return Proven(plan) if known else Frame(plan, self, core)

    def proofs(self) -> None:
        """At the end of a run that raised nothing: every same-path kernel whose last call met no
        hazard, nor did anything after it began, is proven for the runs to come (see :meth:`frame`)."""
        for (pid, core), began in self.started.items():
            plan = self.plans.get(pid)
            if plan is not None and began == self.events and (pid, core) not in self.proven:
                _remember(plan, core)

    def report(
        self,
        kind: str,
        line: int,
        name: str,
        other: tuple[Site, int, str] | None,
        space: str,
        core: str,
        rng: tuple[int, int],
        message: str,
    ) -> None:
        self.events += 1
        other_line = other[0].line if other else None
        other_name = other[0].name if other else None
        key = (kind, line, name, other_line, core)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(kind, line, name, other_line, other_name, space, core, rng[0], rng[1], message))


class Frame:
    """One kernel invocation's arenas and who wrote each atom last."""

    __slots__ = ("plan", "session", "core", "arenas", "own", "views", "pops", "counts")

    def __init__(self, plan: Plan, session: Session, core: str) -> None:
        self.plan = plan
        self.session = session
        self.core = core
        pooled = session.pool.get((id(plan), self.core))
        if pooled is None:
            pooled = session.pool[(id(plan), self.core)] = (
                {sp: torch.zeros(max(n, 1), dtype=torch.uint8) for sp, n in plan.sizes.items()},
                {},
            )
        self.arenas, self.views = pooled
        self.own: dict[str, list[int]] = {sp: [-1] * max(len(b) - 1, 0) for sp, b in plan.atoms.items()}
        self.pops: dict[int, int] = {}
        self.counts: dict[int, int] = {}

    # -- bytes ------------------------------------------------------------------

    def _view(self, site_idx: int, s: Site, start: int) -> torch.Tensor:
        key = (site_idx, start)
        v = self.views.get(key)
        if v is None:
            raw = self.arenas[s.space][start : start + s.nbytes]
            v = raw.view(DTYPES[s.dtype]).view(s.shape)
            self.views[key] = v
        return v

    def _write(self, value: Any, site_idx: int, s: Site, start: int, lo: int, hi: int, slot: int) -> Any:
        writes = self.session.writes
        w = len(writes)
        writes.append((s, slot, self.core))
        own = self.own[s.space]
        if hi - lo == 1:
            own[lo] = w
        else:
            own[lo:hi] = [w] * (hi - lo)
        out = value
        if s.exclusive:
            if not isinstance(value, torch.Tensor):
                return value
            if getattr(value, _TAG, None) is not None:  # an op that returned its (placed) operand
                out = value.detach()  # a new alias of the same bytes (cheaper than view_as)
                valid = getattr(value, _VALID, None)
                if valid is not None:
                    setattr(out, _VALID, valid)
        elif not isinstance(value, torch.Tensor):
            return value
        elif s.alias_ok and value.shape == s.shape:
            v = self._view(site_idx, s, start)
            try:
                v.copy_(value)  # the same bytes (an op that returns its operand): harmless
            except RuntimeError:  # a partial overlap with its own operand: copy through a temporary
                v.copy_(value.clone())
            # a tile holding undefined elements (exec.definedness) goes on as itself, its bytes also in
            # the arena: the arena's storage is every tile's of the space, one shadow cannot tell
            # their origins apart, and the copy alone would carry none (the value's undefined
            # elements then reached the output unseen on every placed dump)
            out = value.detach() if sanitizer.undefined_in((value,)) else v.detach()
            valid = getattr(value, _VALID, None)
            if valid is not None:
                setattr(out, _VALID, valid)
        elif getattr(value, _TAG, None) is not None:
            out = value.detach()  # a new alias of the same bytes (cheaper than view_as)
            valid = getattr(value, _VALID, None)
            if valid is not None:
                setattr(out, _VALID, valid)
        setattr(out, _TAG, Placement(self, s.space, lo, hi, w, start, start + s.nbytes))
        return out

    def _check(self, s: Site, i: int, tag: Placement) -> None:
        _frame, space, lo, hi, w, _start, _end = tag
        own = self.own[space]
        if own[lo] == w and (hi - lo == 1 or own[lo:hi].count(w) == hi - lo):
            return
        bad = [k for k in range(lo, hi) if own[k] != w]
        b0, _ = self.plan.atom_range(space, bad[0], bad[0] + 1)
        _, b1 = self.plan.atom_range(space, bad[-1], bad[-1] + 1)
        other = self.session.writes.get(own[bad[-1]])
        mine = self.session.writes.get(w)
        name = s.operands[i] if i < len(s.operands) else (mine[0].name if mine else "?")
        what = f"written at line {mine[0].line} as '{mine[0].name}' ({_where(mine[0], mine[1])})" if mine else "written"
        if other is None:
            by = "something else"
        else:
            by = f"'{other[0].name}' at line {other[0].line} ({_where(other[0], other[1])})"
        msg = f"'{name}' is read here but its bytes [{b0}, {b1}) of {space} ({self.core}) were overwritten by {by} since it was {what}"
        first = self._first_writer(w, space, bad[0], bad[-1] + 1)
        if first is not None and other is not None and first[0] is not other[0]:
            msg += f"; the first write on them was '{first[0].name}' at line {first[0].line} ({_where(first[0], first[1])})"
        self.session.report("overwrite", s.line, name, other, space, self.core, (b0, b1), msg)

    def _first_writer(self, w: int, space: str, lo: int, hi: int) -> tuple[Site, int, str] | None:
        """The first write after write ``w`` on this core onto atoms [lo, hi) of ``space`` (only
        looked up for a finding: the write log is scanned once)."""
        writes = self.session.writes
        for k in range(max(w + 1, len(writes) - writes.kept()), len(writes)):
            rec = writes.get(k)
            assert rec is not None
            s2, slot, core = rec
            if core != self.core or s2.space != space or slot < 0:
                continue
            a, b = (s2.lo, s2.hi) if s2.kind == "w" else s2.slots[slot - 1][1:]
            if a < hi and lo < b:
                return rec
        return None

    def _scratch(self, s: Site, tag: Placement) -> None:
        _frame, space, lo, hi, _w, _start, _end = tag
        own = self.own[space]
        w = len(self.session.writes)
        self.session.writes.append((s, -1, self.core))
        own[lo:hi] = [w] * (hi - lo)

    def _operands(self, s: Site, ops: tuple[Any, ...]) -> None:
        scratch = s.scratch
        i = -1
        for o in ops:
            i += 1
            tag = getattr(o, _TAG, None)
            if tag is None or tag.frame is not self:  # unplaced, or placed by another kernel invocation
                continue
            if scratch and i in scratch:
                self._scratch(s, tag)
                continue
            lo = tag.lo
            if tag.hi - lo == 1 and self.own[tag.space][lo] == tag.write:
                continue  # the usual case: one atom, still this value's
            self._check(s, i, tag)

    # -- generated-code entry points ------------------------------------------------

    def wr(self, value: Any, site_idx: int, *ops: Any) -> Any:
        s = self.plan.sites[site_idx]
        if ops:
            self._operands(s, ops)
            if s.view_op and isinstance(value, torch.Tensor):
                tag = getattr(ops[0], _TAG, None)
                if (
                    tag is not None
                    and tag.frame is self
                    and tag.space == s.space
                    and tag.start <= s.start
                    and s.start + s.nbytes <= tag.stop
                ):
                    # the same bytes seen another way: no write
                    out = value.detach()  # a new alias of the same bytes (cheaper than view_as)
                    valid = getattr(value, _VALID, None)
                    if valid is not None:
                        setattr(out, _VALID, valid)
                    setattr(out, _TAG, Placement(self, s.space, s.lo, s.hi, tag.write, s.start, s.start + s.nbytes))
                    return out
        return self._write(value, site_idx, s, s.start, s.lo, s.hi, 0)

    def rd(self, site_idx: int, *ops: Any) -> None:
        self._operands(self.plan.sites[site_idx], ops)

    def peeled(self, session: Session, n: int, pops: tuple[int, ...]) -> Iterator[int | range]:
        """The iterations of a batched loop of ``n`` whose body pops at ``pops`` (this frame's
        sites): an index each for one to run one by one in the arenas, and once a ``range``, the
        middle the caller may run batched (then it calls :meth:`skip_pops`). The first ``S + 1``
        and the last run one by one, ``S`` the least common multiple of the pops' rings' slot counts
        (1 without pops): the slot a pop lands in repeats every ``S`` iterations, and the first
        iteration may meet the arenas as the code before the loop left them; the last places again
        what the loop leaves placed. No middle when the first ones met a hazard (``session.events``,
        a repeat of one already reported included). Why that is exact:
        :meth:`pypto_lsp.exec.sweep.Sweep.peeled`."""
        return _peeled(self.plan, session, n, pops)

    def skip_pops(self, sites: tuple[int, ...], count: int) -> None:
        """``count`` pops of each of ``sites`` ran without the arenas (a sweep's batched middle):
        the next pop of their pipes lands in the slot it would have after them."""
        for i in sites:
            pipe = self.plan.sites[i].pipe
            self.pops[pipe] = self.pops.get(pipe, 0) + count

    def pop(self, value: Any, site_idx: int) -> Any:
        s = self.plan.sites[site_idx]
        k = self.pops.get(s.pipe, 0)
        self.pops[s.pipe] = k + 1
        j = k % s.slot_num
        start, lo, hi = s.slots[j]
        return self._write(value, site_idx, s, start, lo, hi, j + 1)


class Unplaced:
    """A kernel call the memory model need not follow (:meth:`Session.frame`): values only, every
    loop batched whole."""

    __slots__ = ()

    def wr(self, value: Any, site_idx: int, *ops: Any) -> Any:
        return value

    def rd(self, site_idx: int, *ops: Any) -> None:
        return None

    def pop(self, value: Any, site_idx: int) -> Any:
        return value

    def peeled(self, session: Session, n: int, pops: tuple[int, ...]) -> Iterator[int | range]:
        if n > 0:
            yield range(0, n)

    def skip_pops(self, sites: tuple[int, ...], count: int) -> None:
        return None


UNPLACED = Unplaced()


class Proven(Unplaced):
    """The call of a kernel that an earlier run proved (:meth:`Session.frame`), where this run would
    otherwise follow it in the arenas: values only, its loops peeled as :meth:`Frame.peeled` peels
    them (the same iterations one by one, the same middle batched), so that it pushes and pops as a
    followed call would and the lanes it meets interleave as they would have."""

    __slots__ = ("plan",)

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def peeled(self, session: Session, n: int, pops: tuple[int, ...]) -> Iterator[int | range]:
        return _peeled(self.plan, session, n, pops)


def _peeled(plan: Plan, session: Session, n: int, pops: tuple[int, ...]) -> Iterator[int | range]:
    """:meth:`Frame.peeled`, for a followed call and a proven one alike."""
    slots = 1
    for i in pops:
        slots = math.lcm(slots, max(1, int(plan.sites[i].slot_num)))
    head = min(slots + 1, n)
    events = session.events
    yield from range(head)
    if n - 1 > head and session.events == events:
        yield range(head, n - 1)
        yield n - 1
    else:
        yield from range(head, n)


def _where(s: Site, slot: int) -> str:
    if s.kind == "p":
        return f"pipe slot {slot - 1} at {s.space} [{s.start + (slot - 1) * s.slot_size}, +{s.nbytes})"
    if slot < 0:
        return f"scratch of {s.memref}" if s.memref else "scratch"
    return s.memref


class MemoryObserver(Observer):
    """A fresh :class:`Session` for a run of a placed dump; its findings as ``memory.hazards`` rows."""

    def __init__(self) -> None:
        self.session: Session | None = None
        self.findings: list[Hazard] = []

    def started(self, ns: dict[str, Any], run: RunInfo) -> None:
        if "_pl_mem_session" in ns:
            self.session = ns["_pl_mem_session"] = Session()

    def found(self) -> Sequence[Finding]:
        """The findings so far, while the run goes (``kind``, ``line``, ``message``); the live list, to read."""
        return self.session.findings if self.session is not None else ()

    def finished(self, run: RunInfo) -> None:
        if self.session is not None:
            self.findings = [f.to_json() for f in self.session.findings]
            if run.error is None:
                self.session.proofs()
