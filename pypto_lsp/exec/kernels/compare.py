"""Comparison and selection: cmp (the packed mask the IR declares), sel, masks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..values import valid_box, with_valid
from .base import (
    KERNELS,
    ResultType,
    as_scalar,
    register,
    result_shape,
)

# ---------------------------------------------------------------------- compare / select


_CMP: dict[int, Callable[[Any, Any], torch.Tensor]] = {
    0: torch.eq,
    1: torch.ne,
    2: torch.lt,
    3: torch.le,
    4: torch.gt,
    5: torch.ge,
}
_CMP_NAMES = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}
_BIT_WEIGHTS = torch.tensor([1 << i for i in range(8)], dtype=torch.int32)
_BIT_SHIFTS = torch.arange(8, dtype=torch.int32)


def _cmp_fn(cmp_type: Any) -> Callable[[Any, Any], torch.Tensor]:
    if cmp_type is None:
        return _CMP[0]  # missing cmp_type means EQ
    key = cmp_type.rsplit(".", 1)[-1].lower() if isinstance(cmp_type, str) else cmp_type
    try:
        fn = _CMP.get(_CMP_NAMES[key] if key in _CMP_NAMES else int(key))
    except (TypeError, ValueError):
        fn = None
    if fn is None:
        raise ValueError(f"cmp_type must be 0..5 (eq ne lt le gt ge), got {cmp_type!r}")
    return fn


def pack_mask(bits: torch.Tensor, width: int | None = None) -> torch.Tensor:
    """Bool ``[..., N]`` -> packed uint8 ``[..., W]``: bit ``j % 8`` of byte ``j // 8`` is element j (LSB first).

    ``W`` defaults to ``roundup(ceil(N / 8), 32)`` (the A2/A3 predicate tile width).
    """
    n = bits.shape[-1]
    nbytes = -(-n // 8)
    if width is None:
        width = -(-nbytes // 32) * 32
    pad = nbytes * 8 - n
    b = bits.to(torch.int32)
    if pad:
        b = torch.cat([b, b.new_zeros((*b.shape[:-1], pad))], dim=-1)
    packed = (b.reshape(*b.shape[:-1], nbytes, 8) * _BIT_WEIGHTS).sum(-1).to(torch.uint8)
    if width > nbytes:
        packed = torch.cat([packed, packed.new_zeros((*packed.shape[:-1], width - nbytes))], dim=-1)
    elif width < nbytes:
        packed = packed[..., :width]
    return packed


def unpack_mask(mask: torch.Tensor, n: int) -> torch.Tensor:
    """Packed uint8 ``[..., W]`` -> bool ``[..., n]`` (inverse of :func:`pack_mask`)."""
    bits = (mask.to(torch.int32).unsqueeze(-1) >> _BIT_SHIFTS) & 1
    bits = bits.reshape(*mask.shape[:-1], mask.shape[-1] * 8)
    if bits.shape[-1] < n:
        bits = torch.cat([bits, bits.new_zeros((*bits.shape[:-1], n - bits.shape[-1]))], dim=-1)
    return bits[..., :n].bool()


def _cond(mask: Any, data: torch.Tensor) -> torch.Tensor:
    """A select mask as bool broadcastable to ``data``."""
    if not isinstance(mask, torch.Tensor):
        return torch.tensor(bool(as_scalar(mask)))
    n = data.shape[-1] if data.dim() else 1
    if mask.dtype == torch.uint8:
        cond = unpack_mask(mask, n)
    elif mask.dtype == torch.bool:
        cond = mask
    else:
        cond = mask != 0
    if cond.dim() >= 2 and data.dim() >= 2 and cond.shape[-2] > data.shape[-2]:
        cond = cond[..., : data.shape[-2], :]
    return cond


def _packed_cmp(lhs: torch.Tensor, rhs: Any, cmp_type: Any, rtype: ResultType | None) -> torch.Tensor:
    bits = _cmp_fn(cmp_type)(lhs, rhs)
    rs = result_shape(rtype)
    width = rs[-1] if rs else None
    packed = pack_mask(bits, width)
    v = valid_box(lhs)
    if len(v) >= 1:
        valid = (*v[:-1], min(-(-v[-1] // 8), packed.shape[-1]))
        return with_valid(packed, valid)
    return packed


@register("tile.cmp")
def tile_cmp(
    lhs: torch.Tensor, rhs: torch.Tensor, *_extra: Any, cmp_type: Any = None, _rtype: ResultType | None = None, **_kw: Any
) -> torch.Tensor:
    """Compare -> PACKED predicate mask (uint8 ``[M, roundup(ceil(N/8), 32)]``, LSB first).

    DIVERGENCE: the reference returns a bool ``[M, N]`` tensor, which contradicts
    the IR's UINT8 mask type.
    """
    return _packed_cmp(lhs, rhs, cmp_type, _rtype)


@register("tile.cmps")
def tile_cmps(
    lhs: torch.Tensor, rhs: Any, *_extra: Any, cmp_type: Any = None, _rtype: ResultType | None = None, **_kw: Any
) -> torch.Tensor:
    """Compare with a scalar -> packed predicate mask (see ``tile.cmp``)."""
    return _packed_cmp(lhs, as_scalar(rhs), cmp_type, _rtype)


@register("tensor.cmp")
def tensor_cmp(lhs: torch.Tensor, rhs: Any, *_extra: Any, cmp_type: Any = None, **_kw: Any) -> torch.Tensor:
    """Compare -> 0/1 tensor in the operands' promoted dtype (the IR type of tensor.cmp; not packed).

    Missing in the reference. ``tile.sel`` also accepts such a 0/1 (or bool) mask.
    """
    r = as_scalar(rhs) if not isinstance(rhs, torch.Tensor) else rhs
    bits = _cmp_fn(cmp_type)(lhs, r)
    dt = torch.promote_types(lhs.dtype, r.dtype) if isinstance(r, torch.Tensor) else lhs.dtype
    return bits.to(dt)


KERNELS["tensor.cmps"] = tensor_cmp


@register("sel")
def sel(mask: Any, lhs: Any, rhs: Any, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """``where(mask, lhs, rhs)``; a packed uint8 mask is unpacked (N taken from the data operand)."""
    data = lhs if isinstance(lhs, torch.Tensor) else rhs
    cond = _cond(mask, data)
    a = lhs if isinstance(lhs, torch.Tensor) else torch.tensor(as_scalar(lhs), dtype=data.dtype)
    b = rhs if isinstance(rhs, torch.Tensor) else torch.tensor(as_scalar(rhs), dtype=data.dtype)
    try:
        torch.broadcast_shapes(cond.shape, a.shape, b.shape)
    except RuntimeError:
        what = list(mask.shape) if isinstance(mask, torch.Tensor) else "a scalar"
        raise ValueError(
            f"sel: a mask of {what} (as {list(cond.shape)} predicates) cannot choose between {list(a.shape)} and {list(b.shape)} values"
        ) from None
    return torch.where(cond, a, b)


@register("sels")
def sels(mask: Any, src: torch.Tensor, tmp: Any = None, scalar: Any = None, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """``where(mask, src, scalar)`` (printed args: mask, src, tmp, scalar)."""
    if scalar is None and not isinstance(tmp, torch.Tensor):
        scalar = tmp  # tolerate the 3-argument spelling (mask, src, scalar)
    cond = _cond(mask, src)
    return torch.where(cond, src, torch.tensor(as_scalar(scalar if scalar is not None else 0), dtype=src.dtype))
