"""Casts with their rounding modes."""

from __future__ import annotations

from typing import Any

import torch

from .base import (
    enum_name,
    register,
)

# ---------------------------------------------------------------------- cast


_CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")
_FLOAT16ISH = (torch.float16, torch.bfloat16)


def _cast_mode(mode: Any) -> str:
    if mode is None:
        return "round"  # the DSL's default
    if isinstance(mode, int) and not isinstance(mode, bool):
        return _CAST_MODES[mode]
    m = enum_name(mode) or "round"
    if m.isdigit():
        return _CAST_MODES[int(m)]
    return m


def _round_float(x: torch.Tensor, mode: str) -> torch.Tensor:
    """Round a float64 tensor to integral values by ``mode``."""
    if mode in ("rint", "none"):
        return torch.round(x)  # half to even
    if mode == "round":
        return torch.sign(x) * torch.floor(torch.abs(x) + 0.5)  # half away from zero (exact in float64)
    if mode == "floor":
        return torch.floor(x)
    if mode == "ceil":
        return torch.ceil(x)
    if mode == "trunc":
        return torch.trunc(x)
    if mode == "odd":
        t = torch.trunc(x)
        bump = (t != x) & (torch.remainder(t, 2) == 0)
        return t + torch.where(bump, torch.sign(x), torch.zeros_like(x))
    raise ValueError(f"cast: unknown rounding mode {mode!r}")


def _to_int(x: torch.Tensor, dtype: torch.dtype, mode: str) -> torch.Tensor:
    xd = _round_float(x.double(), mode)
    info = torch.iinfo(dtype)
    hi = float(info.max) if info.bits < 64 else 9.2233720368547748e18  # largest double below 2**63
    # Saturate (the cube/vector converters saturate; torch's out-of-range conversion is undefined); NaN -> 0.
    xd = torch.nan_to_num(xd, nan=0.0).clamp(float(info.min), hi)
    return xd.to(dtype)


def _to_half(x: torch.Tensor, dtype: torch.dtype, mode: str) -> torch.Tensor:
    """Narrow to FP16/BF16 with an exact rounding mode.

    torch rounds to nearest-even; for the other modes pick between the two
    neighbouring representable values around the exact (float64) input.
    """
    y = x.to(dtype)
    if mode in ("rint", "none"):
        return y
    if mode == "round" and x.dtype == torch.float32 and dtype == torch.bfloat16:
        # FP32 -> BF16 drops the low 16 bits: only a value whose low half is exactly 0x8000
        # is a tie, and away from ties round-half-away equals torch's nearest-even
        if not bool(((x.view(torch.int32) & 0xFFFF) == 0x8000).any()):
            return y
    xd = x.double()
    yd = y.double()
    exact = (yd == xd) | torch.isnan(xd)
    bits = y.view(torch.int16).to(torch.int32) & 0xFFFF
    mag = bits & 0x7FFF
    sign = bits & 0x8000
    # The neighbour one ulp from y toward x.
    toward_zero = yd.abs() > xd.abs()
    other_bits = torch.where(toward_zero, mag - 1, mag + 1).clamp(0, 0x7FFF) | sign
    other_bits = torch.where(other_bits >= 0x8000, other_bits - 0x10000, other_bits)
    other = other_bits.to(torch.int16).view(dtype)
    od = other.double()
    y_low = yd <= od
    lo = torch.where(y_low, y, other)
    hi = torch.where(y_low, other, y)
    if mode == "round":
        lod = torch.minimum(yd, od)
        hid = torch.maximum(yd, od)
        tie = (xd - lod) == (hid - xd)
        res = torch.where(tie, torch.where(xd > 0, hi, lo), y)
    elif mode == "floor":
        res = lo
    elif mode == "ceil":
        res = hi
    elif mode == "trunc":
        res = torch.where(xd > 0, lo, hi)
    elif mode == "odd":
        res = torch.where((bits & 1) == 1, y, other)
    else:
        raise ValueError(f"cast: unknown rounding mode {mode!r}")
    return torch.where(exact, y, res)


@register("cast")
def cast(x: torch.Tensor, *_extra: Any, target_type: torch.dtype | None = None, mode: Any = None, **_kw: Any) -> torch.Tensor:
    """Dtype conversion honouring the rounding ``mode`` (default ``round``: nearest, ties away from zero).

    DIVERGENCE: the reference ignores ``mode`` (torch: nearest-even for
    float->float, truncation for float->int). Float->int saturates; NaN -> 0.
    Int->float and widening casts are exact or nearest-even (mode unused).
    """
    dt = target_type if isinstance(target_type, torch.dtype) else torch.float32
    m = _cast_mode(mode)
    if dt == x.dtype:
        return x.clone()
    if dt == torch.bool:
        return x != 0
    if not dt.is_floating_point:
        if x.dtype.is_floating_point:
            return _to_int(x, dt, m)
        return x.to(dt)
    if dt in _FLOAT16ISH:
        return _to_half(x, dt, m)
    return x.to(dt)
