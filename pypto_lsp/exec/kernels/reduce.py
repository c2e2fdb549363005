"""Reductions: row/col sum, max, min, prod, arg-max/min."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..values import valid_box
from .base import (
    KERNELS,
)

# ---------------------------------------------------------------------- reductions


def _reduce(x: torch.Tensor, axis: int, kind: str, keep: bool = True) -> torch.Tensor:
    """Reduce ``axis`` over the VALID cells only (hardware reductions read the valid region).

    DIVERGENCE: the reference reduces the whole physical tile, padding included.
    """
    axis %= x.dim()
    v = valid_box(x)
    xs = x
    if v[axis] < x.shape[axis] and v[axis] > 0:
        xs = x.narrow(axis, 0, v[axis])
    if kind == "sum":
        out = xs.sum(axis, keepdim=keep)
    elif kind == "max":
        out = xs.amax(axis, keepdim=keep)
    elif kind == "min":
        out = xs.amin(axis, keepdim=keep)
    elif kind == "prod":
        out = xs.prod(axis, keepdim=keep)
    elif kind == "argmax":
        return xs.argmax(axis, keepdim=keep).to(torch.int32)
    elif kind == "argmin":
        return xs.argmin(axis, keepdim=keep).to(torch.int32)
    else:
        raise ValueError(kind)
    return out.to(x.dtype) if out.dtype != x.dtype else out


def _reduction(kind: str, default_axis: int) -> Callable[..., Any]:
    def kernel(x: torch.Tensor, *_extra: Any, axis: Any = None, keep_dim: Any = None, **_kw: Any) -> Any:
        ax = default_axis if axis is None else int(axis)
        keep = True if keep_dim is None else bool(keep_dim)
        out = _reduce(x, ax, kind, keep)
        if out.dim() == 0:
            return out.item()
        return out

    return kernel


for _kind in ("sum", "max", "min", "prod", "argmax", "argmin"):
    KERNELS[f"tile.row_{_kind}"] = KERNELS[f"tensor.row_{_kind}"] = _reduction(_kind, -1)
    KERNELS[f"tile.col_{_kind}"] = KERNELS[f"tensor.col_{_kind}"] = _reduction(_kind, -2)
