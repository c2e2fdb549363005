"""Matrix products: matmul, matmul_acc, bias, transposes (FP32 accumulation)."""

from __future__ import annotations

from typing import Any

import torch

from ..values import as_f32
from .base import (
    ResultType,
    as_scalar,
    register,
    result_dtype,
)

# ---------------------------------------------------------------------- matmul


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Matmul with a wide accumulator.

    DIVERGENCE: the reference multiplies in the operand dtype (BF16 @ BF16 is
    rounded to BF16) and only then widens; the cube accumulates in FP32.
    """
    if a.dtype.is_floating_point or b.dtype.is_floating_point:
        return torch.matmul(as_f32(a), as_f32(b))
    return torch.matmul(a.to(torch.int64), b.to(torch.int64)).to(torch.int32)


def _mm_out(r: torch.Tensor, rtype: ResultType | None, explicit: torch.dtype | None = None) -> torch.Tensor:
    dt = explicit or result_dtype(rtype)
    if dt is not None and dt != r.dtype:
        return r.to(dt)
    return r


def _init(init_cond: Any) -> bool:
    return bool(as_scalar(init_cond)) if init_cond is not None else False


@register("tile.matmul", "tile.gemv", "tile.batch_matmul")
def tile_matmul(lhs: torch.Tensor, rhs: torch.Tensor, *_extra: Any, _rtype: ResultType | None = None, **_kw: Any) -> torch.Tensor:
    """Left x Right -> Acc (FP32 for float operands, INT32 for integer ones)."""
    return _mm_out(_mm(lhs, rhs), _rtype)


@register("tile.matmul_acc", "tile.gemv_acc", "tile.batch_matmul_acc")
def tile_matmul_acc(
    acc: torch.Tensor,
    lhs: torch.Tensor,
    rhs: torch.Tensor,
    init_cond: Any = None,
    *_extra: Any,
    _rtype: ResultType | None = None,
    **_kw: Any,
) -> torch.Tensor:
    """``acc + lhs @ rhs``; when ``init_cond`` holds, ``lhs @ rhs`` alone.

    DIVERGENCE: the reference ignores init_cond (always accumulates).
    """
    prod = _mm(lhs, rhs)
    out = prod if _init(init_cond) else acc.to(prod.dtype) + prod
    return _mm_out(out, _rtype, acc.dtype if result_dtype(_rtype) is None else None)


@register("tile.matmul_bias", "tile.gemv_bias")
def tile_matmul_bias(
    lhs: torch.Tensor, rhs: torch.Tensor, bias: torch.Tensor, *_extra: Any, _rtype: ResultType | None = None, **_kw: Any
) -> torch.Tensor:
    prod = _mm(lhs, rhs)
    return _mm_out(prod + bias.to(prod.dtype), _rtype)


def _transposed(lhs: torch.Tensor, rhs: torch.Tensor, a_trans: Any, b_trans: Any) -> tuple[torch.Tensor, torch.Tensor]:
    return (lhs.mT if a_trans else lhs), (rhs.mT if b_trans else rhs)


@register("tensor.matmul")
def tensor_matmul(
    lhs: torch.Tensor,
    rhs: torch.Tensor,
    *_extra: Any,
    out_dtype: Any = None,
    a_trans: Any = False,
    b_trans: Any = False,
    _rtype: ResultType | None = None,
    **_kw: Any,
) -> torch.Tensor:
    """``lhs @ rhs`` (optionally transposed), accumulated in FP32, cast to ``out_dtype``."""
    a, b = _transposed(lhs, rhs, a_trans, b_trans)
    return _mm_out(_mm(a, b), _rtype, out_dtype if isinstance(out_dtype, torch.dtype) else None)


@register("tensor.matmul_acc")
def tensor_matmul_acc(
    acc: torch.Tensor,
    lhs: torch.Tensor,
    rhs: torch.Tensor,
    init_cond: Any = None,
    *_extra: Any,
    out_dtype: Any = None,
    a_trans: Any = False,
    b_trans: Any = False,
    _rtype: ResultType | None = None,
    **_kw: Any,
) -> torch.Tensor:
    """``acc + lhs @ rhs`` (overwrite when ``init_cond`` holds). DIVERGENCE: init_cond honoured."""
    a, b = _transposed(lhs, rhs, a_trans, b_trans)
    prod = _mm(a, b)
    out = prod if _init(init_cond) else acc.to(prod.dtype) + prod
    explicit = out_dtype if isinstance(out_dtype, torch.dtype) else None
    if explicit is None and result_dtype(_rtype) is None:
        explicit = acc.dtype
    return _mm_out(out, _rtype, explicit)
