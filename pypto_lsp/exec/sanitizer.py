"""The device's sanitizer, run on the simulator: task order, uninitialised global memory, windows
out of bounds. An observer of one run (see :mod:`.observe`).

**Tasks.** Each call an Orchestration function makes to a kernel, a Group or an SPMD wrapper is one
runtime task (hw-native-sys/simpler, ``runtime/pto_orchestrator.cpp`` ``submit_task_common``; one
task per call, an SPMD launch of N blocks included). The runtime orders a task after an earlier
one only through these edges (simpler ``runtime/tensormap_and_ringbuffer/runtime/pto_dep_compute.h``,
``compute_task_fanin`` and ``register_task_outputs``; PyPTO ``docs/en/dev/passes/37-derive_call_directions.md``):

* explicit ``deps=[...]`` of a ``pl.submit`` (always, in AUTO and MANUAL scopes);
* for an ``input`` or ``inout`` argument, every earlier writer still registered for an overlapping
  region of the same buffer (the TensorMap lookup, keyed by the buffer's base address, then by region);
* ``inout`` and ``output_existing`` register the task as a writer of that region (``inout``
  replaces the entries it covers); ``output`` is lowered to ``output_existing`` by PyPTO's codegen;
* ``no_dep`` and ``scalar`` do neither, and neither does anything for a ``manual_dep=True`` tensor or
  inside a MANUAL scope.

A reader is never registered: a write after a read (WAR) is ordered only through other edges
(simpler ``docs/orchestrator.md``: "WAR (write-after-read) is not tracked directly"), and
``output_existing`` is not ordered after an earlier writer.

Each task's actual global reads and writes (the buffer and the box of elements, from ``tile.load``,
``tile.store``, ``assemble``, ``read``/``write`` and the batched loops' windows) are recorded; after
the run, two tasks that touch overlapping elements, one of them writing, with no path of edges between
them, are a ``race`` (RAW, WAR or WAW). Inside one task, the SPMD blocks of a launch and the AIV
lanes run at the same time: two of them writing overlapping elements is a race too.

**Loops of like tasks.** Where an orchestrator loop's tasks could run as one batch
(:mod:`pypto_lsp.analysis.task_batch_plan`), its first three tasks and its last are watched as
above and the ones between run unwatched, their records made from the first ones
(:mod:`.task_watch`: same findings, races and task graph, tested both ways on every fixture).

**Uninitialised.** ``tensor.create`` without ``init_value`` holds whatever the buffer held. Its
elements carry "undefined" through every kernel (:mod:`.definedness`); a finding is raised only where
such a value matters: an output or returned value at the end of the run, or a scalar read back (a
branch, a bound, an index). (Tiles are checked from the IR: :mod:`pypto_lsp.ir.initcheck`.)
``strict`` (``--sanitize strict``) also lists, as information (kind ``undefined-read``, which fails
nothing), each such buffer whose undefined elements are read but reach none of those.

**Out of bounds.** A window whose valid part reaches past its tensor's (or tile's) extent reads or
writes neighbouring memory on the device; here it is clipped. Parts outside the requested valid
region are no access.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import torch

from ..ir.memory import Hazard
from ..ir.tasks import INOUT, INPUT, NO_DEP, OUTPUT, OUTPUT_EXISTING, SCALAR, TaskSite
from . import context, spmd, task_watch
from .boxes import Box, Root, bounding, covers, intersect, joined, overlap
from .definedness import Definedness
from .observe import Observer, RunInfo
from .race_index import AccessIndex, past
from .ranks import current_rank
from .task_watch import LoopWatch
from .uninitialised import UndefinedValues

__all__ = ["Sanitizer", "active", "suspend", "resume", "undefined_in", "Box", "Reorder"]

# a task with more boxes than this on one buffer keeps their bounding box (conservative)
_MAX_BOXES = 64


@dataclass(slots=True)
class _Task:
    index: int
    site: TaskSite
    deps: set[int] = field(default_factory=set)
    # what happens before this task: every task below ``floor``, and task i >= floor where bit i
    # of ``reach`` is set. A chain of tasks (program order, a loop of dependent tasks) keeps no bits
    # at all: one bit per earlier task was quadratic memory (8000 tasks in program order: 1.7 GB)
    floor: int = 0
    reach: int = 0

    def after(self, a: _Task) -> bool:
        """``a`` happens before this task."""
        return a.index < self.floor or bool((self.reach >> a.index) & 1)

    def join(self, deps: Iterable[_Task]) -> None:
        """Happens after each of ``deps`` and after whatever happens before them."""
        floor, bits = self.floor, self.reach
        for d in deps:
            floor = max(floor, d.floor)
            bits |= d.reach | (1 << d.index)
        rest = bits >> floor
        floor += (~rest & (rest + 1)).bit_length() - 1  # the tasks from floor on, in a row
        self.floor, self.reach = floor, (bits >> floor) << floor

    # root key -> kind ("r"/"w") -> boxes
    access: dict[int, dict[str, list[Box]]] = field(default_factory=dict)
    # root key -> (block, lane) -> write boxes (the parts of the task that run at the same time)
    parts: dict[int, dict[tuple[int, int, int], list[Box]]] = field(default_factory=dict)  # (block, lane, barrier phase)
    args: dict[int, int] = field(default_factory=dict)  # root key -> the argument's index
    rank: int | None = None  # the rank whose runtime runs it (multi-rank programs, exec.ranks)


@dataclass(slots=True)
class Reorder:
    """Run the task ``first`` only after the task ``after`` (another order the runtime allows)."""

    first: int
    after: int


_local = threading.local()


def active() -> Sanitizer | None:
    """The sanitizer of the run on this thread (None: off)."""
    return getattr(_local, "san", None)


def suspend() -> Sanitizer | None:
    """Switch the sanitizer off on this thread (a kernel run on a shadow is no access); :func:`resume`."""
    san = active()
    _local.san = None
    return san


def resume(san: Sanitizer | None) -> None:
    _local.san = san


def undefined_in(values: Sequence[Any]) -> bool:
    """Any of ``values`` holds an undefined element (a batched path then runs as written, kernel by kernel)."""
    san = active()
    if san is None or not san.defined.shadows:
        return False
    return any(san.defined.undefined(v) for v in values)


class Sanitizer(Observer):
    """Watches one run (an :class:`~pypto_lsp.exec.observe.Observer`); ``findings`` are
    ``memory.hazards``-shaped dicts."""

    def __init__(
        self,
        sites: Sequence[TaskSite],
        gen_filename: str,
        ir_line: Callable[[int], int | None],
        reorder: Reorder | None = None,
        strict: bool = False,
        loops: dict[int, tuple[int, bool]] | None = None,
        idle_lanes: bool = False,
    ) -> None:
        self.sites = list(sites)
        self.gen_filename = gen_filename
        self.ir_line = ir_line  # generated line -> IR line
        self.reorder = reorder
        self.roots: dict[int, Root] = {}
        self.tasks: list[_Task] = []
        self._current: dict[int | None, _Task | None] = {}  # the task running, per rank (exec.ranks: ranks interleave)
        self.tensormap: dict[int, list[tuple[int, Box]]] = {}
        self.findings: list[Hazard] = []
        self._seen: set[tuple[Any, ...]] = set()
        self._pending: list[Callable[[], Any]] = []
        self._postponed: set[int] = set()
        self.reordered = False  # the reorder was carried out
        self.reorder_blocked: str | None = None
        # accesses matter for races only where the runtime orders tasks by their directions (from
        # DeriveCallDirections on); before, only the uninitialised tensors' reads and writes do
        self.ordering = any(s.directions is not None for s in self.sites)
        self.undefined = UndefinedValues(self.add)  # the findings of what self.defined follows
        self.defined = Definedness(self.caller_line, self.undefined.reached)
        self.defined.suspend, self.defined.resume = suspend, resume
        if strict:
            self.defined.on_read = self.undefined.read
        self.deadline: float | None = None  # time.monotonic() past which the analysis stops
        # site index -> its loop, where the tasks between the first ones and the last run unwatched
        # (exec.task_watch: task_watch.watched_loops); not in the other-order run, nor strict
        self.loops = {i: LoopWatch(n, records) for i, (n, records) in (loops or {}).items()} if reorder is None and not strict else {}
        # an unwatched task may leave out an idle AIV lane 1 (exec.task_watch); not in a traced run,
        # whose frames the debugger and the localisation step through lane by lane
        self.idle_lanes = idle_lanes
        self.lane_skip: Callable[[Callable[..., Any]], None] | None = None  # (set in started)
        self.lanes_left_out = 0  # tasks whose group ran without its lane 1 (for the benchmarks and tests)
        self._ns: dict[str, Any] = {}

    def started(self, ns: dict[str, Any], run: RunInfo) -> None:
        symbols = dict(run.gen.op_symbols)

        def install() -> None:  # once the first undefined buffer exists: every kernel carries shadows
            for op, sym in symbols.items():
                k = ns.get(sym)
                if callable(k):
                    ns[sym] = self.defined.wrap(op, k)

        self.defined.on_first_shadow(install)
        self._ns = ns
        calls = ns.get("_pl_calls")
        if self.idle_lanes and calls is not None:
            ir_names = {py: ir for ir, py in run.gen.functions.items()}

            def count(fn: Callable[..., Any]) -> None:  # lane 1's call of the kernel, counted as made
                self.lanes_left_out += 1
                name = ir_names.get(getattr(fn, "__name__", ""))
                if name is not None:
                    calls[name] += 1

            self.lane_skip = count

    def memory_events(self) -> int:
        """Hazards the run's memory model met so far (a repeat of a reported one included)."""
        return int(getattr(self._ns.get("_pl_mem_session"), "events", 0) or 0)

    # -- the run (observer hooks) --------------------------------------------------------------

    def namespace(self, ns: dict[str, Any], run: RunInfo) -> None:
        ns["_pl_san"] = self  # what the generated task calls and tensor.create call

    def call(self, invoke: Callable[[], Any], run: RunInfo) -> Any:
        _local.san = self
        try:
            for a in run.args:
                if isinstance(a, torch.Tensor):
                    self._root(a)
            out = invoke()
            self._flush()
            if self.defined.shadows:
                self._outputs(run, out)
            self.undefined.reads_to_nowhere()
            return out
        finally:
            _local.san = None

    def fresh(self, t: Any, line: int, name: str, manual_dep: bool = False) -> Any:
        """A ``tensor.create`` without ``init_value``: its elements are unwritten."""
        if isinstance(t, torch.Tensor):
            r = self._root(t, line=line, name=name)
            r.manual_dep = manual_dep
            if not manual_dep:
                self.defined.create(t, line, name)
        return t

    def created(self, t: Any, line: int, name: str, manual_dep: bool = False) -> Any:
        """A ``tensor.create`` with an ``init_value`` (written) or any other new global buffer."""
        if isinstance(t, torch.Tensor):
            self._root(t, line=line, name=name).manual_dep = manual_dep
        return t

    @property
    def current(self) -> _Task | None:
        return self._current.get(current_rank())

    @current.setter
    def current(self, t: _Task | None) -> None:
        self._current[current_rank()] = t

    def submit(self, site_index: int, args: tuple[Any, ...], call: Callable[..., Any], deps: Any = None) -> tuple[Any, int]:
        """``pl.submit``: the task's result and its task id (what ``deps=[...]`` of later tasks name)."""
        out = self.task(site_index, args, call, deps)
        return out, len(self.tasks) - 1

    def task(self, site_index: int, args: tuple[Any, ...], call: Callable[..., Any], deps: Any = None) -> Any:
        """One runtime task: its dependencies from its arguments' directions, then ``call(*args)``."""
        site = self.sites[site_index]
        t = _Task(len(self.tasks), site, rank=current_rank())
        self.tasks.append(t)
        t.deps.update(d for d in _task_ids(deps) if 0 <= d < t.index)
        self._dependencies(t, args)
        watch = self.loops.get(site_index) if self.loops and t.rank is None else None
        if watch is not None:
            pos = watch.position(t)
            if watch.may_skip(pos):
                records = watch.predicted(self, t, args, pos)
                if records is not None:
                    return watch.run(self, t, pos, call, args, records)
            effects, events = context.lane_effects(), self.memory_events()
            with context.lane_skip_offered(watch.lane_skip(self, pos, unwatched=False)):
                out = self._execute(t, call, args)
            watch.after(self, t, pos, quiet_lane=context.lane_effects() == effects, calm=self.memory_events() == events)
            return out
        if self.reorder is not None and self._must_wait(t):
            ret = site.returns
            if ret is None or any(i >= len(args) for i in ret):
                self.reorder_blocked = f"the result of '{site.callee}' (line {site.line}) is no argument of the call"
            else:
                self._postponed.add(t.index)
                self._pending.append(lambda: self._execute(t, call, args))
                vals = tuple(args[i] for i in ret)
                return vals[0] if len(vals) == 1 else vals
        out = self._execute(t, call, args)
        if self.reorder is not None and t.index == self.reorder.after and self._pending:
            self._flush()
            self.reordered = True
        return out

    # -- a watched task sweep (analysis.task_sweep_plan.TaskSweep.watched; exec.task_watch) ----

    def sweep_ready(self, site_index: int, args: tuple[Any, ...], n: int) -> bool:
        """The next ``n`` tasks of the site's loop, its middle ones, may run as one sweep: each would
        run unwatched (:meth:`.task_watch.LoopWatch.sweep_ready`)."""
        watch = self.loops.get(site_index) if self.loops and current_rank() is None else None
        return watch is not None and watch.sweep_ready(self, args, n)

    def unwatched(self, run: Callable[[], Any]) -> Any:
        """The sweep of those tasks, with the sanitizer off, as each would have run."""
        return task_watch.unwatched(self, run)

    def swept_task(self, site_index: int, args: tuple[Any, ...]) -> None:
        """One of those tasks, run by the sweep, submitted in its order: its dependencies from its
        arguments, its records and defined windows as its unwatched run would leave them."""
        t = _Task(len(self.tasks), self.sites[site_index], rank=current_rank())
        self.tasks.append(t)
        self._dependencies(t, args)
        self.loops[site_index].take(self, t, args)

    def dummy(self, deps: Any) -> int:
        """``system.task_dummy(deps=[...])``: a kernel-less task joining ``deps`` (the fan-in point of
        ExpandManualPhaseFence's phase fences); its task id, for later ``deps``."""
        site = TaskSite(-1, self.caller_line() or 0, "task_dummy", "", (), (), None, True)
        t = _Task(len(self.tasks), site)
        self.tasks.append(t)
        t.deps.update(d for d in _task_ids(deps) if 0 <= d < t.index)
        t.join(self.tasks[dep] for dep in t.deps)
        return t.index

    def _must_wait(self, t: _Task) -> bool:
        assert self.reorder is not None
        if t.index == self.reorder.first:
            return True
        return bool(self._postponed) and any(d in self._postponed for d in t.deps)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for run in pending:
            run()
        self._postponed.clear()

    def _execute(self, t: _Task, call: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        outer = self.current
        self.current = t
        try:
            return call(*args)
        finally:
            self.current = outer

    # -- the runtime's dependencies -----------------------------------------------------------

    def _dependencies(self, t: _Task, args: tuple[Any, ...]) -> None:
        site = t.site
        dirs = site.directions
        if dirs is None:
            # no directions (before DeriveCallDirections): the simulator's program order is all we know;
            # the task before is its one edge (what the task graph draws), the rest follows from it
            if t.index:
                t.deps.add(t.index - 1)
            t.floor, t.reach = t.index, 0
            return
        inserts: list[tuple[int, Box, str]] = []
        for i, a in enumerate(args):
            if not isinstance(a, torch.Tensor) or i >= len(dirs):
                continue
            d = dirs[i]
            root = self._root(a)
            t.args.setdefault(root.key, i)
            if d in (SCALAR, NO_DEP) or root.manual_dep or site.manual:
                continue
            box = self._view_box(root, a, [0] * a.dim(), list(a.shape))
            if box is None or box.empty():
                continue
            if d in (INPUT, INOUT):
                for w, wb in self.tensormap.get(root.key, ()):
                    if w != t.index and overlap(root, box, wb):
                        t.deps.add(w)
            if d in (INOUT, OUTPUT_EXISTING, OUTPUT):
                inserts.append((root.key, box, d))
        for key, box, tag in inserts:
            entries = self.tensormap.setdefault(key, [])
            if tag == INOUT:
                root = self.roots[key]
                entries[:] = [(w, wb) for w, wb in entries if not covers(root, box, wb)]
            entries.append((t.index, box))
        t.join(self.tasks[dep] for dep in t.deps)

    # -- global memory ------------------------------------------------------------------------

    def _root(self, t: torch.Tensor, line: int = 0, name: str = "") -> Root:
        key = t.untyped_storage().data_ptr()
        r = self.roots.get(key)
        if r is None or (line and r.line != line and t.storage_offset() == 0 and tuple(t.shape) != r.shape):
            if t.storage_offset() == 0 and t.is_contiguous():
                r = Root(key, t, tuple(t.shape), tuple(t.stride()), True, line, name)
            else:  # a view of a buffer we never saw whole: its flat storage
                n = t.untyped_storage().nbytes() // max(1, t.element_size())
                r = Root(key, t, (n,), (1,), False, line, name)
            self.roots[key] = r
        elif line and not r.line:
            r.line, r.name = line, name
        return r

    def _view_box(self, root: Root, v: torch.Tensor, offs: Sequence[int], sizes: Sequence[int]) -> Box | None:
        """The elements of ``v[offs : offs + sizes]`` in ``root``'s coordinates."""
        if len(offs) != v.dim() or len(sizes) != v.dim():
            return None
        strides = v.stride()
        base = int(v.storage_offset())
        for o, s in zip(offs, strides):  # a plain loop: this runs for every access of a task
            base += int(o) * s
        sizes = [int(n) for n in sizes]
        if min(sizes, default=1) <= 0:
            return Box((0,), (0,), True)
        esize = v.element_size()
        if esize != root.tensor.element_size():
            return None
        if root.contiguous and strides == root.strides:
            lo: list[int] = []
            hi: list[int] = []
            rem: int = base
            for s, n in zip(strides, sizes):
                q, rem = divmod(rem, s) if s else (0, rem)
                lo.append(q)
                hi.append(q + n)
            return Box(tuple(lo), tuple(hi))
        last = base
        for n, s in zip(sizes, strides):
            last += (n - 1) * s
        return Box((base,), (last + 1,), True)

    def is_global(self, t: torch.Tensor) -> bool:
        return t.untyped_storage().data_ptr() in self.roots

    def access(self, kind: str, v: Any, offs: Sequence[int], sizes: Sequence[int], op: str = "") -> None:
        """A read (``"r"``) or write (``"w"``) of the window ``v[offs : offs + sizes]`` of a global tensor."""
        if not isinstance(v, torch.Tensor):
            return
        key = v.untyped_storage().data_ptr()
        root = self.roots.get(key)
        if root is None:
            return  # a tile or a temporary, not a global buffer the run tracks
        t = self.current
        if kind == "w" and context.lane() == 1 and context.role() == "aiv":
            context.note_lane_effect()  # lane 1 wrote a global buffer: it cannot be left out (exec.task_watch)
        split = _lanes_split() if context.lane_count() > 1 else False
        part = t is not None and kind == "w" and context.role() != "aic" and (context.block_num() > 1 or split)
        if self.defined.shadows:
            self._definedness(kind, v, offs, sizes, op)
        if not part and (t is None or not self.ordering):
            return  # nothing to learn: no task order to check, no parallel parts
        box = self._view_box(root, v, offs, sizes)
        if box is None or box.empty():
            return
        if t is None:
            return
        if self.ordering:
            per = t.access.setdefault(key, {})
            boxes = per.setdefault(kind, [])
            # a window next to (or over) the last one along one dimension extends it (the union is
            # exact): a task sweeping a row of tiles keeps one box, not one per tile
            merged = joined(boxes[-1], box) if boxes else None
            if merged is not None:
                boxes[-1] = merged
            elif box not in boxes:
                boxes.append(box)
                if len(boxes) > _MAX_BOXES:
                    boxes[:] = [bounding(boxes)]
        if part:
            # lanes of a dual-dispatch no-split kernel both do the same work: only split lanes own their halves
            # and the block's barrier phase: writes on either side of a system.syncall are ordered (exec.spmd)
            where = (context.block_idx(), context.lane() if split else 0, spmd.phase())
            parts = t.parts.setdefault(key, {})
            pb = parts.setdefault(where, [])
            if box not in pb:
                pb.append(box)
                if len(pb) > _MAX_BOXES:
                    pb[:] = [bounding(pb)]

    def _definedness(self, kind: str, v: torch.Tensor, offs: Sequence[int], sizes: Sequence[int], op: str) -> None:
        """A write defines its window (a store's source shadow is moved in after); a scalar ``read``
        of an undefined element is where the value matters."""
        if (kind != "w" and op != "read") or self.defined.entry(v) is None:
            return  # a read a kernel carries on (definedness.wrap follows it), a buffer with no undefined element
        if len(offs) != v.dim() or len(sizes) != v.dim() or any(int(n) <= 0 for n in sizes):
            return
        win = v[tuple(slice(int(o), int(o) + int(n)) for o, n in zip(offs, sizes, strict=True))]
        if kind == "w":
            self.defined.clear(win)
        elif op == "read":
            self.defined.sink(win, "a scalar read back (a branch, a bound, an index or a value of the orchestration)", self.caller_line())

    def _outputs(self, run: RunInfo, out: Any) -> None:
        """The end of the run: an undefined element in an output or a returned value is a finding."""
        names = {id(t): k for k, t in run.tensors.items()}
        for a in run.args:
            if isinstance(a, torch.Tensor):
                self.defined.sink(a, f"the output '{names.get(id(a), 'output')}'")
        vals = out if isinstance(out, tuple | list) else (out,)
        for i, v in enumerate(vals):
            self.defined.sink(v, "the returned value" if len(vals) == 1 else f"returned value {i}")

    def window(
        self, op: str, extent: Sequence[int], offs: Sequence[int], sizes: Sequence[int], what: str, v: Any = None, clamp_hint: bool = False
    ) -> None:
        """Out of bounds: the valid window ``offs + sizes`` against ``extent`` (a tensor's or tile's shape).
        For a view ``v`` of a global buffer the judge is the allocation: a window leaving the view but
        staying inside its root buffer (or the tensor handed in from the host) reads the buffer's own bytes."""
        bad = [
            (d, int(o), int(n), int(e))
            for d, (o, n, e) in enumerate(zip(offs, sizes, extent, strict=False))
            if int(n) > 0 and (int(o) < 0 or int(o) + int(n) > int(e))
        ]
        if not bad:
            return
        if isinstance(v, torch.Tensor) and self._inside_allocation(v, offs, sizes):
            return
        line = self.caller_line()
        key = ("oob", line, op)
        if key in self._seen:
            return
        self._seen.add(key)
        d, o, n, e = bad[0]
        self.add(
            "out-of-bounds",
            line or 0,
            op,
            None,
            None,
            f"{op} window [{o}, {o + n}) on dim {d} reaches past the {what}'s extent {e} "
            f"(offsets {list(map(int, offs))}, valid sizes {list(map(int, sizes))}, shape {list(map(int, extent))}): "
            f"on the NPU it {'writes' if op.endswith(('store', 'assemble', 'write')) else 'reads'} neighbouring memory"
            + (
                " (pl.load without clamp=True: its contract asserts offsets + valid_shape stay inside the source; "
                "clamp=True cuts the request at the edge)"
                if clamp_hint
                else ""
            ),
        )

    def _inside_allocation(self, v: torch.Tensor, offs: Sequence[int], sizes: Sequence[int]) -> bool:
        root = self.roots.get(v.untyped_storage().data_ptr())
        if root is None or v.element_size() != root.tensor.element_size() or len(offs) != v.dim() or len(sizes) != v.dim():
            return False
        base = int(v.storage_offset())
        if root.contiguous and tuple(v.stride()) == root.strides:
            start: list[int] = []
            rem = base
            for st in root.strides:
                q, rem = divmod(rem, st) if st else (0, rem)
                start.append(q)
            return all(
                0 <= a + int(o) and a + int(o) + int(n) <= size
                for a, o, n, size in zip(start, offs, sizes, root.shape, strict=True)
                if int(n) > 0
            )
        lo = base + sum(int(o) * int(st) for o, st in zip(offs, v.stride(), strict=True))
        hi = lo + sum((int(n) - 1) * int(st) for n, st in zip(sizes, v.stride(), strict=True))
        return lo >= 0 and hi < v.untyped_storage().nbytes() // max(1, v.element_size())

    # -- findings -----------------------------------------------------------------------------

    def caller_line(self) -> int | None:
        """The IR line of the innermost generated-code frame on the stack."""
        f: Any = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == self.gen_filename:
                return self.ir_line(f.f_lineno)
            f = f.f_back
        return None

    def add(self, kind: str, line: int, name: str, other_line: int | None, other_name: str | None, message: str, **extra: Any) -> None:
        self.findings.append(
            cast(
                Hazard,
                {
                    "kind": kind,
                    "line": line,
                    "name": name,
                    "other_line": other_line,
                    "other_name": other_name,
                    "space": "GM",
                    "core": "",
                    "range": [0, 0],
                    "message": message,
                    **extra,
                },
            )
        )

    def races(self, deadline: float | None = None) -> list[Hazard]:
        """Tasks (and parts of one task) touching overlapping elements with no order between them:
        one finding per racing pair of call sites and buffer (:mod:`.race_index`: near-linear).
        Past ``deadline`` (``time.monotonic()``) a ``TimeoutError``, as the run's own."""
        out: list[Hazard] = []
        indexes: dict[tuple[int, Any], AccessIndex] = {}
        # per index, the tasks that touched its buffer (a bit each): a task ordered after all of
        # them cannot race on it, and its lookup is skipped (a chain of tasks: no lookup at all)
        touched: dict[tuple[int, Any], int] = {}
        seen: set[tuple[int, int, int]] = set()

        def ordered(a: _Task, b: _Task) -> bool:
            return b.after(a)

        # every race has a write in it: a buffer no task of the rank writes (the weights, the
        # inputs) cannot race, and is never indexed (at hidden 4096 they were 9 of 10 entries)
        written = {(key, t.rank) for t in self.tasks for key, boxes in t.access.items() if boxes.get("w")}
        for n, t in enumerate(self.tasks):
            if not n % 64 and past(deadline):
                raise TimeoutError(f"the race analysis did not finish within the run's timeout ({n} of {len(self.tasks)} tasks)")
            for key, boxes in t.access.items():
                if (key, t.rank) not in written:
                    continue
                # per rank: across ranks signals order the tasks (exec.rank_hazards)
                idx = indexes.get((key, t.rank))
                if idx is None:
                    idx = indexes[(key, t.rank)] = AccessIndex(self.roots[key], overlap, covers)
                before = touched.get((key, t.rank), 0)
                touched[(key, t.rank)] = before | (1 << t.index)
                hit = idx.first_race(t, boxes, ordered) if (before & ~t.reach) >> t.floor else None
                if hit is not None:
                    a, ka, kb, q = hit
                    sig = (a.site.index, t.site.index, key)
                    if sig not in seen:
                        seen.add(sig)
                        region = _region(self.roots[key], a.access[key].get(ka, ()), q)
                        out.append(self._race(self.roots[key], a, t, ka, kb, region))
                idx.add(t, boxes, ordered)
        for t in self.tasks:  # inside one task: its SPMD blocks / split lanes at the same time
            for key in t.parts:
                f = self._part_race(self.roots[key], t)
                if f is not None:
                    out.append(f)
        return out

    def _race(self, root: Root, a: _Task, b: _Task, ka: str, kb: str, region: Box) -> Hazard:
        rw = {"wr": "RAW", "rw": "WAR", "ww": "WAW"}[ka + kb]
        name_b = _arg_name(b, root)
        name_a = _arg_name(a, root)
        tensor = root.name or name_b or name_a
        ib = b.args.get(root.key)
        tag_b = b.site.directions[ib] if b.site.directions and ib is not None and ib < len(b.site.directions) else "?"
        if rw == "RAW":
            fix = (
                f"'{name_b}' as pl.adir.input (or inout) in the later call, not {tag_b}" if tag_b not in (INPUT, INOUT) else "a dependency"
            )
        elif rw == "WAW":
            fix = f"'{name_b}' as pl.adir.inout in the later call, not {tag_b}" if tag_b != INOUT else "an explicit dependency"
        else:
            fix = "an explicit dependency (deps=[...]) or the earlier reader's argument as pl.adir.inout: the runtime never orders a write after a read"
        msg = (
            f"{rw} race on '{tensor}' {region.text()}: '{b.site.callee}' (line {b.site.line}) "
            f"{'reads' if kb == 'r' else 'writes'} what '{a.site.callee}' (line {a.site.line}) "
            f"{'writes' if ka == 'w' else 'reads'}, and no dependency orders the two tasks; the runtime may run them in either order "
            f"(would be ordered by {fix})"
        )
        return {
            "kind": "race",
            "line": b.site.line,
            "name": name_b or tensor,
            "other_line": a.site.line,
            "other_name": a.site.callee,
            "space": "GM",
            "core": "",
            "range": [0, 0],
            "message": msg,
            "tensor": tensor,
            "region": region.text(),
            "race": rw,
            "tasks": [a.index, b.index],
            "calls": [a.site.callee, b.site.callee],
            "direction": tag_b,
        }

    def _part_race(self, root: Root, t: _Task) -> Hazard | None:
        parts = t.parts.get(root.key)
        if not parts or len(parts) < 2:
            return None
        items = sorted(parts.items())
        for j, (pb, bb) in enumerate(items):
            for pa, ba in items[:j]:
                if pa[:2] == pb[:2] or pa[2:] != pb[2:]:
                    continue  # one part in two barrier phases, or two parts a barrier orders
                for x in ba:
                    for y in bb:
                        if overlap(root, x, y):
                            region = intersect(root, x, y)
                            what = "SPMD blocks" if pa[0] != pb[0] else "AIV lanes"
                            ia, ib_ = (pa[0], pb[0]) if pa[0] != pb[0] else (pa[1], pb[1])
                            tensor = root.name or _arg_name(t, root)
                            return {
                                "kind": "race",
                                "line": t.site.line,
                                "name": tensor,
                                "other_line": t.site.line,
                                "other_name": t.site.callee,
                                "space": "GM",
                                "core": "",
                                "range": [0, 0],
                                "message": f"WAW race on '{tensor}' {region.text()} inside the task '{t.site.callee}' (line {t.site.line}): "
                                f"{what} {ia} and {ib_} run at the same time and both write these elements",
                                "tensor": tensor,
                                "region": region.text(),
                                "race": "WAW",
                                "tasks": [t.index, t.index],
                                "calls": [t.site.callee, t.site.callee],
                                "direction": "",
                            }
        return None

    def graph(self, races: Sequence[Hazard]) -> dict[str, Any]:
        """The task graph: tasks in program order, the runtime's direct dependencies, the racing pairs."""
        nodes = [
            {"id": t.index, "line": t.site.line, "callee": t.site.callee, **({"rank": t.rank} if t.rank is not None else {})}
            for t in self.tasks[:500]
        ]
        edges = [{"from": d, "to": t.index} for t in self.tasks[:500] for d in sorted(t.deps) if d < 500]
        if any(t.site.directions is None for t in self.tasks):
            edges = [e for e in edges if e["to"] - e["from"] == 1 or self.tasks[e["to"]].site.directions is not None]
        pairs = [{"from": r["tasks"][0], "to": r["tasks"][1], "kind": r["race"]} for r in races if r.get("kind") == "race"]
        return {"nodes": nodes, "edges": edges, "races": pairs, "truncated": len(self.tasks) > 500}


def _lanes_split() -> bool:
    rt = context.current_runtime()
    return bool(context.split_mode()) or (rt is not None and bool(getattr(rt, "split", 0)))


def _region(root: Root, boxes: Sequence[Box], q: Box) -> Box:
    """Where ``q`` meets the first of ``boxes`` it overlaps."""
    for x in boxes:
        if overlap(root, x, q):
            return intersect(root, x, q)
    return q


def _arg_name(t: _Task, root: Root) -> str:
    i = t.args.get(root.key)
    if i is None or i >= len(t.site.arg_names):
        return ""
    return t.site.arg_names[i] or ""


def _task_ids(v: Any) -> list[int]:
    if v is None:
        return []
    if isinstance(v, int):
        return [v]
    if isinstance(v, list | tuple):
        return [x for e in v for x in _task_ids(e)]
    return []
