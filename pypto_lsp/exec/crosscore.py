"""AIC/AIV cross-core runtime: runs a Group's cube and vector kernels as greenlets joined by FIFOs.

Model (pass-dump reference §5, re-designed):

* :func:`run_group` runs one AIC kernel (lane 0) and one or two AIV lane kernels
  (two when the split code is 1..4 or the AIV kernel has ``dual_aiv_dispatch``),
  all calling their kernel with the same arguments; it returns AIV lane 0's value.
  The kernels are greenlets of the calling thread: one runs at a time and the turn
  passes in a fixed order (see :class:`Runtime`), so no FIFO needs a lock and every
  run gives the same numbers.
* Each group run owns a fresh :class:`Runtime` (bound to its kernels through
  :mod:`.context`), so nested or concurrent groups never share FIFOs.
* FIFOs are keyed by direction, split code, lane AND pipe ``id``. DIVERGENCE: the
  reference ignores ``id``, so two interleaved pipes of one group get mis-paired.
* Every push stores a clone carrying the valid region, so later producer writes
  never reach the consumer. Under the sanitizer the clone (a lane's part, a merged
  tile) carries the tile's undefined elements too (:mod:`.definedness`).
* Deadlock is detected at once: when every unfinished kernel of the group waits in a
  pop whose FIFO is empty (finished kernels no longer count), the first blocked pop
  raises :class:`CrossCoreError` (``kind="deadlock"``) and the others are unwound.
  DIVERGENCE: the reference only notices after its 10 s pop timeout; here a pop never
  waits in real time. ``group_timeout_s`` bounds a whole group run; it is checked at
  every hand-over (a kernel spinning without touching a pipe is stopped by the
  caller's per-file timeout).
* A failing kernel cancels the others (they are resumed with a suppressed
  cancellation where they stand) and the caller gets
  ``CrossCoreError(kind="thread_error")`` chained (``__cause__``) to the original
  exception, whose traceback still holds the generated-code frame that failed.

Outside any group (a Group without ``_aic``/``_aiv`` members executed directly,
a kernel called on its own) transport ops use a per-thread standalone runtime:
pushes queue up, and a pop of an empty FIFO is a deadlock straight away because
no other core exists to fill it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import greenlet
import torch

from . import context, sanitizer
from .fifo import Fifo, Tiles, parts_view, popped
from .lane_tiles import SPLIT_CODES, fit_shape, merge_tiles, split_code, split_tile
from .values import get_valid, with_valid

__all__ = [
    "CrossCoreError",
    "DEFAULT_GROUP_TIMEOUT_S",
    "configure",
    "run_group",
    "get_runtime",
    "Runtime",
    "split_tile",
    "merge_tiles",
    "fit_shape",
    "parts_view",
    "Fifo",
    "Tiles",
    "split_code",
    "run_lanes",
]

DEFAULT_GROUP_TIMEOUT_S = 30.0


_OBSERVER = threading.local()


def set_observer(fn: Callable[[Runtime, int], None] | None) -> None:
    """This thread's deadlock observer (the debugger's, ``pypto_lsp.debug``): called with the
    group's runtime and the slot of the first blocked kernel when no kernel can make progress,
    before that kernel gets the deadlock error (every kernel is still suspended where it waits)."""
    _OBSERVER.fn = fn


def configure(*, group_timeout_s: float | None = None) -> None:
    """Change the module-wide default group timeout (used by group runs started afterwards)."""
    global DEFAULT_GROUP_TIMEOUT_S
    if group_timeout_s is not None:
        DEFAULT_GROUP_TIMEOUT_S = float(group_timeout_s)


class CrossCoreError(RuntimeError):
    """A cross-core failure: a deadlock, a timeout, or a kernel that raised (kind ``thread_error``)."""

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        op: str | None = None,
        split: int | None = None,
        lane: int | None = None,
        role: str | None = None,
        queue_depths: dict[str, int] | None = None,
        group: str | None = None,
        function: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.op = op
        self.split = split
        self.lane = lane
        self.role = role
        self.queue_depths = dict(queue_depths or {})
        self.group = group
        self.function = function


class _Cancelled(BaseException):
    """Thrown into a kernel after its group was cancelled; never reported."""


_UNREAD = torch.empty(0)


def _clone(t: torch.Tensor) -> torch.Tensor:
    c = with_valid(t.clone(), get_valid(t))
    _carry_undefined(lambda x: x, [t], [c])
    return c


def _carry_undefined(make: Callable[..., Any], sources: list[torch.Tensor], made: list[torch.Tensor]) -> None:
    """Under the sanitizer, ``made`` take the undefined elements of ``sources`` as ``make`` moves them
    (:meth:`.definedness.Definedness.carry`); one lookup while no buffer is undefined."""
    san = sanitizer.active()
    if san is not None and san.defined.shadows:
        san.defined.carry(make, sources, made)


_Key = tuple[str, int, int | None, int]


class Runtime:
    """FIFOs and scheduling of one group run (or of one thread's standalone use).

    The kernels of a group run as greenlets in the calling thread, one at a time, so
    the FIFOs and the gather/shard meeting points are plain data without locks.
    DIVERGENCE: the reference runs them as free-running threads, so programs whose
    lanes share a read-modify-write give run-dependent numbers, and a deadlock is
    only noticed after a 10 s pop timeout. Here the turn passes in a fixed order
    (AIC, AIV lane 0, lane 1, ...) only when the running kernel blocks in a pop,
    has queued several tiles, or ends: every run gives the same numbers, a switch
    costs microseconds instead of a thread hand-off, and a deadlock is known the
    moment no kernel can make progress.
    """

    # A producer that has this many tiles queued lets the consumers run (it stays runnable).
    # Hardware pipes hold a few slots; yielding, not blocking, keeps the reference's
    # unbounded-FIFO results while never letting one kernel run away with the turn.
    YIELD_DEPTH = 4

    def __init__(self, name: str, *, split: int, dual_nosplit: bool, group_timeout_s: float, standalone: bool = False) -> None:
        self.name = name
        self.split = split
        self.dual_nosplit = dual_nosplit
        self.group_timeout_s = group_timeout_s
        self.standalone = standalone
        self.fifos: dict[_Key, Fifo] = {}
        self.cancelled = False
        self.deadlocked: list[str] | None = None
        self.failures: list[tuple[str, int, str, BaseException]] = []
        self.suppressed: list[BaseException] = []
        self.results: dict[tuple[str, int], Any] = {}
        self._gather: dict[tuple[int, int], dict[str, Any]] = {}
        self._gather_seq: dict[int, int] = {}
        self._shard: dict[int, dict[str, Any]] = {}
        self._shard_seq: dict[int, int] = {}
        self.lanes = 2  # AIV lanes that meet at a gather or shard
        # a dual-dispatch no-split pair run without its lane 1 (exec.task_watch: a task between the
        # watched ones, whose lane 1 did nothing the others or the output see): nothing is queued for it
        self.lane1_absent = False
        # a lane-only run (a split_aiv function): no AIC kernel, lane 0 does the cube work
        self.lanes_only = False
        # slot -> (predicate, op, split, lane, description) while blocked in a pop
        self.blocked: dict[int, tuple[Callable[[], bool], str, int, int, str]] = {}
        self.scheduler: Any = None  # the greenlet running the scheduler (set by run_group)
        self.deadline = float("inf")
        # (direction, pipe id) -> slots of its ring (set by *_initialize_pipe with the sanitizer on)
        self.rings: dict[tuple[str, int], int] = {}
        self.bulk: set[_Key] = set()  # FIFOs a batched loop filled at once (their bound is the loop's)
        self.waiting_why: dict[int, str] = {}  # slot -> why a blocked push waits (a full ring)

    def set_ring(self, direction: str, pid: int, slots: int) -> None:
        self.rings[(direction, pid)] = slots

    def _free_slot(self, key: _Key, q: Fifo, op: str, split: int, lane: int) -> None:
        """A push into a full ring waits until the consumer pops a slot; with nobody left to pop it,
        the run is deadlocked at this push (on the NPU the producer waits for ``tfree`` forever)."""
        slots = self.rings.get((key[0], key[3])) if self.rings else None
        if not slots or key in self.bulk or len(q) < slots:
            return
        ring = f"ring {key[0]}[lane={'*' if key[2] is None else key[2]}, id={key[3]}]"
        self._wait(lambda: len(q) < slots, op, split, lane, why=f"no free slot: {len(q)} of {slots} slots of {ring} hold unpopped tiles")

    # -- helpers ----------------------------------------------------------------

    def dual_lanes(self) -> tuple[int, ...]:
        """The AIV lanes of a dual-dispatch no-split pair that run (lane 1 may be left out: ``lane1_absent``)."""
        return (0,) if self.lane1_absent else (0, 1)

    def _q(self, key: _Key) -> Fifo:
        q = self.fifos.get(key)
        if q is None:
            q = self.fifos[key] = Fifo()
        return q

    def waiting(self) -> dict[int, str]:
        """Slot -> the pop its kernel waits in (``tile.tpop_from_aic(split=1, lane=0, aiv)``)."""
        return {slot: b[4] for slot, b in sorted(self.blocked.items())}

    def queue_depths(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for (direction, split, lane, pid), q in sorted(self.fifos.items(), key=lambda kv: repr(kv[0])):
            lane_s = "*" if lane is None else str(lane)
            out[f"{direction}[split={split},lane={lane_s},id={pid}]"] = len(q)
        return out

    def error(self, kind: str, op: str, split: int, lane: int, role: str | None, why: str = "") -> CrossCoreError:
        depths = self.queue_depths()
        where = f"{op}(split={split}, lane={lane}{', role=' + role if role else ''})"
        if kind == "deadlock":
            if why:
                msg = f"{where} deadlock: {why}, and no other core will pop it"
            elif self.standalone:
                msg = f"{where} deadlock: pop from an empty FIFO outside a cross-core group, no other core can push it"
            else:
                blocked = ", ".join(self.deadlocked or [])
                msg = f"{where} deadlock in group '{self.name}': no kernel can make progress (blocked: {blocked})"
        else:
            msg = f"{where} timeout: group '{self.name}' ran past its {self.group_timeout_s:g} s budget"
        msg += f"; queue depths: {depths}"
        return CrossCoreError(msg, kind=kind, op=op, split=split, lane=lane, role=role, queue_depths=depths, group=self.name)

    def _check_cancel(self) -> None:
        if self.cancelled:
            raise _Cancelled()

    def _my_slot(self) -> int:
        if self.lanes_only:
            return context.lane()
        return 0 if context.role() == "aic" else 1 + context.lane()

    def _switch_out(self, why: str) -> None:
        """Hand control back to the scheduler; it resumes us (or throws into us) later."""
        slot = self._my_slot()
        self.scheduler.switch((why, slot))
        self._check_cancel()

    def _after_push(self, depth: int) -> None:
        if self.standalone or self.scheduler is None or depth < self.YIELD_DEPTH:
            return
        self._switch_out("yield")

    def _wait(self, pred: Callable[[], bool], op: str, split: int, lane: int, why: str = "") -> None:
        """Until ``pred()``: let the other kernels run; the scheduler raises deadlocks in here."""
        self._check_cancel()
        if pred():
            return
        if self.standalone or self.scheduler is None:
            raise self.error("deadlock", op, split, lane, context.role(), why)
        slot = self._my_slot()
        role = context.role()
        desc = f"{op}(split={split}, lane={lane}{', ' + role if role else ''}{': ' + why if why else ''})"
        self.blocked[slot] = (pred, op, split, lane, desc)
        if why:
            self.waiting_why[slot] = why
        try:
            while not pred():
                self._switch_out("blocked")
        finally:
            self.blocked.pop(slot, None)
            self.waiting_why.pop(slot, None)

    # -- AIC -> AIV ----------------------------------------------------------

    def push_to_aiv(self, tile: torch.Tensor, split: int, lane_stride: int = 0, pid: int = 0) -> None:
        if split == 0:
            items: list[tuple[_Key, torch.Tensor]]
            if self.dual_nosplit:
                items = [(("to_aiv", 0, lane, pid), _clone(tile)) for lane in self.dual_lanes()]
            else:
                items = [(("to_aiv", 0, None, pid), _clone(tile))]
        elif split in SPLIT_CODES:
            p0, p1 = split_tile(tile, split, lane_stride)
            _carry_undefined(lambda t: split_tile(t, split, lane_stride), [tile], [p0, p1])
            items = [(("to_aiv", split, 0, pid), p0), (("to_aiv", split, 1, pid), p1)]
        else:
            raise ValueError(f"tile.tpush_to_aiv: unsupported split code {split}")
        self._check_cancel()
        for key, t in items:
            q = self._q(key)
            if self.rings:
                self._free_slot(key, q, "tile.tpush_to_aiv", split, key[2] or 0)
            q.append(t)
        # consumers run when the scheduler hands them the turn
        self._after_push(max(len(self._q(k)) for k, _ in items))

    def _lane_key(self, direction: str, op: str, verb: str, split: int, lane: int, pid: int) -> _Key:
        """The FIFO of one AIV lane's end of a pipe: per lane when split (or a dual-dispatch no-split
        kernel), one shared FIFO for a single-lane no-split kernel."""
        if split == 0 and not self.dual_nosplit:
            return (direction, 0, None, pid)
        if split != 0 and split not in SPLIT_CODES:
            raise ValueError(f"{op}: unsupported split code {split}")
        if lane not in (0, 1):
            what = "dual-dispatch no-split" if split == 0 else "split"
            raise ValueError(f"{op}: {what} {verb} needs lane 0 or 1, got {lane}")
        return (direction, split, lane, pid)

    def pop_from_aic(self, split: int, lane: int, pid: int = 0) -> torch.Tensor:
        op = "tile.tpop_from_aic"
        q = self._q(self._lane_key("to_aiv", op, "pop", split, lane, pid))
        self._wait(lambda: len(q) > 0, op, split, lane)
        return q.popleft()

    def pop_many_from_aic(self, split: int, lane: int, pid: int, n: int) -> Sequence[torch.Tensor]:
        """``n`` no-split pops in a row (a batched loop, :mod:`.pipebatch`): blocks whenever the
        FIFO is empty, as ``n`` single pops with nothing in between would, so the turns pass alike."""
        op = "tile.tpop_from_aic"
        if split != 0:
            raise ValueError(f"{op}: batched pops are no-split only, got split code {split}")
        key: _Key = ("to_aiv", 0, lane if self.dual_nosplit else None, pid)
        if self.dual_nosplit and lane not in (0, 1):
            raise ValueError(f"{op}: dual-dispatch no-split pop needs lane 0 or 1, got {lane}")
        out: list[Any] = []
        q = self._q(key)
        left = n
        while left > 0:
            self._wait(lambda: len(q) > 0, op, split, lane)
            k = min(len(q), left)
            q.take(k, out)
            left -= k
        return popped(out)

    # -- AIV -> AIC ----------------------------------------------------------

    def push_to_aic(self, tile: torch.Tensor, split: int, lane: int, pid: int = 0) -> None:
        op = "tile.tpush_to_aic"
        if split in (3, 4):
            # There is no odd vector->cube transport (the lanes only abut when equal).
            raise ValueError(f"{op}: odd split code {split} has no vector->cube form")
        key = self._lane_key("to_aic", op, "push", split, lane, pid)
        item = _clone(tile)
        self._check_cancel()
        q = self._q(key)
        if self.rings:
            self._free_slot(key, q, op, split, lane)
        q.append(item)
        self._after_push(len(q))

    def pop_from_aiv(self, split: int, lane: int = 0, pid: int = 0) -> torch.Tensor:
        op = "tile.tpop_from_aiv"
        if split in (3, 4):
            raise ValueError(f"{op}: odd split code {split} has no vector->cube form")
        if split not in (0, 1, 2):
            raise ValueError(f"{op}: unsupported split code {split}")
        if split == 0:  # the one FIFO, or a dual-dispatch pair's: a tile from each lane that runs, lane 0's kept
            qs = [self._q(k) for k in self._pop_keys(op, 0, lane, pid)]
            self._wait(lambda: all(len(q) > 0 for q in qs), op, split, lane)
            return [q.popleft() for q in qs][0]
        q0 = self._q(("to_aic", split, 0, pid))
        q1 = self._q(("to_aic", split, 1, pid))
        self._wait(lambda: len(q0) > 0 and len(q1) > 0, op, split, lane)
        p0 = q0.popleft()
        p1 = q1.popleft()
        merged = merge_tiles(p0, p1, split)
        _carry_undefined(lambda a, b: merge_tiles(a, b, split), [p0, p1], [merged])
        return merged

    # -- many tiles at once (a sweep, :mod:`.sweep`): no-split pipes only --------

    def _pop_keys(self, op: str, split: int, lane: int, pid: int) -> list[_Key]:
        """The FIFOs a no-split pop of ``op`` takes from (two for a cube popping dual lanes)."""
        if split != 0:
            raise ValueError(f"{op}: batched pipe transfers are no-split only, got split code {split}")
        if op == "tile.tpop_from_aic":
            return [self._lane_key("to_aiv", op, "pop", 0, lane, pid)]
        if self.dual_nosplit:
            return [("to_aic", 0, lane, pid) for lane in self.dual_lanes()]
        return [("to_aic", 0, None, pid)]

    def ready_count(self, op: str, split: int, lane: int, pid: int) -> int:
        """How many pops of ``op`` would not block now."""
        return min(len(self._q(k)) for k in self._pop_keys(op, split, lane, pid))

    def wait_ready(self, op: str, split: int, lane: int, pid: int) -> None:
        """Until one pop of ``op`` would not block (the scheduler raises deadlocks in here)."""
        self._wait(lambda: self.ready_count(op, split, lane, pid) > 0, op, split, lane)

    def push_many_to_aic(self, copies: Callable[[], Any], split: int, lane: int, pid: int = 0, count: int | None = None) -> None:
        """``tile.tpush_to_aic`` of many tiles in order, handing the turn on once at the end.

        ``copies()`` returns the tiles as fresh copies (what a push queues), one call per FIFO: a
        list, or one ``[n, ...]`` buffer whose rows are the tiles (:meth:`Fifo.extend`).
        With ``count`` (how many) and a dual-dispatch no-split pipe, lane 1 queues that many
        placeholders instead: the cube keeps lane 0's tile of each pair and never reads lane 1's.
        """
        op = "tile.tpush_to_aic"
        if split != 0:
            raise ValueError(f"{op}: batched pipe transfers are no-split only, got split code {split}")
        key = self._lane_key("to_aic", op, "push", 0, lane, pid)
        q = self._q(key)
        self.bulk.add(key)
        self._check_cancel()
        if count is not None and self.dual_nosplit and lane != 0:
            q.extend(itertools.repeat(_UNREAD, count))
        else:
            q.extend(copies())
        self._after_push(len(q))

    def push_many_to_aiv(self, copies: Callable[[], Any], split: int, pid: int = 0) -> None:
        """``tile.tpush_to_aiv`` of many tiles in order (each lane's FIFO gets its own copies from
        ``copies()``), handing the turn on once at the end."""
        if split != 0:
            raise ValueError(f"tile.tpush_to_aiv: batched pipe transfers are no-split only, got split code {split}")
        keys: list[_Key] = [("to_aiv", 0, lane, pid) for lane in self.dual_lanes()] if self.dual_nosplit else [("to_aiv", 0, None, pid)]
        self._check_cancel()
        for key in keys:
            self.bulk.add(key)
            self._q(key).extend(copies())
        self._after_push(max(len(self._q(k)) for k in keys))

    def pop_many_from_aiv(self, split: int, pid: int, n: int) -> Sequence[torch.Tensor]:
        """``n`` no-split ``tile.tpop_from_aiv`` in a row (a dual-dispatch pair keeps lane 0's tile)."""
        op = "tile.tpop_from_aiv"
        keys = self._pop_keys(op, split, 0, pid)
        qs = [self._q(k) for k in keys]
        out: list[Any] = []
        left = n
        while left > 0:
            self._wait(lambda: all(len(q) > 0 for q in qs), op, split, 0)
            k = min(min(len(q) for q in qs), left)
            qs[0].take(k, out)  # a dual-dispatch pair keeps lane 0's tile
            for q in qs[1:]:
                q.take(k, None)
            left -= k
        return popped(out)

    # -- aic_gather / aiv_shard: the lanes meet ----------------------------

    def gather_exchange(self, part: torch.Tensor, code: int, lane: int) -> torch.Tensor:
        """``tile.aic_gather`` run by concurrent lanes: each waits for the other's part, all get the joined tile.

        The n-th gather of one lane meets the n-th gather of the other (the lanes run the
        same statements), whatever else each did in between; the joined tile is made once.
        """
        op = "tile.aic_gather"
        context.note_lane_effect()  # the lanes meet: lane 1 cannot be left out (exec.task_watch)
        seq = self._gather_seq.get(lane, 0)
        self._gather_seq[lane] = seq + 1
        entry = self._gather.setdefault((code, seq), {"parts": {}, "taken": 0, "merged": None})
        entry["parts"][lane] = _clone(part)
        self._wait(lambda: len(entry["parts"]) >= self.lanes, op, code, lane)
        if entry["merged"] is None:
            entry["merged"] = merge_tiles(entry["parts"][0], entry["parts"][1], code)
        entry["taken"] += 1
        if entry["taken"] >= self.lanes:
            del self._gather[(code, seq)]
        return _clone(entry["merged"])

    def shard_exchange(self, whole: Any, code: int, lane: int, lane_stride: int = 0) -> torch.Tensor:
        """``tile.aiv_shard`` run by concurrent lanes: the tile lane 0 made (the cube work ran
        there once), cut as ``tile.tpush_to_aiv`` cuts it; each lane takes its part.

        The n-th shard of one lane meets the n-th shard of lane 0. Split code 0 hands every
        lane the whole tile.
        """
        op = "tile.aiv_shard"
        context.note_lane_effect()
        seq = self._shard_seq.get(lane, 0)
        self._shard_seq[lane] = seq + 1
        entry = self._shard.setdefault(seq, {"whole": None, "parts": None, "taken": 0})
        if lane == 0:
            if not isinstance(whole, torch.Tensor):
                raise TypeError(f"{op}: lane 0 has no tile to hand out (got {type(whole).__name__})")
            entry["whole"] = _clone(whole)
        self._wait(lambda: entry["whole"] is not None, op, code, lane)
        if entry["parts"] is None:
            w = entry["whole"]
            entry["parts"] = split_tile(w, code, lane_stride) if code in SPLIT_CODES else (w, w)
        entry["taken"] += 1
        if entry["taken"] >= self.lanes:
            del self._shard[seq]
        return _clone(entry["parts"][lane])

    # -- kernel accounting --------------------------------------------------------

    def kernel_finished(self, role: str, lane: int, fn_name: str, result: Any, exc: BaseException | None) -> None:
        if exc is None:
            self.results[(role, lane)] = result
        elif isinstance(exc, _Cancelled):
            pass
        elif self.cancelled:
            self.suppressed.append(exc)  # a consequence of the first failure
        else:
            self.failures.append((role, lane, fn_name, exc))
            self.cancelled = True


def get_runtime() -> Runtime:
    """The runtime of the current group kernel, else this thread's standalone runtime."""
    rt = context.current_runtime()
    if rt is not None:
        return rt
    rt = context.standalone()
    if rt is None:
        rt = Runtime("<no group>", split=0, dual_nosplit=False, group_timeout_s=DEFAULT_GROUP_TIMEOUT_S, standalone=True)
        context.set_standalone(rt)
    return rt


# ---------------------------------------------------------------------- group runner


def run_group(
    name: str,
    aic_fn: Callable[..., Any] | None,
    aiv_fn: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    split: int,
    dual_aiv_dispatch: bool,
    group_timeout_s: float | None = None,
) -> Any:
    """Run a Group: ``aic_fn(*args)`` as the AIC kernel, ``aiv_fn(*args)`` on each AIV lane.

    Returns AIV lane 0's return value. Raises :class:`CrossCoreError` chained to
    the kernel's exception on any failure. ``group_timeout_s`` bounds the whole
    run; it is checked whenever a kernel hands over (a kernel spinning without
    touching a pipe is stopped by the per-file timeout of the caller instead).
    Without ``aic_fn`` only the two AIV lanes run (see :func:`run_lanes`).
    """
    split = split_code(split)
    dual = bool(dual_aiv_dispatch)
    n_aiv = 2 if split in SPLIT_CODES or dual or aic_fn is None else 1
    group_t = DEFAULT_GROUP_TIMEOUT_S if group_timeout_s is None else float(group_timeout_s)
    rt = Runtime(name, split=split, dual_nosplit=(split == 0 and dual), group_timeout_s=group_t)
    rt.lanes = n_aiv
    rt.lanes_only = aic_fn is None
    skip = context.take_lane_skip()
    # lane 1 of a dual-dispatch no-split pair left out, where exec.task_watch found it idle in the
    # watched tasks of this loop (the cube never reads its pushes; it wrote no global buffer, met no
    # lane): lane 0 still runs as lane 0 of 2, its call of the kernel counted for lane 1 too
    rt.lane1_absent = skip is not None and rt.dual_nosplit and aic_fn is not None and n_aiv == 2 and context.block_num() == 1
    parent = context.current()
    roles: list[tuple[str, int, Callable[..., Any]]] = [("aic", 0, aic_fn)] if aic_fn is not None else []
    roles += [("aiv", lane, aiv_fn) for lane in range(1 if rt.lane1_absent else n_aiv)]
    if rt.lane1_absent:
        skip(aiv_fn)
    mode = split if aic_fn is None else 0
    ctxs = [
        parent.derive(lane=lane, lanes=n_aiv if role == "aiv" else 0, role=role, runtime=rt, split_mode=mode) for role, lane, _fn in roles
    ]

    def make(slot: int) -> Callable[[], Any]:
        role, lane, fn = roles[slot]
        fn_name = getattr(fn, "__name__", repr(fn))

        def body() -> Any:
            try:
                result = fn(*args)
            except BaseException as exc:
                rt.kernel_finished(role, lane, fn_name, None, exc)
                return None
            rt.kernel_finished(role, lane, fn_name, result, None)
            return None

        return body

    me = greenlet.getcurrent()
    rt.scheduler = me
    kernels = [greenlet.greenlet(make(i), parent=me) for i in range(len(roles))]
    done = [False] * len(roles)
    started = [False] * len(roles)
    outer = context.current()
    rt.deadline = time.monotonic() + group_t
    timed_out = False
    cur = 0
    n = len(roles)

    def resume(slot: int, throw: BaseException | None = None) -> None:
        context.swap(ctxs[slot])
        try:
            if throw is not None:
                kernels[slot].throw(throw)
            else:
                kernels[slot].switch()
        finally:
            ctxs[slot] = context.swap(outer)  # keep what the kernel changed (a bound() it is inside)
        started[slot] = True
        if kernels[slot].dead:
            done[slot] = True

    try:
        while not all(done):
            if rt.cancelled:
                # a kernel failed: unwind the others where they stand
                for s in range(n):
                    if not done[s]:
                        if started[s]:
                            resume(s, _Cancelled())
                        done[s] = True
                break
            if time.monotonic() > rt.deadline:
                timed_out = True
                for s in range(n):
                    if not done[s]:
                        if started[s]:
                            resume(s, _Cancelled())
                        done[s] = True
                break
            pick = None
            for k in range(n):
                s = (cur + k) % n
                if done[s]:
                    continue
                b = rt.blocked.get(s)
                if b is None or b[0]():
                    pick = s
                    break
            if pick is None:
                # nobody can run: a deadlock, reported in the first blocked pop (its frame
                # holds the IR line); the other blocked kernels are unwound
                rt.deadlocked = [b[4] for _, b in sorted(rt.blocked.items())]
                first = min(rt.blocked)
                obs = getattr(_OBSERVER, "fn", None)
                if obs is not None:
                    obs(rt, first)
                _pred, op, sp, ln, _desc = rt.blocked[first]
                role = roles[first][0]
                resume(first, rt.error("deadlock", op, sp, ln, role, rt.waiting_why.get(first, "")))
                continue
            resume(pick)
            cur = (pick + 1) % n
    finally:
        context.swap(outer)

    if rt.failures:
        depths = rt.queue_depths()  # (only for the message: sorting the FIFOs cost every task ~20 µs)
        role, lane, fn_name, exc = rt.failures[0]
        if isinstance(exc, CrossCoreError) and exc.kind in ("deadlock", "timeout"):
            raise CrossCoreError(
                str(exc),
                kind=exc.kind,
                op=exc.op,
                split=exc.split,
                lane=exc.lane,
                role=exc.role or role,
                queue_depths=exc.queue_depths,
                group=name,
                function=fn_name,
            ) from exc
        raise CrossCoreError(
            f"group '{name}': kernel {fn_name} ({role}{', lane ' + str(lane) if role == 'aiv' else ''}) failed: "
            f"{type(exc).__name__}: {exc}; queue depths: {depths}",
            kind="thread_error",
            op=None,
            split=split,
            lane=lane,
            role=role,
            queue_depths=depths,
            group=name,
            function=fn_name,
        ) from exc
    if timed_out:
        depths = rt.queue_depths()
        alive = sum(1 for s in range(n) if started[s] and not kernels[s].dead)
        raise CrossCoreError(
            f"group '{name}' did not finish within {group_t:g} s ({alive} kernel(s) still running); queue depths: {depths}",
            kind="timeout",
            op="group",
            split=split,
            lane=None,
            role=None,
            queue_depths=depths,
            group=name,
        )
    return rt.results.get(("aiv", 0))


def run_lanes(name: str, fn: Callable[..., Any], args: tuple[Any, ...], *, split: int) -> Any:
    """A ``split_aiv`` function: ``fn(*args)`` on two AIV lanes that meet at each
    ``tile.aic_gather`` / ``tile.aiv_shard`` (:meth:`Runtime.gather_exchange`,
    :meth:`Runtime.shard_exchange`); lane 0 alone runs the cube work between them
    (the generated code asks :func:`runs_cube`). Returns lane 0's value.

    DIVERGENCE (by design): the reference has no runner for these markers; the
    compiler's ExpandMixedKernel turns them into tpush/tpop pairs between an AIC
    kernel and the lanes, which this run reproduces without the split.
    """
    return run_group(name, None, fn, args, split=split, dual_aiv_dispatch=True)


def runs_cube() -> bool:
    """False on lanes other than 0 of a :func:`run_lanes` run (they skip the cube work)."""
    rt = context.current_runtime()
    return not (rt is not None and rt.lanes_only and context.lane() != 0)
