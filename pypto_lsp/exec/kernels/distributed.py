"""Distributed ops (``pld.*``, ``builtin.tensor.*`` collectives, ``dist.*``) over :mod:`..ranks`.

Semantics from pypto (at the fixtures' commit):

* ``docs/en/user/distributed/02-primitives.md``: ``world_size`` / ``get_comm_ctx`` / ``rank`` /
  ``nranks``; ``notify`` (``NotifyOp``: ``AtomicAdd`` = 0 adds, ``Set`` = 1 overwrites the
  peer's signal cell), ``wait`` (``WaitCmp``: ``Eq`` = 0, ``Ge`` = 1; blocks until the local
  cell satisfies it), ``defer_wait`` (the task's id completes once the condition holds; the
  kernel returns at once), ``alloc_window_buffer`` (bytes, per rank, zero-initialised) and
  ``window``; ``put``/``get`` (tensor and tile forms; the tile forms' staging tiles only carry
  the bytes), ``remote_load`` / ``remote_store`` (``AtomicType.Add`` accumulates);
  enum values from ``include/pypto/ir/comm.h``.
* ``docs/en/user/distributed/01-collectives.md``: ``allreduce`` (``ReduceOp`` Sum=0, Max=1,
  Min=2, Prod=3; in place on every rank), ``barrier``, ``broadcast`` (root's data everywhere),
  ``allgather`` (``target[src, :]`` = rank src's input), ``reduce_scatter`` (``target[r, :]``
  of rank r = the reduction over ranks of their row r), ``all_to_all`` (``target[src, :]`` of
  rank r = rank src's ``input[r, :]``); the collectives' signals are self-clearing, so they are
  left as they were. ``all_to_all_v`` (``docs/en/dev/distributed_ops.md``): whole ``MAX_RECV``-row
  blocks move, the clamped counts land in ``recv_counts``.
* The HOST builtins (``builtin.tensor.*`` from ``LowerHostTensorCollectives``) are one
  launch per rank (``attrs["device"]``) of the same collective.
* ``dist.*`` (``src/ir/op/distributed/intrinsics.cpp``): host runtime intrinsics with no
  dump yet; ``make_tensor`` (a zero runtime tensor of ``count`` elements), ``submit_worker`` /
  ``submit_orchestrator`` (run a callable, return a future), ``future_get``, ``tree_reduce``
  (pairwise sum over the leaves, tree-shaped).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .. import ranks
from ..ranks import CommCtx, DistributedError, WindowView
from .base import as_ints, as_scalar, check_alloc, copy_window, enum_name, is_atomic_add, register, write_region

__all__ = ["Future", "reduce_op", "COLLECTIVES"]


def _world() -> ranks.World:
    return ranks.world()


def _me(op: str) -> int:
    r = ranks.current_rank()
    if r is None:
        raise DistributedError(f"{op} runs on a rank (a chip program launched with device=), not on the host")
    return r


# ---------------------------------------------------------------------- system


@register("pld.system.world_size")
def world_size(*_a: Any, **_kw: Any) -> int:
    return _world().size


@register("pld.system.get_comm_ctx")
def get_comm_ctx(t: Any = None, *_a: Any, **_kw: Any) -> CommCtx:
    return CommCtx(_world())


@register("pld.system.rank")
def rank(ctx: Any = None, *_a: Any, **_kw: Any) -> int:
    return _me("pld.system.rank")


@register("pld.system.nranks")
def nranks(ctx: Any = None, *_a: Any, **_kw: Any) -> int:
    return ctx.world.size if isinstance(ctx, CommCtx) else _world().size


def _cell(t: torch.Tensor, offsets: Any) -> tuple[int, ...]:
    offs = as_ints(offsets)
    if len(offs) != t.dim():
        if t.dim() == 1 and len(offs) == 2:  # a rank-1 signal addressed [i, 0]
            offs = offs[:1]
        else:
            raise DistributedError(f"signal offsets {offs} do not address a cell of a {list(t.shape)} signal")
    for o, n in zip(offs, t.shape, strict=True):
        if not 0 <= o < n:
            raise DistributedError(f"signal offsets {offs} are outside the {list(t.shape)} signal")
    return tuple(offs)


def _is_set(op: Any) -> bool:
    name = enum_name(op)
    return name in ("1", "set")


@register("pld.system.notify")
def notify(target: torch.Tensor, peer: Any, offsets: Any, value: Any, *_a: Any, op: Any = 0, **_kw: Any) -> None:
    peer_t = ranks.peer_view(target, int(as_scalar(peer)))
    cell = _cell(peer_t, offsets)
    v = int(as_scalar(value))
    if _is_set(op):
        peer_t[cell] = v
    else:
        peer_t[cell] += v
    return None


def _condition(signal: torch.Tensor, offsets: Any, expected: Any, cmp: Any) -> tuple[Callable[[], bool], str]:
    cell = _cell(signal, offsets)
    want = int(as_scalar(expected))
    eq = enum_name(cmp) in ("0", "eq")
    if eq:
        return (lambda: int(signal[cell]) == want), f"== {want}"
    return (lambda: int(signal[cell]) >= want), f">= {want}"


@register("pld.system.wait")
def wait(signal: torch.Tensor, offsets: Any, expected: Any, *_a: Any, cmp: Any = 1, _name: str = "signal", **_kw: Any) -> None:
    pred, rel = _condition(signal, offsets, expected, cmp)
    cell = list(_cell(signal, offsets))
    w = _world()
    w.block(
        pred,
        f"pld.system.wait({_name}{cell} {rel})",
        lambda: f"{_name}{cell} holds {int(signal[tuple(cell)])}",
    )
    return None


@register("pld.system.defer_wait")
def defer_wait(signal: torch.Tensor, offsets: Any, expected: Any, *_a: Any, cmp: Any = 1, _name: str = "signal", **_kw: Any) -> None:
    pred, rel = _condition(signal, offsets, expected, cmp)
    w = _world()
    if w.collect is not None:
        w.collect.append(pred)
        return None
    cell = list(_cell(signal, offsets))
    w.block(pred, f"pld.system.defer_wait({_name}{cell} {rel})", lambda: f"{_name}{cell} holds {int(signal[tuple(cell)])}")
    return None


# ---------------------------------------------------------------------- windows


@register("pld.tensor.alloc_window_buffer")
def alloc_window_buffer(size: Any, *_a: Any, dtype: Any = None, name: Any = "", **_kw: Any) -> ranks.WindowBuffer:
    if isinstance(size, list | tuple):  # (shape, dtype=) overload
        n = 1
        for d in as_ints(size):
            n *= d
        esize = torch.empty((), dtype=dtype).element_size() if isinstance(dtype, torch.dtype) else 4
        return _world().alloc(n * esize, str(name or ""))
    return _world().alloc(int(as_scalar(size)), str(name or ""))


@register("pld.tensor.window")
def window(buf: ranks.WindowBuffer, shape: Any, *_a: Any, dtype: Any = None, **_kw: Any) -> Any:
    if not isinstance(buf, ranks.WindowBuffer):
        raise DistributedError("pld.tensor.window needs a buffer from pld.tensor.alloc_window_buffer")
    dt = dtype if isinstance(dtype, torch.dtype) else torch.float32
    view = WindowView(buf, tuple(as_ints(shape)), dt)
    r = ranks.current_rank()
    return view if r is None else view.local(r)


# ---------------------------------------------------------------------- one-sided transfers


def _region(t: torch.Tensor, offs: list[int], shape: list[int]) -> torch.Tensor:
    if len(offs) != t.dim() or len(shape) != t.dim():
        raise DistributedError(f"offsets {offs} / shape {shape} do not fit a {list(t.shape)} tensor")
    for o, s, n in zip(offs, shape, t.shape, strict=True):
        if o < 0 or o + s > n:
            raise DistributedError(f"region at {offs} of shape {shape} is outside the {list(t.shape)} tensor")
    return t[tuple(slice(o, o + s) for o, s in zip(offs, shape, strict=True))]


def _transfer(dst: torch.Tensor, src: torch.Tensor, rest: list[Any], atomic: Any) -> torch.Tensor:
    if len(rest) >= 3:
        d_offs, s_offs, shape = as_ints(rest[0]), as_ints(rest[1]), as_ints(rest[2])
    else:
        shape = list(src.shape)
        d_offs, s_offs = [0] * dst.dim(), [0] * src.dim()
        if src.dim() != dst.dim() or src.numel() != _region(dst, d_offs, shape).numel():
            raise DistributedError(f"a full put/get of {list(src.shape)} does not fit {list(dst.shape)}")
    part = _region(src, s_offs, shape).to(dst.dtype)
    region = _region(dst, d_offs, shape)
    if is_atomic_add(atomic):
        region += part
    else:
        region.copy_(part)
    return dst


def _peer(peer: Any) -> int:
    return int(as_scalar(peer))


@register("pld.tensor.put")
def tensor_put(dst: torch.Tensor, peer: Any, src: torch.Tensor, *rest: Any, atomic: Any = None, **_kw: Any) -> None:
    _transfer(ranks.peer_view(dst, _peer(peer)), src, list(rest), atomic)
    return None


@register("pld.tensor.get")
def tensor_get(dst: torch.Tensor, peer: Any, src: torch.Tensor, *rest: Any, **_kw: Any) -> torch.Tensor:
    return _transfer(dst, ranks.peer_view(src, _peer(peer)), list(rest), None)


def _after_stages(rest: tuple[Any, ...]) -> list[Any]:
    """The tile forms' operands after ``stage`` (and an optional ``stage2`` tile)."""
    out = list(rest)
    if out and isinstance(out[0], torch.Tensor):
        out = out[1:]
    return out


@register("pld.tile.put")
def tile_put(dst: torch.Tensor, peer: Any, src: torch.Tensor, stage: Any, *rest: Any, atomic: Any = None, **_kw: Any) -> None:
    _transfer(ranks.peer_view(dst, _peer(peer)), src, _after_stages(rest), atomic)
    return None


@register("pld.tile.get")
def tile_get(dst: torch.Tensor, peer: Any, src: torch.Tensor, stage: Any, *rest: Any, **_kw: Any) -> torch.Tensor:
    return _transfer(dst, ranks.peer_view(src, _peer(peer)), _after_stages(rest), None)


@register("pld.tile.remote_load", "pld.tile._remote_load_with_physical_tail_padding")
def remote_load(target: torch.Tensor, peer: Any, offsets: Any, shape: Any, valid_shape: Any = None, *_a: Any, **_kw: Any) -> torch.Tensor:
    src = ranks.peer_view(target, _peer(peer))
    shp = as_ints(shape)
    ext = as_ints(valid_shape) if valid_shape is not None else None
    return copy_window(src, as_ints(offsets), shp, ext, what="remote_load's tile")


@register("pld.tile.remote_store", "pld.tensor.remote_store")
def remote_store(src: torch.Tensor, target: torch.Tensor, peer: Any, offsets: Any, *_a: Any, atomic: Any = None, **_kw: Any) -> None:
    write_region(ranks.peer_view(target, _peer(peer)), src, as_ints(offsets), is_atomic_add(atomic), op="pld.tile.remote_store")
    return None


# ---------------------------------------------------------------------- collectives


def reduce_op(op: Any) -> str:
    """``ReduceOp`` as ``sum``/``max``/``min``/``prod`` (ints are pypto's enum values)."""
    name = enum_name(op) or "sum"
    return {"0": "sum", "1": "max", "2": "min", "3": "prod"}.get(name, name)


def _reduce(parts: list[torch.Tensor], op: Any) -> torch.Tensor:
    how = reduce_op(op)
    acc = parts[0].clone()
    for p in parts[1:]:
        if how == "sum":
            acc = acc + p
        elif how == "max":
            acc = torch.maximum(acc, p)
        elif how == "min":
            acc = torch.minimum(acc, p)
        elif how == "prod":
            acc = acc * p
        else:
            raise DistributedError(f"unknown ReduceOp {op!r}")
    return acc.to(parts[0].dtype)


def _rows(t: torch.Tensor, n: int) -> torch.Tensor:
    if t.numel() % n:
        raise DistributedError(f"a {list(t.shape)} tensor does not split into {n} rank rows")
    return t.reshape(n, -1)


def _allreduce(parts: dict[int, dict[str, Any]]) -> None:
    tensors = [parts[r]["target"] for r in sorted(parts)]
    total = _reduce(tensors, parts[0]["kw"].get("op", 0))
    for t in tensors:
        t.copy_(total)


def _broadcast(parts: dict[int, dict[str, Any]]) -> None:
    root = int(as_scalar(parts[0]["kw"].get("root", 0)))
    if root not in parts:
        raise DistributedError(f"broadcast root {root} is not a rank of the world")
    src = parts[root]["target"].clone()
    for r in sorted(parts):
        parts[r]["target"].copy_(src)


def _allgather(parts: dict[int, dict[str, Any]]) -> None:
    n = len(parts)
    for r in sorted(parts):
        rows = _rows(parts[r]["target"], n)
        for src in sorted(parts):
            rows[src].copy_(parts[src]["input"].reshape(-1)[: rows.shape[1]])


def _reduce_scatter(parts: dict[int, dict[str, Any]]) -> None:
    n = len(parts)
    staged = {r: _rows(parts[r]["target"], n).clone() for r in parts}
    op = parts[0]["kw"].get("op", 0)
    for r in sorted(parts):
        _rows(parts[r]["target"], n)[r].copy_(_reduce([staged[s][r] for s in sorted(parts)], op))


def _all_to_all(parts: dict[int, dict[str, Any]]) -> None:
    n = len(parts)
    staged = {r: _rows(parts[r]["input"], n).clone() for r in parts}
    for r in sorted(parts):
        rows = _rows(parts[r]["target"], n)
        for src in sorted(parts):
            rows[src].copy_(staged[src][r])


def _all_to_all_v(parts: dict[int, dict[str, Any]]) -> None:
    """MPI_Alltoallv over flat ``[NR * MAX_RECV, SIZE]`` layouts (pypto ``docs/en/dev/distributed_ops.md``):
    the whole ``MAX_RECV``-row block for each destination moves (block ``r`` of rank ``s``'s input lands
    as block ``s`` of rank ``r``'s target), and ``recv_counts[s, 0]`` of rank ``r`` gets
    ``min(send_counts_s[r], MAX_RECV)``, the rows of that block that count."""
    n = len(parts)
    staged = {r: _rows(parts[r]["input"], n).clone() for r in parts}
    for r in sorted(parts):
        rows = _rows(parts[r]["target"], n)
        max_recv = parts[r]["target"].shape[0] // n if parts[r]["target"].dim() >= 1 else 1
        counts = parts[r]["recv_counts"].reshape(-1) if isinstance(parts[r].get("recv_counts"), torch.Tensor) else None
        for src in sorted(parts):
            rows[src].copy_(staged[src][r])
            if counts is not None and src < counts.numel():
                counts[src] = min(as_ints(parts[src]["send_counts"])[r], max_recv)


def _barrier(_parts: dict[int, dict[str, Any]]) -> None:
    return None


# name -> (operand names in printed order, what the meeting computes, the operand returned)
COLLECTIVES: dict[str, tuple[tuple[str, ...], Callable[[dict[int, dict[str, Any]]], None], str]] = {
    "allreduce": (("target", "signal"), _allreduce, "target"),
    "allreduce_ring": (("target", "signal"), _allreduce, "target"),
    "barrier": (("signal",), _barrier, "signal"),
    "broadcast": (("target", "signal"), _broadcast, "target"),
    "allgather": (("input", "target", "signal"), _allgather, "target"),
    "reduce_scatter": (("target", "signal"), _reduce_scatter, "target"),
    "all_to_all": (("input", "target", "signal"), _all_to_all, "target"),
    "all_to_all_v": (("input", "target", "signal", "send_counts", "recv_counts"), _all_to_all_v, "target"),
}


def _collective_kernel(name: str, host_builtin: bool) -> Callable[..., Any]:
    names, compute, returned = COLLECTIVES[name]

    def on_rank(r: int, operands: dict[str, Any], kw: dict[str, Any]) -> Any:
        local = {k: ranks.resolve(v, r) for k, v in operands.items()}
        local["kw"] = kw
        _world().meet(name, r, local, compute, f"pld.tensor.{name} (a collective every rank must join)")
        return local.get(returned)

    def kernel(*args: Any, _device: Any = None, **kw: Any) -> Any:
        operands = dict(zip(names, args, strict=False))
        w = _world()
        r = ranks.current_rank()
        if r is not None:  # a chip program's collective: this rank joins
            return on_rank(r, operands, kw)
        devices: list[int]
        if host_builtin and _device is not None:
            devices = [int(as_scalar(_device))]  # one launch of a per-rank loop
        else:
            devices = list(range(w.size))  # a host-level collective: every rank at once
        for d in devices:
            ranks.launch_on_rank(d, lambda *_a, _d=d: on_rank(_d, operands, kw), (), what=f"{name} collective")
        return operands.get(returned)

    kernel.__name__ = f"collective_{name}"
    return kernel


for _name in COLLECTIVES:
    if _name != "allreduce_ring":
        register(f"pld.tensor.{_name}")(_collective_kernel(_name, host_builtin=False))
    register(f"builtin.tensor.{_name}")(_collective_kernel(_name, host_builtin=True))


# ---------------------------------------------------------------------- dist.* (host runtime intrinsics)


@dataclass
class Future:
    """What ``dist.submit_worker`` / ``dist.submit_orchestrator`` return: the task's value."""

    value: Any


@register("dist.make_tensor")
def make_tensor(rt: Any, count: Any, *_a: Any, dtype: Any = None, **_kw: Any) -> torch.Tensor:
    dt = dtype if isinstance(dtype, torch.dtype) else torch.float32
    check_alloc([int(as_scalar(count))], dt, "dist.make_tensor")
    return torch.zeros(int(as_scalar(count)), dtype=dt)


def _submit(rt: Any, fn: Any = None, *args: Any, **_kw: Any) -> Future:
    return Future(fn(*args) if callable(fn) else fn)


register("dist.submit_worker")(_submit)
register("dist.submit_orchestrator")(_submit)


@register("dist.future_get")
def future_get(future: Any, *_a: Any, **_kw: Any) -> Any:
    """The value of a future handle (what ``dist.submit_worker``/``submit_orchestrator`` return)."""
    if not isinstance(future, Future):
        what = type(future).__name__ if not isinstance(future, torch.Tensor) else f"a tensor {list(future.shape)}"
        raise DistributedError(f"dist.future_get awaits a future (a dist.submit_* result), got {what}")
    return future.value


def _settled(x: Any) -> Any:
    """A tree reduction's leaf: a future's value, or the value itself."""
    return x.value if isinstance(x, Future) else x


@register("dist.tree_reduce")
def tree_reduce(rt: Any, leaves: Any, *_a: Any, op: Any = 0, **_kw: Any) -> Any:
    items = [_settled(x) for x in (leaves if isinstance(leaves, list | tuple) else [leaves])]
    if not items:
        raise DistributedError("dist.tree_reduce over no leaves")
    while len(items) > 1:  # pairs, level by level: ((a+b)+(c+d)), as a tree reduction orders them
        nxt = [_reduce([items[i], items[i + 1]], op) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
        items = nxt
    return items[0]
