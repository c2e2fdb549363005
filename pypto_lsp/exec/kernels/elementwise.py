"""Element-wise ops: binary, scalar, unary, row/col expansions, part ops."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..values import get_valid, valid_box, with_valid
from .base import (
    KERNELS,
    as_scalar,
    as_tensor_like,
    is_float,
    register,
)

# ---------------------------------------------------------------------- element-wise


def _by_zero(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` of integers, an integer divisor of 0 said in those words (torch raises a RuntimeError
    whose whole message is ``ZeroDivisionError``)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RuntimeError as exc:
            if str(exc).strip() != "ZeroDivisionError":
                raise
            raise ZeroDivisionError("integer division by zero: a divisor holds 0 (the device's result is undefined)") from None

    return call


def _int_div(a: Any, b: Any) -> torch.Tensor:
    return _DIV(a, b, rounding_mode="trunc")


_DIV = _by_zero(torch.div)  # built once: _int_div runs for every integer division


def _both_int(a: Any, b: Any) -> bool:
    def is_int(v: Any) -> bool:
        if isinstance(v, torch.Tensor):
            return not v.dtype.is_floating_point and v.dtype != torch.bool
        return isinstance(v, int) and not isinstance(v, bool)

    return is_int(a) and is_int(b)


def _binary(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def kernel(lhs: Any, rhs: Any, *_extra: Any, **_kw: Any) -> Any:
        return fn(lhs, as_scalar(rhs) if not isinstance(rhs, torch.Tensor) else rhs)

    return kernel


def _div(a: Any, b: Any) -> Any:
    # Integer division truncates (C semantics); torch's "/" would give floats.
    return _int_div(a, b) if _both_int(a, b) else torch.div(a, b)


def _maximum(a: Any, b: Any) -> torch.Tensor:
    # DIVERGENCE: the reference calls torch.maximum(tensor, float), a TypeError for maximums.
    return torch.maximum(a, as_tensor_like(b, a))


def _minimum(a: Any, b: Any) -> torch.Tensor:
    return torch.minimum(a, as_tensor_like(b, a))


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": torch.add,
    "adds": torch.add,
    "sub": torch.sub,
    "subs": torch.sub,
    "mul": torch.mul,
    "muls": torch.mul,
    "div": _div,
    "divs": _div,
    "maximum": _maximum,
    "maximums": _maximum,
    "minimum": _minimum,
    "minimums": _minimum,
    "fmod": _by_zero(torch.fmod),
    "fmods": _by_zero(torch.fmod),
    # rem: floor-mod, sign of the divisor (as the reference; the hardware definition is unverified).
    "rem": _by_zero(torch.remainder),
    "rems": _by_zero(torch.remainder),
    "and": torch.bitwise_and,
    "ands": torch.bitwise_and,
    "or": torch.bitwise_or,
    "ors": torch.bitwise_or,
    "xor": torch.bitwise_xor,
    "xors": torch.bitwise_xor,
    "shl": torch.bitwise_left_shift,
    "shls": torch.bitwise_left_shift,
    "shr": torch.bitwise_right_shift,
    "shrs": torch.bitwise_right_shift,
    "row_expand_add": torch.add,
    "row_expand_sub": torch.sub,
    "row_expand_mul": torch.mul,
    "row_expand_div": _div,
    "row_expand_max": _maximum,
    "row_expand_min": _minimum,
    "col_expand_add": torch.add,  # DIVERGENCE: missing in the reference
    "col_expand_sub": torch.sub,
    "col_expand_mul": torch.mul,
    "col_expand_div": _div,
    "col_expand_max": _maximum,
    "col_expand_min": _minimum,
}


def _as_row_vec(vec: torch.Tensor, tile: torch.Tensor) -> torch.Tensor:
    """A per-row vector as ``[..., M, 1]`` (tolerates a ``[1, M]`` / ``[M]`` spelling)."""
    if tile.dim() >= 2 and vec.shape[-1] != 1 and vec.numel() == tile.shape[-2]:
        return vec.reshape(tile.shape[-2], 1)
    return vec


def _as_col_vec(vec: torch.Tensor, tile: torch.Tensor) -> torch.Tensor:
    """A per-column vector as ``[..., 1, N]`` (tolerates ``[N, 1]`` / ``[N]``)."""
    if tile.dim() >= 2 and (vec.dim() < 2 or vec.shape[-2] != 1) and vec.numel() == tile.shape[-1]:
        return vec.reshape(1, tile.shape[-1])
    return vec


def _register_binary() -> None:
    for name, fn in _BINARY.items():
        if name.startswith("row_expand_"):
            KERNELS[f"tile.{name}"] = KERNELS[f"tensor.{name}"] = _expand_kernel(fn, _as_row_vec)
        elif name.startswith("col_expand_"):
            KERNELS[f"tile.{name}"] = KERNELS[f"tensor.{name}"] = _expand_kernel(fn, _as_col_vec)
        else:
            KERNELS[f"tile.{name}"] = KERNELS[f"tensor.{name}"] = _binary(fn)


def _expand_kernel(fn: Callable[[Any, Any], Any], shape_vec: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Callable[..., Any]:
    def kernel(tile: torch.Tensor, vec: Any, *_extra: Any, **_kw: Any) -> Any:
        if isinstance(vec, torch.Tensor):
            vec = shape_vec(vec, tile)
        return fn(tile, vec)

    return kernel


_register_binary()


@register("row_expand_expdif")
def row_expand_expdif(tile: torch.Tensor, vec: torch.Tensor, *_extra: Any, **_kw: Any) -> torch.Tensor:
    return torch.exp(tile - _as_row_vec(vec, tile))


@register("col_expand_expdif")
def col_expand_expdif(tile: torch.Tensor, vec: torch.Tensor, *_extra: Any, **_kw: Any) -> torch.Tensor:
    return torch.exp(tile - _as_col_vec(vec, tile))


@register("row_expand")
def row_expand(target: torch.Tensor, vec: torch.Tensor, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """Broadcast a ``[M, 1]`` vector to the target's shape (dtype: promotion of both)."""
    v = _as_row_vec(vec, target)
    return v.expand_as(target).to(torch.promote_types(target.dtype, vec.dtype)).clone()


@register("col_expand")
def col_expand(target: torch.Tensor, vec: torch.Tensor, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """Broadcast a ``[1, N]`` vector to the target's shape (dtype: promotion of both)."""
    v = _as_col_vec(vec, target)
    return v.expand_as(target).to(torch.promote_types(target.dtype, vec.dtype)).clone()


@register("expands")
def expands(target: torch.Tensor, scalar: Any, *_extra: Any, **_kw: Any) -> torch.Tensor:
    return torch.full_like(target, as_scalar(scalar))


def _part(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """Combine two partially valid tiles: the op where both are valid, the valid one where only one is.

    DIVERGENCE: the reference applies the plain op everywhere (valid regions ignored).
    """

    def kernel(src0: torch.Tensor, src1: torch.Tensor, *_extra: Any, **_kw: Any) -> torch.Tensor:
        v0, v1 = get_valid(src0), get_valid(src1)
        both = fn(src0, src1)
        if (v0 is None and v1 is None) or src0.shape != src1.shape:
            return both
        m0 = _box_mask(src0.shape, valid_box(src0))
        m1 = _box_mask(src1.shape, valid_box(src1))
        out = torch.where(
            m0 & m1, both, torch.where(m0, src0.to(both.dtype), torch.where(m1, src1.to(both.dtype), torch.zeros((), dtype=both.dtype)))
        )
        union = tuple(max(a, b) for a, b in zip(valid_box(src0), valid_box(src1), strict=True))
        return with_valid(out, union)

    return kernel


def _box_mask(shape: Sequence[int], box: Sequence[int]) -> torch.Tensor:
    m = torch.zeros(tuple(shape), dtype=torch.bool)
    m[tuple(slice(0, n) for n in box)] = True
    return m


for _n, _f in (("part_add", torch.add), ("part_mul", torch.mul), ("part_max", torch.maximum), ("part_min", torch.minimum)):
    KERNELS[f"tile.{_n}"] = KERNELS[f"tensor.{_n}"] = _part(_f)


@register("addc")
def addc(a: Any, b: Any, c: Any, *_extra: Any, **_kw: Any) -> Any:
    return a + as_scalar(b) + as_scalar(c)


@register("subc")
def subc(a: Any, b: Any, c: Any, *_extra: Any, **_kw: Any) -> Any:
    return a - as_scalar(b) - as_scalar(c)


KERNELS["tile.addsc"] = KERNELS["tensor.addsc"] = addc
KERNELS["tile.subsc"] = KERNELS["tensor.subsc"] = subc


@register("prelu")
def prelu(x: torch.Tensor, slope: Any, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """``x > 0 ? x : x * slope`` (slope a tile or a scalar)."""
    return torch.where(x > 0, x, x * as_scalar(slope))


KERNELS["tile.lrelu"] = KERNELS["tensor.lrelu"] = prelu


def _unary(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., Any]:
    def kernel(x: torch.Tensor, *_extra: Any, **_kw: Any) -> torch.Tensor:
        return fn(x)

    return kernel


def _float_op(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    def op(x: torch.Tensor) -> torch.Tensor:
        return fn(x if is_float(x) else x.float())

    return op


_UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "neg": torch.neg,
    "abs": torch.abs,
    "exp": _float_op(torch.exp),
    "log": _float_op(torch.log),
    "sqrt": _float_op(torch.sqrt),
    "rsqrt": _float_op(torch.rsqrt),
    "recip": _float_op(torch.reciprocal),
    "relu": torch.relu,
    "not": torch.bitwise_not,
    "sin": _float_op(torch.sin),
    "cos": _float_op(torch.cos),
}
for _un, _uf in _UNARY.items():
    KERNELS[f"tile.{_un}"] = KERNELS[f"tensor.{_un}"] = _unary(_uf)
