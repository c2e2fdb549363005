"""How a tile splits between the two AIV lanes and joins again (the split codes of ``tile.tpush_to_aiv``,
``aiv_shard`` / ``aic_gather``): the tile arithmetic the cross-core runtime (:mod:`.crosscore`), the
transport kernels and the batched pipe loops share."""

from __future__ import annotations

from typing import Any

import torch

from ..ir.names import SPLIT_ROWS
from .values import get_valid, valid_box, with_valid

__all__ = ["SPLIT_CODES", "split_code", "split_tile", "merge_tiles", "fit_shape"]

SPLIT_CODES = (1, 2, 3, 4)
SPLIT_NAMES = {"NONE": 0, "NO_SPLIT": 0, "UP_DOWN": 1, "LEFT_RIGHT": 2, "UP_DOWN_ODD": 3, "LEFT_RIGHT_ODD": 4}


def split_code(split: Any) -> int:
    """A split attr value (int code, ``"UP_DOWN"``, ``pl.SplitMode`` name ...) as its int code."""
    if split is None:
        return 0
    if isinstance(split, bool):
        return int(split)
    if isinstance(split, int):
        return split
    if isinstance(split, str):
        key = split.rsplit(".", 1)[-1].upper()
        if key in SPLIT_NAMES:
            return SPLIT_NAMES[key]
        return int(key)
    value = getattr(split, "value", None)
    if value is not None:
        return int(value)
    return int(split)


# ---------------------------------------------------------------------- tile partitioning


def _axis(code: int, rank: int) -> int:
    if rank <= 1:
        return 0
    return rank - 2 if code in SPLIT_ROWS else rank - 1


# what a dual-dispatch no-split lane 1 queues towards the cube in a bulk push (never read)


def _pad_to(t: torch.Tensor, axis: int, size: int) -> torch.Tensor:
    if t.shape[axis] >= size:
        return t
    shape = list(t.shape)
    shape[axis] = size - t.shape[axis]
    return torch.cat([t, t.new_zeros(shape)], dim=axis)


def split_tile(tile: torch.Tensor, code: int, lane_stride: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Partition ``tile`` between the two AIV lanes for split ``code`` (1..4).

    Physical per-lane box ``B = ceil(size / 2)`` along the split axis; lane 0 gets
    ``[0, B)``, lane 1 gets ``[S, S + B)`` with ``S = lane_stride or B``. Valid
    extents: lane 0 ``min(V, S)``, lane 1 ``min(max(V - S, 0), S)``. Codes 3/4
    require lane 0 to be exactly one cell longer than lane 1.

    DIVERGENCE: a lane payload cut short by the tile end is zero-padded to the box
    ``B`` (the reference hands lane 1 a physically shorter tensor, which then
    contradicts the declared per-lane tile type, e.g. 16 vs 17 rows).
    """
    axis = _axis(code, tile.dim())
    size = int(tile.shape[axis])
    box = (size + 1) // 2
    stride = int(lane_stride) if lane_stride else box
    if stride <= 0 or stride > box:
        raise ValueError(f"split {code}: lane_stride {stride} out of range for a {size}-wide axis (per-lane box {box})")
    vbox = list(valid_box(tile))
    v = vbox[axis]
    v0 = min(v, stride)
    v1 = min(max(v - stride, 0), stride)
    if code in (3, 4) and v0 != v1 + 1:
        raise ValueError(f"split {code} requires lanes one cell apart, but a valid extent of {v} over stride {stride} gives {v0} and {v1}")
    part0 = _pad_to(tile.narrow(axis, 0, min(box, size)).clone(), axis, box)
    n1 = max(0, min(box, size - stride))
    part1 = _pad_to(tile.narrow(axis, min(stride, size), n1).clone(), axis, box)
    valid0 = list(vbox)
    valid1 = list(vbox)
    valid0[axis] = v0
    valid1[axis] = v1
    return with_valid(part0, valid0), with_valid(part1, valid1)


def merge_tiles(part0: torch.Tensor, part1: torch.Tensor, code: int) -> torch.Tensor:
    """Join the two lanes' parts (V->C split 1/2): lane 0 first, then lane 1, along the split axis.

    The merged valid extent is the sum of the lanes' valid extents along the axis
    (capped by the merged size); the other axes keep lane 0's valid extents.
    """
    axis = _axis(code, part0.dim())
    if part0.dtype != part1.dtype:
        dt = torch.promote_types(part0.dtype, part1.dtype)
        part0, part1 = part0.to(dt), part1.to(dt)
    merged = torch.cat([part0, part1], dim=axis)
    v0 = valid_box(part0)
    v1 = valid_box(part1)
    mv = list(v0)
    if len(v1) == len(v0):
        mv[axis] = min(v0[axis] + v1[axis], int(merged.shape[axis]))
    return with_valid(merged, mv)


def fit_shape(t: torch.Tensor, shape: Any) -> torch.Tensor:
    """``t`` brought to ``shape``: reshaped when only the rank differs, else zero-padded/cropped.

    The valid region is kept (capped by the new shape).
    """
    if shape is None:
        return t
    try:
        target = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        return t
    if target == tuple(t.shape):
        return t
    v = get_valid(t)
    if len(target) != t.dim():
        if t.numel() == _prod(target):
            return t.reshape(target)
        return t
    out = t
    for axis, size in enumerate(target):
        if out.shape[axis] > size:
            out = out.narrow(axis, 0, size)
        elif out.shape[axis] < size:
            out = _pad_to(out, axis, size)
    if v is not None and len(v) == len(target):
        return with_valid(out, tuple(min(a, b) for a, b in zip(v, target, strict=True)))
    if v is None and tuple(t.shape) != target:
        # Padding adds cells that were not in the payload: they are not valid.
        return with_valid(out, tuple(min(a, b) for a, b in zip(t.shape, target, strict=True)))
    return out


def _prod(xs: Any) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


# ---------------------------------------------------------------------- the runtime
