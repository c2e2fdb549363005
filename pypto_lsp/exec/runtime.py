"""What generated scripts import: kernel lookup, checks, SPMD/lane drivers, group dispatch.

Kept small on purpose: op semantics live in :mod:`.kernels`, the AIC/AIV
simulator in :mod:`.crosscore`; this module only glues them to the code that
:mod:`.codegen` writes.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch

from . import context, crosscore, spmd
from .crosscore import runs_cube
from .kernels import KERNELS, NOOPS, ResultType
from .kernels.system_ops import new_task_id as task_id
from .ranks import WindowView, current_world, launch_on_rank, run_host, submit_scope, submit_task
from .values import DTYPES, get_valid, with_valid

__all__ = [
    "launch_on_rank",
    "run_host",
    "submit_task",
    "submit_scope",
    "ResultType",
    "kernel",
    "dtype",
    "check_value",
    "with_valid",
    "world_size",
    "scalar_arg",
    "dim",
    "scalar_cast",
    "fail",
    "missing_function",
    "spmd_blocks",
    "run_spmd",
    "task_id",
    "submitted",
    "holds",
    "dispatch",
    "split_aiv_lanes",
    "run_split_aiv",
    "runs_cube",
    "run_group",
    "group_launcher",
    "ExecutionError",
    "ShapeCheckError",
]


class ExecutionError(RuntimeError):
    """A failure the IR itself causes (unsupported op, missing function, bad yield ...)."""

    kind = "runtime"


class UnsupportedOpError(ExecutionError):
    kind = "unsupported-op"


class ShapeCheckError(ExecutionError):
    kind = "shape-mismatch"


class DtypeCheckError(ExecutionError):
    kind = "dtype-mismatch"


def _noop(*_args: Any, **_kwargs: Any) -> None:
    return None


def kernel(name: str) -> Callable[..., Any]:
    if name in OVERRIDES:
        return OVERRIDES[name]
    k = KERNELS.get(name)
    if k is not None:
        return k
    if name in NOOPS:
        return _noop

    def unsupported(*_args: Any, **_kwargs: Any) -> Any:
        raise UnsupportedOpError(f"op '{name}' has no PyTorch kernel in pypto-lsp yet")

    return unsupported


def dtype(name: str) -> torch.dtype:
    return DTYPES.get(name, torch.float32)


def check_value(value: Any, shape: tuple[Any, ...], dt: torch.dtype, valid: tuple[Any, ...] | None, name: str) -> Any:
    """After an assignment to a Tensor/Tile-typed name: type, shape and dtype as annotated."""
    if type(value) is torch.Tensor and value.dtype == dt and value.shape == shape:
        # fast path: a fully static annotation that holds
        return value if valid is None else with_valid(value, valid)
    if isinstance(value, WindowView):  # a window as the host holds it (exec.ranks): rank 0's copy checked
        check_value(value.local(0), shape, dt, None, name)
        return value
    if not isinstance(value, torch.Tensor):
        raise ShapeCheckError(f"'{name}' should be a tensor of shape {list(shape)}, got {type(value).__name__}")
    vs = value.shape
    if len(vs) != len(shape):
        raise ShapeCheckError(f"shape mismatch for '{name}': annotated {_fmt(shape)}, computed {list(vs)}")
    for a, b in zip(vs, shape, strict=True):
        if b is not None and a != b:
            raise ShapeCheckError(f"shape mismatch for '{name}': annotated {_fmt(shape)}, computed {list(vs)}")
    if value.dtype != dt:
        if value.dtype.is_floating_point and dt.is_floating_point:
            # DIVERGENCE: PyPTO's type deduction promotes (an FP16 tile times an FP32 scalar is
            # FP32) where torch keeps the narrower dtype; the annotation is what the hardware
            # computes in, so convert instead of failing as the reference does.
            value = value.to(dt)
            return value if valid is None else with_valid(value, tuple(valid))
        raise DtypeCheckError(f"dtype mismatch for '{name}': annotated {_dt_name(dt)}, computed {_dt_name(value.dtype)}")
    if valid is not None:
        return with_valid(value, tuple(valid))
    return value


def check_spec(value: Any, spec: tuple[tuple[int, ...], torch.dtype, tuple[int, ...] | None], name: str) -> Any:
    """:func:`check_value` of a static annotation, its ``(shape, dtype, valid)`` one constant of the
    script (``exec.codegen``: ``check_spec``)."""
    shape, dt, valid = spec
    if type(value) is torch.Tensor and value.dtype == dt and value.shape == shape:
        return value if valid is None else with_valid(value, valid)
    return check_value(value, shape, dt, valid, name)


def check_items(value: Any, items: tuple[tuple[tuple[Any, ...], torch.dtype, Any] | None, ...], name: str) -> Any:
    """After an assignment to a name of tuple type: each array item's shape and dtype as annotated
    (``check_value`` of ``name[i]``, its valid region left to where it is read; None: an item of
    another type, not looked at)."""
    if type(value) not in (tuple, list) or len(value) != len(items):
        return value
    out = list(value)
    for i, (v, item) in enumerate(zip(value, items, strict=True)):
        if item is not None and isinstance(v, torch.Tensor):
            out[i] = check_value(v, item[0], item[1], None, f"{name}[{i}]")
    return type(value)(out)


def _fmt(shape: tuple[Any, ...]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _dt_name(dt: torch.dtype) -> str:
    return str(dt).replace("torch.", "")


def world_size() -> int:
    """The running program's rank count (1 outside a multi-rank run): a window buffer is made on
    every rank, and the allocation guard counts them together (exec.codegen_memory.window_guard)."""
    w = current_world()
    return w.size if w is not None else 1


def call_counter() -> collections.Counter[str]:
    """How often each IR function ran (one counter per execution of a script)."""
    return collections.Counter()


def scalar_arg(v: Any) -> Any:
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        return v.item()
    return v


def dim(t: Any, axis: int) -> int:
    return int(t.shape[axis])


def scalar_cast(v: Any, dt: str) -> Any:
    if isinstance(v, torch.Tensor):
        v = v.item()
    if dt == "BOOL":
        return bool(v)
    if dt.startswith(("INT", "UINT")) or dt == "INDEX":
        return int(v)
    return float(v)


def fail(message: str) -> Any:
    raise ExecutionError(message)


def missing_function(name: str) -> Any:
    raise ExecutionError(f"call to undefined function '{name}'")


# ---------------------------------------------------------------------- SPMD


def spmd_blocks(n: Any) -> Iterator[int]:
    """``for i in pl.spmd(N)``: run the body once per block with get_block_idx() = i.

    DIVERGENCE: the reference runs only block 0 (get_block_idx() is constant 0),
    so programs with more than one block can never match their golden there.
    """
    count = int(n)
    for i in range(count):
        with context.spmd_block(i, count):
            yield i


def run_spmd(fn: Callable[..., Any], n: Any, args: tuple[Any, ...], barrier: bool = False) -> Any:
    """A call with ``attrs={"core_num": N}``: every block, sequentially; returns block 0's value.
    ``barrier``: the kernel can reach ``system.syncall``, its blocks meet there (:mod:`.spmd`)."""
    result = None
    count = int(n)
    if barrier and count > 1:
        return spmd.run_blocks(fn, count, args)
    for i in range(count):
        with context.spmd_block(i, count):
            r = fn(*args)
        if i == 0:
            result = r
    return result


# ---------------------------------------------------------------------- task launches


def submitted(result: Any, tid: Any) -> tuple[Any, ...]:
    """``pl.submit`` / ``pl.spmd_submit``: the callee's results, then the launch's task id (pypto
    ``docs/en/dev/language/02-manual_dependencies.md``: a flat ``(*results, TASK_ID)`` tuple)."""
    return (*result, tid) if isinstance(result, tuple) else (result, tid)


def holds(predicate: Any) -> bool:
    """A dispatch predicate (``tensor[i] <op> literal``) read at the dispatch point."""
    if isinstance(predicate, torch.Tensor):
        return bool(predicate.reshape(-1)[0].item()) if predicate.numel() else False
    return bool(predicate)


def dispatch(predicate: Callable[[], Any], launch: Callable[[], Any], left: tuple[Any, ...]) -> Any:
    """A launch with ``predicate=``: pypto's scheduler evaluates the predicate once the task's
    dependencies are met (here: now, tasks run in program order) and, when it is false, retires the
    task inline: nothing runs, the task id still settles its dependents, and its results are the
    arguments it would have written into, unchanged."""
    if holds(predicate()):
        return launch()
    return left[0] if len(left) == 1 else left


# ---------------------------------------------------------------------- split_aiv regions


class _SplitAivState(threading.local):
    def __init__(self) -> None:
        self.stack: list[dict[str, Any]] = []


_split_state = _SplitAivState()


def split_aiv_lanes(n: Any, mode: int) -> Iterator[int]:
    """``for lane in pl.split_aiv(2, mode=...)``: the per-lane AIV region of an authored split.

    Lanes run one after the other. ``tile.aiv_shard`` hands each lane its part
    of a whole tile; ``tile.aic_gather`` writes the lane's part into a tile
    shared by all lanes of this region run, complete once the last lane is done
    (the value is read after the loop, on the cube side).
    """
    count = int(n)
    frame: dict[str, Any] = {"mode": mode, "lanes": count, "gather": {}}
    _split_state.stack.append(frame)
    try:
        for lane in range(count):
            frame["lane"] = lane
            with context.subblock(lane):
                yield lane
    finally:
        _split_state.stack.pop()


def run_split_aiv(fn: Callable[..., Any], n: int, mode: int, args: tuple[Any, ...]) -> Any:
    """A function-level split_aiv region: the body on two concurrent AIV lanes that meet at
    each ``aic_gather`` / ``aiv_shard`` (lane 0 runs the cube work); lane 0's value is returned."""
    _ = n  # always two AIV lanes
    return crosscore.run_lanes(getattr(fn, "__name__", "split_aiv"), fn, args, split=mode)


def _axis_of(mode: int) -> int:
    return 1 if mode in (2, 4) else 0


def _lane_part(whole_extent: int, lanes: int, lane: int) -> tuple[int, int]:
    size = -(-whole_extent // lanes)
    start = min(lane * size, whole_extent)
    return start, min(size, whole_extent - start)


def aiv_shard(
    t: torch.Tensor, *_args: Any, split: Any = None, lane_stride: Any = None, _rtype: ResultType | None = None, **_kw: Any
) -> Any:
    if not _split_state.stack:
        # a split_aiv function's lanes meet (else the whole tile is the lane's tile)
        return KERNELS["tile.aiv_shard"](t, *_args, split=split, lane_stride=lane_stride or 0, _rtype=_rtype)
    frame = _split_state.stack[-1]
    mode = int(split) if isinstance(split, int) and split else frame["mode"]
    axis = _axis_of(mode)
    extent = t.shape[axis]
    if _rtype is not None and _rtype.shape is not None:
        part = int(_rtype.shape[axis])
        start = frame["lane"] * part
    else:
        start, part = _lane_part(extent, frame["lanes"], frame["lane"])
    have = max(0, min(part, extent - start))
    piece = t.narrow(axis, min(start, extent), have).clone()
    if have < part:
        # odd split: the last lane's box is as large as the first lane's, its tail is padding
        shape = list(piece.shape)
        shape[axis] = part
        padded = torch.zeros(shape, dtype=t.dtype)
        padded.narrow(axis, 0, have).copy_(piece)
        piece = padded
    v = list(get_valid(t) or t.shape)
    v[axis] = max(0, min(have, v[axis] - start))
    return with_valid(piece, tuple(v))


def aic_gather(t: torch.Tensor, *_args: Any, split: Any = None, _site: int = 0, _rtype: ResultType | None = None, **_kw: Any) -> Any:
    if not _split_state.stack:
        return KERNELS["tile.aic_gather"](t, *_args, split=split, _rtype=_rtype)
    frame = _split_state.stack[-1]
    mode = int(split) if isinstance(split, int) and split else frame["mode"]
    axis = _axis_of(mode)
    buf = frame["gather"].get(_site)
    if buf is None:
        shape = list(t.shape)
        if _rtype is not None and _rtype.shape is not None:
            shape = [int(d) for d in _rtype.shape]
        else:
            shape[axis] *= frame["lanes"]
        buf = torch.zeros(shape, dtype=t.dtype)
        frame["gather"][_site] = buf
    part = t.shape[axis]
    start = frame["lane"] * part
    n = max(0, min(part, buf.shape[axis] - start))
    buf.narrow(axis, start, n).copy_(t.narrow(axis, 0, n))
    return buf


OVERRIDES: dict[str, Callable[..., Any]] = {
    "tile.aiv_shard": aiv_shard,
    "tensor.aiv_shard": aiv_shard,
    "tile.aic_gather": aic_gather,
    "tensor.aic_gather": aic_gather,
}


# ---------------------------------------------------------------------- groups


def run_group(
    name: str, aic: Callable[..., Any], aiv: Callable[..., Any], args: tuple[Any, ...], *, split: int, dual_aiv_dispatch: bool
) -> Any:
    return crosscore.run_group(name, aic, aiv, args, split=split, dual_aiv_dispatch=dual_aiv_dispatch)


def group_launcher(name: str, aic: Callable[..., Any], aiv: Callable[..., Any], split: int, dual_aiv_dispatch: bool) -> Callable[..., Any]:
    def launch(*args: Any) -> Any:
        return run_group(name, aic, aiv, args, split=split, dual_aiv_dispatch=dual_aiv_dispatch)

    return launch


import builtins as _builtins  # noqa: E402

# The builtins the generated module is given (validate.engine.run); dump text never reaches them anyway.
SAFE_BUILTINS = {
    n: getattr(_builtins, n)
    for n in (
        "range",
        "min",
        "max",
        "abs",
        "int",
        "float",
        "bool",
        "len",
        "isinstance",
        "tuple",
        "list",
        "dict",
        "None",
        "True",
        "False",
        "__import__",
        "Exception",
        "RuntimeError",
        "TypeError",
        "ValueError",
    )
    if hasattr(_builtins, n)
}
