"""The registry every kernel module registers into, the types kernels receive, and the helpers they share
(integers, scalars, result types, windows, valid regions)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch

from ...ir import alloc_budget
from .. import context, sanitizer
from ..values import valid_box

__all__ = [
    "ResultType",
    "MemPtr",
    "KERNELS",
    "register",
    "PREFIXES",
    "as_ints",
    "product",
    "as_scalar",
    "result_shape",
    "result_dtype",
    "is_float",
    "as_tensor_like",
    "enum_name",
    "is_atomic_add",
    "copy_window",
    "check_alloc",
    "available",
    "prefix_count",
    "prefix_box",
    "reshape_valid",
    "fill_value",
    "write_region",
    "register",
    "PREFIXES",
]


class ResultType(NamedTuple):
    """The annotated type of the name an op result is assigned to (dims evaluated; None = unknown)."""

    shape: tuple[int, ...] | None
    dtype: torch.dtype | None
    valid_shape: tuple[int, ...] | None
    layout: str | None
    memspace: str | None


class MemPtr(NamedTuple):
    """Result of ``tile.alloc`` / ``tensor.alloc``: a buffer declaration (numerically inert)."""

    memspace: Any
    size: int


KERNELS: dict[str, Callable[..., Any]] = {}
PREFIXES = ("tile", "tensor")


def register(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a kernel; a bare name (no ``ns.``) is registered as ``tile.X`` and ``tensor.X``."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            if "." in n:
                KERNELS[n] = fn
            else:
                for p in PREFIXES:
                    KERNELS[f"{p}.{n}"] = fn
        return fn

    return deco


# ---------------------------------------------------------------------- helpers


def as_ints(x: Any) -> list[int]:
    """Shape/offset/index argument as a list of Python ints."""
    if x is None:
        return []
    if isinstance(x, torch.Tensor):
        return [int(v) for v in x.reshape(-1).tolist()]
    if isinstance(x, int | float):
        return [int(x)]
    return [int(v.item()) if isinstance(v, torch.Tensor) else int(v) for v in x]


def last_writes(where: torch.Tensor, slots: int) -> torch.Tensor:
    """Of writes made in order to the slots ``where`` (int64, inside ``[0, slots)``), the ones no
    later write overwrites (a bool mask): the device's order, which ``index_put_`` and
    ``index_copy_`` leave unspecified when an index repeats."""
    order = torch.arange(where.numel())
    last = torch.zeros(max(slots, 1), dtype=torch.int64).scatter_reduce_(0, where, order, "amax", include_self=False)
    return last[where] == order


def product(xs: Sequence[int]) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def as_scalar(v: Any) -> Any:
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        return v.item()
    return v


def result_shape(rt: ResultType | None) -> tuple[int, ...] | None:
    if rt is None or rt.shape is None:
        return None
    try:
        return tuple(int(s) for s in rt.shape)
    except (TypeError, ValueError):
        return None


def result_dtype(rt: ResultType | None) -> torch.dtype | None:
    return None if rt is None else rt.dtype


def is_float(t: torch.Tensor) -> bool:
    return t.dtype.is_floating_point


def as_tensor_like(v: Any, ref: torch.Tensor) -> torch.Tensor:
    """A Python scalar as a 0-d tensor to combine with ``ref`` (a float scalar on an int tensor stays float)."""
    if isinstance(v, torch.Tensor):
        return v
    v = as_scalar(v)
    dt = torch.float32 if isinstance(v, float) and not is_float(ref) else ref.dtype
    return torch.tensor(v, dtype=dt)


def enum_name(v: Any) -> str | None:
    """Enum-ish kwarg (``"Add"``, ``"pl.PadValue.max"``, an enum member ...) as its lower-case name."""
    if v is None:
        return None
    if isinstance(v, bool | int):
        return str(int(v))
    name = getattr(v, "name", None)
    s = name if isinstance(name, str) else str(v)
    return s.rsplit(".", 1)[-1].lower()


def is_atomic_add(atomic: Any) -> bool:
    if atomic is None:
        return False
    if isinstance(atomic, bool | int):
        return bool(atomic)
    return enum_name(atomic) in ("add", "1")


def check_alloc(shape: Sequence[int], dtype: torch.dtype, what: str) -> None:
    """Before a kernel makes a tensor whose shape is an operand's value (a window that overhangs
    its source, a padded copy): over the run's budget it is an error on the op's line, not
    gigabytes made (the IR's own allocations are checked before the run, ir.alloc_static, or by
    the generated code's guard; these are the kernels' own)."""
    guard = context.alloc_guard()
    site = (dtype.itemsize, what, str(dtype).removeprefix("torch."), 0)
    (guard.check if guard is not None else alloc_budget.check)(tuple(shape), site)


def copy_window(
    src: torch.Tensor, offs: list[int], shape: list[int], extent: list[int] | None = None, what: str = "a window copied out of its source"
) -> torch.Tensor:
    """A fresh zero tensor of ``shape`` holding ``src[offs : offs + extent]`` at its origin.

    ``extent`` (default ``shape``) limits what is copied; the part past the end
    of ``src`` stays zero.
    """
    check_alloc(shape, src.dtype, what)
    out = src.new_zeros(shape)
    ext = shape if extent is None else extent
    src_sl = []
    dst_sl = []
    for o, n, size in zip(offs, ext, src.shape, strict=True):
        start = max(o, 0)
        lead = start - o  # cells before the source start (negative offset): left zero
        count = max(0, min(o + n, size) - start)
        if count == 0:
            return out
        src_sl.append(slice(start, start + count))
        dst_sl.append(slice(lead, lead + count))
    out[tuple(dst_sl)] = src[tuple(src_sl)]
    return out


def available(src: torch.Tensor, offs: list[int], shape: list[int]) -> list[int]:
    """Per dim, how many cells of the window ``[off, off + shape)`` exist in ``src``."""
    return [max(0, min(s, size - o)) for o, s, size in zip(offs, shape, src.shape, strict=True)]


def prefix_count(valid: Sequence[int], shape: Sequence[int]) -> int | None:
    """Element count if the box ``valid`` is a row-major prefix of ``shape``, else None."""
    if any(v == 0 for v in valid):
        return 0
    n = len(shape)
    for j in range(n):
        if all(valid[i] == 1 or shape[i] == 1 for i in range(j)) and all(valid[i] == shape[i] for i in range(j + 1, n)):
            return int(valid[j]) * product(shape[j + 1 :])
    return None


def prefix_box(count: int, shape: Sequence[int]) -> tuple[int, ...] | None:
    """The box of ``shape`` holding exactly the first ``count`` elements (row-major), if any."""
    shape = [int(s) for s in shape]
    if count >= product(shape):
        return tuple(shape)
    for j in range(len(shape)):
        inner = product(shape[j + 1 :])
        if inner and count % inner == 0 and count // inner <= shape[j]:
            return tuple([1] * j + [count // inner] + shape[j + 1 :])
    return None


def reshape_valid(valid: Sequence[int] | None, old: Sequence[int], new: Sequence[int]) -> tuple[int, ...] | None:
    """Carry a valid box through a reshape when it stays a box; None if unknown (whole)."""
    if valid is None or tuple(valid) == tuple(old):
        return None
    old = [int(s) for s in old]
    new = [int(s) for s in new]
    if len(valid) != len(old):
        return None
    if old and new and old[-1] == new[-1]:
        lead = prefix_count(valid[:-1], old[:-1])
        if lead is not None:
            box = prefix_box(lead, new[:-1])
            if box is not None:
                return (*box, int(valid[-1]))
    count = prefix_count(valid, old)
    if count is not None:
        return prefix_box(count, new)
    return None


def fill_value(dtype: torch.dtype, pad: Any) -> Any:
    mode = enum_name(pad) or "zero"
    if mode in ("zero", "null", "none", "0"):
        return 0
    hi = mode in ("max", "inf", "+inf")
    if dtype == torch.bool:
        return hi
    if dtype.is_floating_point:
        # DIVERGENCE: the reference pads with +-finfo.max; the hardware (and the
        # repo's own runtime test) pads with +-inf.
        return math.inf if hi else -math.inf
    info = torch.iinfo(dtype)
    return info.max if hi else info.min


def write_region(
    dst: torch.Tensor, src: torch.Tensor, offs: list[int], atomic: bool, mask: torch.Tensor | None = None, op: str = "tile.store"
) -> torch.Tensor:
    """``dst[offs : offs + valid(src)] (+)= src[: valid]``, clamped at the edge of ``dst``. In place.

    ``mask`` (same shape as ``src``) further restricts the written cells.
    """
    v = list(valid_box(src))
    if len(offs) != src.dim():
        if len(offs) > src.dim():
            extra = len(offs) - src.dim()
            src = src.reshape([1] * extra + list(src.shape))
            mask = None if mask is None else mask.reshape(src.shape)
            v = [1] * extra + v
        elif all(s == 1 for s in src.shape[: src.dim() - len(offs)]):
            drop = src.dim() - len(offs)
            src = src.reshape(list(src.shape)[drop:])
            mask = None if mask is None else mask.reshape(src.shape)
            v = v[drop:]
    if len(offs) != dst.dim() or len(offs) != src.dim():
        raise ValueError(f"store/assemble: {len(offs)} offsets for a {src.dim()}-D source and a {dst.dim()}-D target")
    san = sanitizer.active()
    if san is not None:
        san.window(op, list(dst.shape), offs, v, "tensor" if dst.dim() and san.is_global(dst) else "tile", dst)
        if mask is None:
            starts = [max(o, 0) for o in offs]
            san.access(
                "w", dst, starts, [max(0, min(o + n, size) - st) for o, n, size, st in zip(offs, v, dst.shape, starts, strict=True)], op
            )
    dst_sl = []
    src_sl = []
    for o, n, size in zip(offs, v, dst.shape, strict=True):
        # DIVERGENCE: clamp at the tensor edge (the reference raises a shape mismatch).
        start = max(o, 0)
        count = max(0, min(o + n, size) - start)
        if count == 0:
            return dst
        dst_sl.append(slice(start, start + count))
        src_sl.append(slice(start - o, start - o + count))
    region = src[tuple(src_sl)].to(dst.dtype)
    if region.untyped_storage().data_ptr() == dst.untyped_storage().data_ptr():
        region = region.clone()  # a source inside its own target (torch refuses overlapping copies): read first, then write
    window = dst[tuple(dst_sl)]
    if san is not None and san.defined.shadows:  # the window takes the source's definedness
        san.defined.moved(window, src[tuple(src_sl)], None if mask is None else mask[tuple(src_sl)], atomic)
    if mask is not None:
        m = mask[tuple(src_sl)]
        if atomic:
            window[m] += region[m]
        else:
            window[m] = region[m]
    elif atomic:
        window += region
    else:
        window.copy_(region)
    return dst
