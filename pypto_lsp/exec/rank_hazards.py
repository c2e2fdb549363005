"""Multi-rank hazards: cross-rank races on window memory and unfenced publishing writes.

Ranks order their accesses to each other's windows only through signals and collectives
(pypto ``docs/en/user/distributed/02-primitives.md``: "all payload writes must still become
visible before the notify is published"; ``01-collectives.md``: collectives are synchronous
across ranks). :class:`RankHazards` watches a multi-rank run (an :class:`~.observe.Observer`
wrapping the distributed kernels and the window loads/stores) with vector clocks:

* each rank's clock starts with its own entry at 1; a ``notify`` puts the sender's clock on the
  signal cell (joined with what earlier notifies put there) and then advances the sender; a
  ``wait`` that returns (and a ``defer_wait`` condition once it holds) joins the cell's clock
  into the waiter's; a collective joins every rank's clock.
* every access to window memory (a ``put``/``get``/``remote_load``/``remote_store`` on a peer, a
  ``tile.load``/``tile.store``/``tensor.read``/``tensor.write`` of a window) is kept with its
  rank, clock, byte range of the owner's copy and IR line. Two accesses of different ranks to
  overlapping bytes, at least one a write, where the earlier one does not happen before the later
  are a ``race`` (RAW, WAR or WAW), on the later line with the earlier one beside it.
* **fence**: a remote write (``put``, ``remote_store``) not followed by ``pl.system.fence()``
  before the rank's next ``notify`` is a ``fence`` finding: the peer may see the signal before
  the data (what pypto's ``InsertCommFence`` pass guarantees). Dumps before that pass carry no
  fences at all, so the check applies to a program that has a ``system.fence`` somewhere (or a
  dump named after ``InsertCommFence``).

Signals themselves are synchronisation, not data: a signal cell's writes are not accesses.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from . import ranks
from .observe import Observer, RunInfo

__all__ = ["RankHazards"]

_Clock = dict[int, int]

_REMOTE_WRITES = ("pld.tensor.put", "pld.tile.put", "pld.tile.remote_store", "pld.tensor.remote_store")
_COLLECTIVES = {
    f"{ns}.{c}"
    for ns in ("pld.tensor", "builtin.tensor")
    for c in ("allreduce", "allreduce_ring", "barrier", "broadcast", "allgather", "reduce_scatter", "all_to_all", "all_to_all_v")
}
_LOCAL = ("tile.load", "tile.store", "tensor.read", "tensor.write")
_WATCHED = {
    *_REMOTE_WRITES,
    *_COLLECTIVES,
    "pld.tensor.get",
    "pld.tile.get",
    "pld.tile.remote_load",
    "pld.tile._remote_load_with_physical_tail_padding",
    "pld.system.notify",
    "pld.system.wait",
    "pld.system.defer_wait",
    "system.fence",
    "tile.load",
    "tile.store",
    "tensor.read",
    "tensor.write",
}


@dataclass(slots=True)
class _Access:
    rank: int
    clock: _Clock
    owner: int
    buf: str
    lo: int
    hi: int
    write: bool
    line: int
    op: str


def _join(a: _Clock, b: _Clock) -> None:
    for k, v in b.items():
        if a.get(k, 0) < v:
            a[k] = v


def _ints(x: Any) -> list[int]:
    if x is None:
        return []
    if isinstance(x, torch.Tensor):
        return [int(v) for v in x.reshape(-1).tolist()]
    if isinstance(x, int | float):
        return [int(x)]
    return [int(v.item()) if isinstance(v, torch.Tensor) else int(v) for v in x]


class RankHazards(Observer):
    """Cross-rank races and unfenced publishing writes of one multi-rank run (see the module docstring)."""

    def __init__(self, fence_check: bool = True) -> None:
        self.fence_check = fence_check
        self.findings: list[dict[str, Any]] = []
        self._world: ranks.World | None = None
        self._gen: Any = None
        self._seen: set[tuple[str, int, int]] = set()

    def _reset(self, w: ranks.World) -> None:
        self._world = w
        self.clocks: dict[int, _Clock] = {r: {r: 1} for r in range(w.size)}
        self.cells: dict[tuple[int, int], _Clock] = {}
        self.accesses: dict[tuple[int, int], list[_Access]] = {}
        self.unfenced: dict[int, list[tuple[int, str]]] = {}

    # -- the observer ------------------------------------------------------------------

    def started(self, ns: dict[str, Any], run: RunInfo) -> None:
        self._gen = run.gen

    def kernel(self, op: str, fn: Callable[..., Any], run: RunInfo) -> Callable[..., Any] | None:
        if op not in _WATCHED:
            return None

        def watched(*args: Any, **kw: Any) -> Any:
            w = ranks.current_world()
            if w is None:
                return fn(*args, **kw)
            if w is not self._world:
                self._reset(w)
            return self._around(op, fn, args, kw, w)

        return watched

    # -- events ------------------------------------------------------------------------

    def _line(self) -> int:
        f: Any = sys._getframe(1)
        name = getattr(self._gen, "filename", None)
        while f is not None:
            if f.f_code.co_filename == name:
                sp = self._gen.ir_span(f.f_lineno)
                if sp is not None:
                    return int(sp.line)
            f = f.f_back
        return 0

    def _around(self, op: str, fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any], w: ranks.World) -> Any:
        r = ranks.current_rank()
        if op in _COLLECTIVES:
            out = fn(*args, **kw)
            total: _Clock = {}
            for c in self.clocks.values():
                _join(total, c)
            for q, c in self.clocks.items():
                _join(c, total)
                c[q] = c.get(q, 0) + 1
            return out
        if r is None:
            return fn(*args, **kw)
        if op in _LOCAL and not any(isinstance(a, torch.Tensor) and w.owner(a) is not None for a in args):
            return fn(*args, **kw)  # a load/store of a tensor that is no window
        line = self._line()
        if op == "pld.system.notify":
            self._notify(w, r, args, line)
            return fn(*args, **kw)
        if op == "pld.system.wait":
            out = fn(*args, **kw)
            key = self._cell(w, args[0], args[1] if len(args) > 1 else None)
            if key is not None:
                _join(self.clocks[r], self.cells.get(key, {}))
            return out
        if op == "pld.system.defer_wait":
            n = len(w.collect) if w.collect is not None else -1
            out = fn(*args, **kw)
            key = self._cell(w, args[0], args[1] if len(args) > 1 else None)
            if key is not None and w.collect is not None and len(w.collect) == n + 1:
                w.collect[-1] = self._joining(w.collect[-1], r, key)
            elif key is not None:  # waited in place
                _join(self.clocks[r], self.cells.get(key, {}))
            return out
        if op == "system.fence":
            self.unfenced.pop(r, None)
            return fn(*args, **kw)
        self._accesses(w, r, op, args, line)
        return fn(*args, **kw)

    def _joining(self, pred: Callable[[], bool], rank: int, key: tuple[int, int]) -> Callable[[], bool]:
        def holds() -> bool:
            ok = pred()
            if ok:
                _join(self.clocks[rank], self.cells.get(key, {}))
            return ok

        return holds

    def _cell(self, w: ranks.World, t: Any, offsets: Any) -> tuple[int, int] | None:
        if not isinstance(t, torch.Tensor) or w.owner(t) is None:
            return None
        offs = _ints(offsets)
        if len(offs) != t.dim():
            offs = offs[: t.dim()] + [0] * max(0, t.dim() - len(offs))
        elem = int(t.storage_offset()) + sum(o * s for o, s in zip(offs, t.stride(), strict=False))
        return (t.untyped_storage().data_ptr(), elem * t.element_size())

    def _notify(self, w: ranks.World, r: int, args: tuple[Any, ...], line: int) -> None:
        if self.fence_check and self.unfenced.get(r):
            for wline, wop in self.unfenced.pop(r):
                self._finding(
                    "fence",
                    wline,
                    line,
                    r,
                    r,
                    f"{wop} on rank {r}",
                    f"rank {r}: the remote write of line {wline} ({wop}) is not fenced before the notify on line {line} that "
                    "releases it: without pl.system.fence() between them (what InsertCommFence inserts) the peer may see "
                    "the signal before the data",
                )
        target, peer, offsets = args[0], args[1], args[2] if len(args) > 2 else None
        if isinstance(target, torch.Tensor) and w.owner(target) is not None:
            try:
                peer_t = w.peer_view(target, int(peer))
            except ranks.DistributedError:
                return  # the kernel says why
            key = self._cell(w, peer_t, offsets)
            if key is not None:
                _join(self.cells.setdefault(key, {}), self.clocks[r])
        self.clocks[r][r] = self.clocks[r].get(r, 0) + 1

    # -- accesses ----------------------------------------------------------------------

    def _accesses(self, w: ranks.World, r: int, op: str, args: tuple[Any, ...], line: int) -> None:
        try:
            for t, offs, shape, write in _regions(op, args, w):
                self._access(w, r, op, t, offs, shape, write, line)
        except (ranks.DistributedError, IndexError, TypeError, ValueError, RuntimeError):
            return  # a malformed call: the kernel reports it
        if op in _REMOTE_WRITES:
            self.unfenced.setdefault(r, []).append((line, op))

    def _access(self, w: ranks.World, r: int, op: str, t: torch.Tensor, offs: list[int], shape: list[int], write: bool, line: int) -> None:
        own = w.owner(t)
        if own is None:
            return
        buf, owner = own
        if len(offs) != t.dim() or len(shape) != t.dim():
            offs, shape = [0] * t.dim(), list(t.shape)
        esize = t.element_size()
        start = int(t.storage_offset()) + sum(o * s for o, s in zip(offs, t.stride(), strict=True))
        last = start + sum((max(n, 1) - 1) * s for n, s in zip(shape, t.stride(), strict=True))
        lo, hi = start * esize, (last + 1) * esize
        a = _Access(r, dict(self.clocks[r]), owner, buf.name, lo, hi, write, line, op)
        key = (id(buf), owner)
        for b in self.accesses.get(key, ()):
            if b.rank == r or not (a.write or b.write) or b.hi <= lo or hi <= b.lo:
                continue
            if a.clock.get(b.rank, 0) >= b.clock.get(b.rank, 0):
                continue  # b happens before a (a signal or a collective orders them)
            kind = "WAW" if a.write and b.write else ("RAW" if b.write else "WAR")
            self._finding(
                "race",
                line,
                b.line,
                r,
                b.rank,
                f"{buf.name} (rank {owner})",
                f"cross-rank {kind} race on window '{buf.name}' of rank {owner}, bytes [{max(lo, b.lo)}, {min(hi, b.hi)}): "
                f"rank {r} {a.op} (line {line}) and rank {b.rank} {b.op} (line {b.line}), and no notify/wait or collective "
                "orders them",
                race=kind,
            )
        self.accesses.setdefault(key, []).append(a)

    def _finding(self, kind: str, line: int, other: int, rank: int, other_rank: int, name: str, message: str, **extra: Any) -> None:
        sig = (kind, line, other)
        if sig in self._seen:
            return
        self._seen.add(sig)
        self.findings.append(
            {
                "kind": kind,
                "line": line,
                "name": name,
                "other_line": other,
                "other_name": name,
                "space": "GM",
                "core": f"rank {rank}",
                "range": [0, 0],
                "message": message,
                "tensor": name,
                "rank": rank,
                "other_rank": other_rank,
                **extra,
            }
        )


def _regions(op: str, args: tuple[Any, ...], w: ranks.World) -> list[tuple[torch.Tensor, list[int], list[int], bool]]:
    """(tensor as its owner holds it, offsets, shape, written) for each window region ``op`` touches."""
    out: list[tuple[torch.Tensor, list[int], list[int], bool]] = []
    if op in ("tile.load", "tensor.read"):
        t = args[0]
        if isinstance(t, torch.Tensor):
            shape = _ints(args[2]) if op == "tile.load" and len(args) > 2 else [1] * t.dim()
            out.append((t, _ints(args[1]), shape, False))
    elif op in ("tile.store", "tensor.write"):
        if op == "tile.store" and len(args) > 2 and isinstance(args[2], torch.Tensor) and isinstance(args[0], torch.Tensor):
            src = args[0]
            out.append((args[2], _ints(args[1]), list(src.shape)[-args[2].dim() :] if src.dim() >= args[2].dim() else [], True))
        elif op == "tensor.write" and isinstance(args[0], torch.Tensor):
            out.append((args[0], _ints(args[1]), [1] * args[0].dim(), True))
    elif op in ("pld.tile.remote_store", "pld.tensor.remote_store"):
        src, target, peer, offsets = args[:4]
        out.append((w.peer_view(target, int(peer)), _ints(offsets), list(src.shape), True))
    elif op in ("pld.tile.remote_load", "pld.tile._remote_load_with_physical_tail_padding"):
        target, peer, offsets, shape = args[:4]
        out.append((w.peer_view(target, int(peer)), _ints(offsets), _ints(shape), False))
    elif op in ("pld.tensor.put", "pld.tile.put", "pld.tensor.get", "pld.tile.get"):
        dst, peer, src = args[:3]
        rest = list(args[4:] if op.startswith("pld.tile.") else args[3:])
        if rest and isinstance(rest[0], torch.Tensor):
            rest = rest[1:]  # the ping-pong stage2
        full = len(rest) < 3
        shape = list(src.shape) if full else _ints(rest[2])
        d_offs = [0] * dst.dim() if full else _ints(rest[0])
        s_offs = [0] * src.dim() if full else _ints(rest[1])
        if op.endswith("put"):
            out.append((w.peer_view(dst, int(peer)), d_offs, shape, True))
            out.append((src, s_offs, shape, False))
        else:
            out.append((w.peer_view(src, int(peer)), s_offs, shape, False))
            out.append((dst, d_offs, shape, True))
    return out
