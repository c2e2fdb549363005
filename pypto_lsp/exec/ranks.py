"""Multi-rank (distributed) programs simulated in one process: ranks as greenlets, per-rank windows.

PyPTO's distributed layer (``pld.*``; pypto ``docs/en/user/distributed/00-model.md``,
``07-programming_model.md``, ``08-window_buffer.md``, ``03-execution.md``) runs one HOST
orchestrator that launches a CHIP orchestration per device (``self.chip(..., device=r)``, one
call per rank inside ``for r in pl.range(pld.system.world_size())``). Each device owns its own
copy of every window buffer (``pld.tensor.alloc_window_buffer``: per-rank HCCL window memory,
zero at start) and reaches its peers' copies through remote ops and signals.

The model here:

* :class:`World` is one run of a host entry (:func:`run_host`): its rank count, its window
  buffers, the rank tasks and the meeting points of collectives.
* A launch (:func:`launch_on_rank`) starts the chip program as a greenlet of the host's thread
  and runs it until it ends or blocks in a ``wait``; the host then goes on (the next rank's
  launch). Ranks run concurrently the way :mod:`.crosscore` runs cores: one greenlet at a time,
  the turn passing in a fixed order (rank 0, 1, ...) only when a rank blocks, so every run gives
  the same numbers. A second launch on the same device waits for the first (stream order).
* A window handle made on the host (:class:`WindowView`) is resolved to rank ``r``'s own bytes
  when it is passed to a launch on ``r``; kernels then see a plain tensor whose storage this
  module knows (:func:`peer_view`), so ``put``/``get``/``remote_*``/``notify`` reach the same
  bytes in a peer's copy.
* Deadlock: when every unfinished rank task waits on a condition that is false, the first one
  gets :class:`DistributedError` (``kind="distributed:deadlock"``) in its ``wait`` (its frame
  holds the IR line); the message names the signal and every waiting rank.
* ``defer_wait`` (02-primitives.md "Deferred Completion") registers a condition on the task
  that runs it; a task submitted with ``deps=`` on such a task id runs once the condition holds,
  on a task greenlet of its own, while the rank's orchestration goes on (:func:`submit_task`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import greenlet
import torch

from . import context

__all__ = [
    "DistributedError",
    "World",
    "WindowBuffer",
    "WindowView",
    "CommCtx",
    "TaskToken",
    "current_world",
    "current_rank",
    "run_host",
    "launch_on_rank",
    "submit_task",
    "submit_scope",
    "peer_view",
    "resolve",
    "DEFAULT_RANKS",
    "set_default_ranks",
]

DEFAULT_RANKS = 2  # the fixtures' DistributedConfig(device_ids=[0, 1]) when nothing says otherwise


class DistributedError(RuntimeError):
    """A multi-rank failure (``kind``: ``distributed:deadlock``, ``distributed:error``) with the rank."""

    def __init__(self, message: str, *, kind: str = "distributed:error", rank: int | None = None, ranks: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        self.rank = rank
        self.ranks = list(ranks)


class _Cancelled(BaseException):
    """Thrown into a rank task to unwind it (another rank failed)."""


@dataclass(eq=False)
class WindowBuffer:
    """``pld.tensor.alloc_window_buffer``: ``nbytes`` per rank, zero at start."""

    nbytes: int
    name: str
    per_rank: list[torch.Tensor]


@dataclass(eq=False)
class WindowView:
    """``pld.tensor.window(buf, shape, dtype=)`` as the host holds it: every rank's view at once."""

    buf: WindowBuffer
    shape: tuple[int, ...]
    dtype: torch.dtype

    def local(self, rank: int) -> torch.Tensor:
        n = 1
        for d in self.shape:
            n *= d
        flat = self.buf.per_rank[rank].view(self.dtype)
        if n > flat.numel():
            raise DistributedError(
                f"window of shape {list(self.shape)} needs {n * flat.element_size()} bytes; buffer '{self.buf.name}' has {self.buf.nbytes}"
            )
        return flat[:n].view(self.shape)

    # A window reaches a compute op only when the program computes on it where the host holds it
    # (an op of a HOST function, not of one launched on a rank): said in those words, not as
    # ``'WindowView' object has no attribute 'float'`` or ``cos(): argument 'input' must be Tensor``.

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise WindowReadError(_HOST_WINDOW)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # a probe (copy, pickle, hasattr of a private name): as for any object
            raise AttributeError(name)
        raise WindowReadError(_HOST_WINDOW)


_HOST_WINDOW = (
    "a window (pld.tensor.window) as the host holds it, every rank's copy at once, cannot be computed on here: "
    "a function launched on a rank (device=...) reads its own copy, and pld ops read them all"
)


class WindowReadError(DistributedError, AttributeError):
    """A compute op given a window where the host holds it (:class:`WindowView`). An AttributeError
    too, so ``hasattr``/``getattr(default)`` probes of a window stay false as before."""


@dataclass(frozen=True)
class CommCtx:
    """``pld.system.get_comm_ctx``: the comm group of a window (its rank is the running one's)."""

    world: World


@dataclass(eq=False)
class TaskToken:
    """A task id of a multi-rank program: the deferred conditions (``defer_wait``) it completes on."""

    conditions: list[Callable[[], bool]] = field(default_factory=list)
    ran: bool = True  # False while the task itself waits to run (deferred)

    def complete(self) -> bool:
        return self.ran and all(c() for c in self.conditions)


@dataclass(eq=False)
class _Task:
    rank: int
    what: str
    glet: greenlet.greenlet
    resume_at: greenlet.greenlet
    ctx: context.Ctx
    done: bool = False
    started: bool = False
    blocked: tuple[Callable[[], bool], str, Callable[[], str]] | None = None
    failure: BaseException | None = None


class World:
    """One run of a host entry: rank count, windows, rank tasks, collectives' meeting points."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise DistributedError(f"world size must be at least 1 (got {size})")
        self.size = size
        self.buffers: list[WindowBuffer] = []
        self._by_storage: dict[int, tuple[WindowBuffer, int]] = {}
        self.tasks: list[_Task] = []
        self.host = greenlet.getcurrent()
        self.meetings: dict[tuple[str, int], dict[str, Any]] = {}
        self._meeting_seq: dict[tuple[str, int], int] = {}
        self.collect: list[Callable[[], bool]] | None = None  # defer_wait conditions of the running task
        self.failures: list[tuple[_Task, BaseException]] = []
        self.ranks_seen: set[int] = set()
        self.current: _Task | None = None  # set while the host has resumed a task (_resume)

    # -- windows ---------------------------------------------------------------

    def alloc(self, nbytes: int, name: str = "") -> WindowBuffer:
        nbytes = int(nbytes)
        if nbytes < 0:
            raise DistributedError(f"alloc_window_buffer of {nbytes} bytes")
        padded = (nbytes + 15) // 16 * 16  # any dtype's view of it is whole
        per_rank = [torch.zeros(max(padded, 16), dtype=torch.uint8) for _ in range(self.size)]
        buf = WindowBuffer(nbytes, name or f"window#{len(self.buffers)}", per_rank)
        for r, t in enumerate(per_rank):
            self._by_storage[t.untyped_storage().data_ptr()] = (buf, r)
        self.buffers.append(buf)
        return buf

    def owner(self, t: torch.Tensor) -> tuple[WindowBuffer, int] | None:
        return self._by_storage.get(t.untyped_storage().data_ptr())

    def peer_view(self, t: torch.Tensor, peer: int) -> torch.Tensor:
        own = self.owner(t)
        if own is None:
            raise DistributedError("a remote op's target is not a window (pld.tensor.window) tensor")
        buf, _rank = own
        if not 0 <= peer < self.size:
            raise DistributedError(f"peer rank {peer} is outside the world of {self.size} ranks")
        base = buf.per_rank[peer].view(t.dtype)
        return base.as_strided(t.shape, t.stride(), t.storage_offset())

    # -- tasks -----------------------------------------------------------------

    def running(self) -> _Task | None:
        """The rank task running now (its greenlets included: a cross-core group's kernels), else None (the host)."""
        return self.current

    def spawn(self, rank: int, what: str, fn: Callable[[], Any]) -> _Task:
        if not 0 <= rank < self.size:
            raise DistributedError(f"device={rank} is outside the world of {self.size} ranks (world_size)", rank=rank)
        self.ranks_seen.add(rank)
        holder: list[_Task] = []
        g = greenlet.greenlet(self.task_body(fn, holder), parent=self.host)
        task = _Task(rank, what, g, g, context.current().derive(rank=rank))
        holder.append(task)
        self.tasks.append(task)
        self._resume(task)
        return task

    def task_body(self, fn: Callable[[], Any], holder: list[_Task]) -> Callable[[], None]:
        """``fn`` as a task's greenlet runs it (``holder[0]``: its task): cancelled quietly when the
        run failed elsewhere; anything else it raises is the task's failure, which the host reports
        at the next join (never raised into the host's own frame)."""

        def body() -> None:
            try:
                fn()
            except _Cancelled:
                pass
            except BaseException as exc:
                task = holder[0]
                task.failure = exc
                self.failures.append((task, exc))

        return body

    def _resume(self, task: _Task, throw: BaseException | None = None) -> None:
        outer = context.swap(task.ctx)
        prev, self.current = self.current, task
        try:
            task.started = True
            if throw is not None:
                task.resume_at.throw(throw)
            else:
                task.resume_at.switch()
        finally:
            self.current = prev
            task.ctx = context.swap(outer)
        if task.glet.dead:
            task.done = True

    def block(self, pred: Callable[[], bool], desc: str, why: Callable[[], str]) -> None:
        """In a rank task: until ``pred()``, let the other ranks run (the host raises deadlocks here)."""
        if pred():
            return
        task = self.running()
        if task is None:
            raise DistributedError(f"{desc} can never be satisfied: no rank is running to change it ({why()})", kind="distributed:deadlock")
        task.blocked = (pred, desc, why)
        task.resume_at = greenlet.getcurrent()
        try:
            while not pred():
                self.host.switch()
        finally:
            task.blocked = None

    def drain(self, until: Callable[[], bool] | None = None) -> None:
        """On the host: run the rank tasks until ``until()`` (default: all done); deadlocks raise in a task."""
        cur = 0
        while True:
            live = [t for t in self.tasks if not t.done]
            if (until is not None and until()) or not live:
                break
            if self.failures:
                for t in live:
                    # a task that never ran (a deferred one still waiting its turn) or has ended
                    # has no frame to unwind: into such a greenlet a throw would land in the host
                    if t.started and not t.resume_at.dead:
                        self._resume(t, _Cancelled())
                    t.done = True
                break
            pick = None
            n = len(live)
            for k in range(n):
                t = live[(cur + k) % n]
                if t.blocked is None or t.blocked[0]():
                    pick = t
                    cur = (cur + k + 1) % n
                    break
            if pick is None:
                first = live[0]
                assert first.blocked is not None
                waiting = sorted({t.rank for t in live})
                lines = "; ".join(f"rank {t.rank}: {t.blocked[1]} ({t.blocked[2]()})" for t in live if t.blocked is not None)
                err = DistributedError(
                    f"deadlock: {first.blocked[1]} on rank {first.rank} can never be satisfied; "
                    f"waiting ranks: {', '.join(map(str, waiting))} ({lines})",
                    kind="distributed:deadlock",
                    rank=first.rank,
                    ranks=waiting,
                )
                self._resume(first, err)
                continue
            self._resume(pick)
        if self.failures:
            task, exc = self.failures[0]
            inner = _find_distributed(exc)
            kind = inner.kind if inner is not None else _kind_of(exc)
            ranks = inner.ranks if inner is not None else [task.rank]
            msg = str(inner) if inner is not None else f"{type(exc).__name__}: {exc}"
            raise DistributedError(f"rank {task.rank} ({task.what}): {msg}", kind=kind, rank=task.rank, ranks=ranks) from exc

    def rank_idle(self, rank: int) -> bool:
        return all(t.done for t in self.tasks if t.rank == rank)

    # -- collectives -----------------------------------------------------------

    def meet(self, name: str, rank: int, contribution: Any, compute: Callable[[dict[int, Any]], None], desc: str) -> None:
        """A collective's meeting point: every rank brings ``contribution``; the last one runs
        ``compute`` over all of them; nobody leaves before that (rank ``rank``'s n-th call of
        ``name`` meets the other ranks' n-th call)."""
        seq_key = (name, rank)
        seq = self._meeting_seq.get(seq_key, 0)
        self._meeting_seq[seq_key] = seq + 1
        m = self.meetings.setdefault((name, seq), {"parts": {}, "done": False})
        m["parts"][rank] = contribution
        if len(m["parts"]) == self.size:
            compute(m["parts"])
            m["done"] = True
            return

        def why() -> str:
            missing = [r for r in range(self.size) if r not in m["parts"]]
            return f"ranks {missing} never reach it"

        self.block(lambda: bool(m["done"]), desc, why)


def _kind_of(exc: BaseException) -> str:
    """The error kind the engine gives ``exc`` (a failing rank keeps its error's kind)."""
    k = getattr(exc, "kind", None)
    if isinstance(k, str):
        return f"cross-core:{k}" if type(exc).__name__ == "CrossCoreError" else k
    return type(exc).__name__


def _find_distributed(exc: BaseException) -> DistributedError | None:
    e: BaseException | None = exc
    for _ in range(10):
        if e is None:
            return None
        if isinstance(e, DistributedError):
            return e
        e = e.__cause__ or e.__context__
    return None


# ---------------------------------------------------------------------- the running world


class _State(threading.local):
    world: World | None = None
    default_ranks: int | None = None  # a case's ``ranks`` key; None: read from the entry's inputs


_STATE = _State()


def set_default_ranks(n: int | None) -> None:
    """This thread's rank count for host entries run from now on (a case's ``ranks`` key)."""
    _STATE.default_ranks = None if n is None else int(n)


def current_world() -> World | None:
    return _STATE.world


def current_rank() -> int | None:
    w = _STATE.world
    if w is None:
        return None
    t = w.running()
    return None if t is None else t.rank


def world() -> World:
    w = _STATE.world
    if w is None:
        raise DistributedError("a distributed op ran outside a multi-rank program (no HOST entry)")
    return w


def run_host(fn: Callable[..., Any], args: tuple[Any, ...], ranks: int | None = None) -> Any:
    """Run a HOST entry ``fn(*args)`` in a fresh :class:`World`; every launch is joined at the end."""
    outer = _STATE.world
    if outer is not None:  # a host function called from a host function: same world
        result = fn(*args)
        return result
    w = World(ranks if ranks is not None else _STATE.default_ranks or _stacked_ranks(args))
    _STATE.world = w
    try:
        result = fn(*args)
        w.drain()
        return result
    finally:
        for t in w.tasks:
            if not t.done and t.started:
                try:
                    w._resume(t, _Cancelled())
                except BaseException:
                    pass
                t.done = True
        _STATE.world = outer


def _stacked_ranks(args: tuple[Any, ...]) -> int:
    """The rank count of a HOST entry's inputs: they are stacked ``[N_RANKS, ...]`` per-rank tensors
    (the dispatch loop gives rank ``r`` row ``r``), so the leading dim of the first one of rank 2 or more."""
    for a in args:
        if isinstance(a, torch.Tensor) and a.dim() >= 2 and a.shape[0] >= 1:
            return int(a.shape[0])
    return DEFAULT_RANKS


def resolve(value: Any, rank: int) -> Any:
    """A launch argument as rank ``rank`` sees it (a window handle becomes its own bytes)."""
    if isinstance(value, WindowView):
        return value.local(rank)
    if isinstance(value, tuple):
        return tuple(resolve(v, rank) for v in value)
    if isinstance(value, list):
        return [resolve(v, rank) for v in value]
    return value


def launch_on_rank(device: Any, fn: Callable[..., Any], args: tuple[Any, ...], what: str = "") -> Any:
    """``self.chip(..., device=r)``: run ``fn`` as rank ``r`` (after ``r``'s earlier launches)."""
    w = world()
    rank = int(device)
    if w.running() is not None:
        raise DistributedError("a launch with device= inside a rank's program (only the HOST launches)", rank=rank)
    if not 0 <= rank < w.size:
        raise DistributedError(f"device={rank} is outside the world of {w.size} ranks", rank=rank)
    w.drain(lambda: w.rank_idle(rank))
    local = tuple(resolve(a, rank) for a in args)
    box: dict[str, Any] = {}

    def body() -> None:
        box["value"] = fn(*local)
        # the rank's deferred tasks (submit_task) end before its launch does
        w.block(
            lambda: all(t.done for t in w.tasks if t.rank == rank and t.what == _DEFERRED),
            "the launch's deferred tasks",
            lambda: "a task gated by defer_wait is still pending",
        )

    w.spawn(rank, what or getattr(fn, "__name__", "launch"), body)
    return box.get("value")


_DEFERRED = "deferred task"


def submit_task(fn: Callable[..., Any], args: tuple[Any, ...], deps: Any, fallback: int) -> tuple[Any, ...]:
    """A task call in a multi-rank program: its task id carries the ``defer_wait`` conditions it
    registered; with ``deps`` on a task id whose conditions do not hold yet, the task runs on its
    own greenlet once they do while the rank goes on (the call yields meanwhile its argument
    ``fallback``, the output it writes in place; -1: None)."""
    w = _STATE.world
    pending = [d for d in (deps or ()) if isinstance(d, TaskToken) and not d.complete()]
    if w is None or not pending:
        result, tid = _run_collecting(w, lambda: fn(*args))
        return _with_id(result, tid, fallback)
    parent = w.running()
    rank = parent.rank if parent is not None else 0
    token = TaskToken(ran=False)

    def body() -> None:
        w.block(lambda: all(d.complete() for d in pending), "a task gated by defer_wait", lambda: "its deferred condition does not hold")
        _result, inner = _run_collecting(w, lambda: fn(*args))
        token.conditions.extend(inner.conditions)
        token.ran = True

    # guarded as a spawned task is: the run failing elsewhere cancels it, its own failure (a
    # deadlock raised into its wait, say) is reported by the host
    holder: list[_Task] = []
    g = greenlet.greenlet(w.task_body(body, holder), parent=w.host)
    holder.append(_Task(rank, _DEFERRED, g, g, context.current().derive(rank=rank)))
    w.tasks.append(holder[0])
    return _with_id(args[fallback] if 0 <= fallback < len(args) else None, token, fallback)


def submit_scope(fn: Callable[[], Any], deps: Any) -> tuple[Any, TaskToken]:
    """An inline ``pl.at`` task scope (:func:`submit_task` for a body): what it bound and its task id;
    (None, id) when it waits on a deferred condition and runs later."""
    w = _STATE.world
    pending = [d for d in (deps or ()) if isinstance(d, TaskToken) and not d.complete()]
    if w is None or not pending:
        return _run_collecting(w, fn)
    _, token = submit_task(fn, (), deps, 0)
    return None, token


def _with_id(result: Any, tid: TaskToken, fallback: int) -> tuple[Any, ...]:
    """``pl.submit``'s tuple: the result (if the callee returns one) and the task id."""
    if result is None and fallback < 0:
        return (tid,)
    return (result, tid)


def _run_collecting(w: World | None, fn: Callable[[], Any]) -> tuple[Any, TaskToken]:
    if w is None:
        return fn(), TaskToken()
    saved = w.collect
    w.collect = []
    try:
        result = fn()
        return result, TaskToken(list(w.collect))
    finally:
        w.collect = saved


def peer_view(t: torch.Tensor, peer: int) -> torch.Tensor:
    return world().peer_view(t, int(peer))
