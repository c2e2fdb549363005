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


def _fp32_to_bf16_half_away(x: torch.Tensor) -> torch.Tensor:
    """FP32 -> BF16, nearest with ties away from zero (``mode='round'``, the DSL's default cast), in
    integer arithmetic on the bits: a BF16 is the top half of an FP32, and the sign sits apart from
    the magnitude, so adding half of the dropped part (0x8000) to the magnitude and keeping the top
    half rounds it to nearest with ties up in magnitude (away from zero); a carry moves into the
    exponent as rounding up to the next binade does, and the largest finite value plus half an ulp
    becomes infinity (IEEE overflow). A NaN keeps torch's BF16 NaN (adding to its payload could make it
    an infinity). Every FP32 bit pattern gives what the two-neighbour path (:func:`_two_neighbours`) gives
    (tests/unit/test_kernels_cast_cmp.py compares them for every BF16 value and each kind of dropped
    half); this is ~5 small kernels and no search for ties, where that path costs ~25 on float64 whenever
    a tile holds one tie (2 of the 40 casts a run of qwen3's last dump)."""
    bits = x.view(torch.int32)  # the same element size: a view of any layout
    out = torch.bitwise_right_shift(bits + 0x8000, 16).to(torch.int16).view(torch.bfloat16)
    nan = torch.isnan(x)
    if bool(nan.any()):
        out = torch.where(nan, x.to(torch.bfloat16), out)
    return out


def _to_half(x: torch.Tensor, dtype: torch.dtype, mode: str) -> torch.Tensor:
    """Narrow to FP16/BF16 with an exact rounding mode."""
    if mode == "round" and x.dtype == torch.float32 and dtype == torch.bfloat16:
        return _fp32_to_bf16_half_away(x)
    return _two_neighbours(x, dtype, mode)


def _two_neighbours(x: torch.Tensor, dtype: torch.dtype, mode: str) -> torch.Tensor:
    """Narrow to FP16/BF16 by ``mode``: torch rounds to nearest-even; for the other modes pick
    between the two neighbouring representable values around the exact (float64) input."""
    y = x.to(dtype)
    if mode in ("rint", "none"):
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
