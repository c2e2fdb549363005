"""Cast rounding modes (exact, on ties) and packed compare masks with select."""

from __future__ import annotations

import math

import pytest
import torch

from pypto_lsp.exec.kernels import KERNELS, ResultType, pack_mask, unpack_mask
from pypto_lsp.exec.kernels.cast import _fp32_to_bf16_half_away, _two_neighbours
from pypto_lsp.exec.values import get_valid

K = KERNELS

# ---------------------------------------------------------------------- float -> int

TIES = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6, 3.0, 0.49999997])
EXPECTED_INT = {
    "round": [1, 2, 3, -1, -2, -3, 2, -3, 3, 0],  # half away from zero (the DSL default)
    "rint": [0, 2, 2, 0, -2, -2, 2, -3, 3, 0],  # half to even
    "floor": [0, 1, 2, -1, -2, -3, 2, -3, 3, 0],
    "ceil": [1, 2, 3, 0, -1, -2, 3, -2, 3, 1],
    "trunc": [0, 1, 2, 0, -1, -2, 2, -2, 3, 0],
    "odd": [1, 1, 3, -1, -1, -3, 3, -3, 3, 1],
}


@pytest.mark.parametrize("mode", sorted(EXPECTED_INT))
def test_cast_float_to_int_modes(mode: str) -> None:
    out = K["tile.cast"](TIES, target_type=torch.int32, mode=mode)
    assert out.dtype == torch.int32
    assert out.tolist() == EXPECTED_INT[mode]


def test_cast_default_mode_is_round_and_int_mode_codes() -> None:
    assert K["tile.cast"](TIES, target_type=torch.int32).tolist() == EXPECTED_INT["round"]
    assert K["tensor.cast"](TIES, target_type=torch.int32, mode=1).tolist() == EXPECTED_INT["rint"]
    assert K["tile.cast"](TIES, target_type=torch.int32, mode=5).tolist() == EXPECTED_INT["trunc"]


def test_cast_float_to_int_saturates_and_nan_is_zero() -> None:
    x = torch.tensor([1e20, -1e20, math.nan, math.inf])
    out = K["tile.cast"](x, target_type=torch.int32, mode="round")
    assert out.tolist() == [2**31 - 1, -(2**31), 0, 2**31 - 1]
    assert K["tile.cast"](torch.tensor([300.0, -5.0]), target_type=torch.uint8).tolist() == [255, 0]


# ---------------------------------------------------------------------- float narrowing


def _grid(dt: torch.dtype) -> torch.Tensor:
    vals = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dt).double()
    return torch.unique(vals[torch.isfinite(vals)])


def _lsb_odd(v: torch.Tensor, dt: torch.dtype) -> torch.Tensor:
    return (v.to(dt).view(torch.int16) & 1) == 1


def _reference_round(x: torch.Tensor, dt: torch.dtype, mode: str) -> torch.Tensor:
    """Brute force over every finite value of ``dt``: the two neighbours, then the mode's pick."""
    grid = _grid(dt)
    xd = x.double()
    idx = torch.searchsorted(grid, xd).clamp(1, grid.numel() - 1)
    hi = grid[idx]
    lo = grid[idx - 1]
    exact = hi == xd
    lo = torch.where(exact, hi, lo)
    d_lo, d_hi = xd - lo, hi - xd
    tie = (d_lo == d_hi) & ~exact
    nearest = torch.where(d_lo < d_hi, lo, hi)
    if mode == "round":
        res = torch.where(tie, torch.where(xd > 0, hi, lo), nearest)
    elif mode == "rint":
        res = torch.where(tie, torch.where(_lsb_odd(lo, dt), hi, lo), nearest)
    elif mode == "floor":
        res = lo
    elif mode == "ceil":
        res = hi
    elif mode == "trunc":
        res = torch.where(xd > 0, lo, hi)
    elif mode == "odd":
        res = torch.where(_lsb_odd(lo, dt), lo, hi)
    else:
        raise ValueError(mode)
    return torch.where(exact, xd, res).to(dt)


def _samples(dt: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    grid = _grid(dt)
    pick = grid[torch.randint(0, grid.numel() - 1, (2000,), generator=g)]
    nxt = grid[torch.searchsorted(grid, pick) + 1]
    ties = ((pick + nxt) / 2).float()  # exact midpoints: fp16/bf16 neighbours halve exactly in fp32
    span = 60000.0 if dt == torch.float16 else 1e30
    rand = (torch.rand(2000, generator=g, dtype=torch.float64) * 2 - 1) * span
    small = (torch.rand(500, generator=g, dtype=torch.float64) * 2 - 1) * 1e-6
    x = torch.cat([ties, rand.float(), small.float(), pick.float()])
    return x[(x != 0) & (x.double().abs() <= grid.max())]


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("mode", ["round", "rint", "floor", "ceil", "trunc", "odd"])
def test_cast_fp32_to_16bit_float_modes(dt: torch.dtype, mode: str) -> None:
    x = _samples(dt)
    out = K["tile.cast"](x, target_type=dt, mode=mode)
    assert out.dtype == dt
    ref = _reference_round(x, dt, mode)
    bad = (out.double() != ref.double()).nonzero()  # by value: the brute-force grid has one zero
    if mode in ("trunc", "ceil"):
        # a tiny negative rounds toward zero to -0.0 (IEEE), keeping the sign
        tiny_neg = (x < 0) & (out.double() == 0)
        assert bool(torch.signbit(out[tiny_neg].float()).all())
    assert bad.numel() == 0, (mode, x[bad[:5, 0]].tolist(), out[bad[:5, 0]].tolist(), ref[bad[:5, 0]].tolist())


def test_fp32_to_bf16_round_in_bits_is_the_two_neighbour_pick_for_every_bf16_value() -> None:
    """The default cast (FP32 -> BF16, ties away from zero) rounds in integer arithmetic on the bits;
    the two-neighbour path on float64 is the reference. Every BF16 value as the kept half (both signs,
    zeros, subnormals, the largest finite, infinities, NaNs) with each kind of dropped half: none,
    the smallest, just below half, exactly half (a tie), just above, the largest, and random ones."""
    high = torch.arange(-32768, 32768, dtype=torch.int32) << 16
    lows = [0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF]
    g = torch.Generator().manual_seed(3)
    parts = [high | low for low in lows] + [high | torch.randint(0, 0x10000, high.shape, generator=g, dtype=torch.int32)]
    x = torch.cat(parts).view(torch.float32)
    fast = _fp32_to_bf16_half_away(x)
    ref = _two_neighbours(x, torch.bfloat16, "round")
    nan = torch.isnan(x)
    assert torch.equal(torch.isnan(fast.float()), nan)
    same = fast.view(torch.int16) == ref.view(torch.int16)
    assert bool(same[~nan].all()), x[~nan & ~same][:5].tolist()
    assert torch.equal(fast[nan].view(torch.int16), x[nan].to(torch.bfloat16).view(torch.int16))  # torch's NaN
    # a strided view (a tile's window of a wider buffer) rounds the same as its copy
    wide = x[: 64 * 512].view(64, 512)
    assert torch.equal(
        _fp32_to_bf16_half_away(wide[:, 128:192]).view(torch.int16), fast[: 64 * 512].view(64, 512)[:, 128:192].view(torch.int16)
    )


def test_cast_bf16_ties_differ_between_round_and_rint() -> None:
    x = torch.tensor([1.0 + 2**-8, -(1.0 + 2**-8), 1.0 + 3 * 2**-8])
    assert K["tile.cast"](x, target_type=torch.bfloat16, mode="round").float().tolist() == [1.0078125, -1.0078125, 1.015625]
    assert K["tile.cast"](x, target_type=torch.bfloat16, mode="rint").float().tolist() == [1.0, -1.0, 1.015625]
    assert K["tile.cast"](x, target_type=torch.bfloat16).float().tolist() == [1.0078125, -1.0078125, 1.015625]


def test_cast_special_values_and_widening() -> None:
    x = torch.tensor([math.nan, math.inf, -math.inf, 0.0, 1e39])
    for mode in ("round", "trunc", "floor"):
        out = K["tile.cast"](x, target_type=torch.bfloat16, mode=mode).float()
        assert math.isnan(out[0]) and out[1] == math.inf and out[2] == -math.inf and out[3] == 0.0
    assert K["tile.cast"](torch.tensor([70000.0]), target_type=torch.float16, mode="trunc").item() == 65504.0
    h = torch.randn(8).to(torch.float16)
    assert torch.equal(K["tile.cast"](h, target_type=torch.float32), h.float())
    i = torch.tensor([3, -7], dtype=torch.int32)
    assert K["tile.cast"](i, target_type=torch.float32).tolist() == [3.0, -7.0]
    assert K["tile.cast"](i, target_type=torch.int8).dtype == torch.int8


# ---------------------------------------------------------------------- packed compare masks

CMP_REF = {0: torch.eq, 1: torch.ne, 2: torch.lt, 3: torch.le, 4: torch.gt, 5: torch.ge}


def test_pack_mask_layout_lsb_first() -> None:
    bits = torch.zeros(1, 16, dtype=torch.bool)
    bits[0, 0] = bits[0, 3] = bits[0, 9] = True
    p = pack_mask(bits)
    assert p.shape == (1, 32) and p.dtype == torch.uint8
    assert p[0, 0] == 0b00001001 and p[0, 1] == 0b00000010 and int(p[0, 2:].sum()) == 0
    assert torch.equal(unpack_mask(p, 16), bits)


@pytest.mark.parametrize("cmp_type", range(6))
def test_tile_cmp_packed_and_sel(cmp_type: int) -> None:
    torch.manual_seed(cmp_type)
    a = torch.randint(-2, 3, (16, 64)).float()
    b = torch.randint(-2, 3, (16, 64)).float()
    mask = K["tile.cmp"](a, b, cmp_type=cmp_type, _rtype=ResultType((16, 32), torch.uint8, (16, 8), None, "Vec"))
    assert mask.shape == (16, 32) and mask.dtype == torch.uint8
    assert get_valid(mask) == (16, 8)
    expect = CMP_REF[cmp_type](a, b)
    assert torch.equal(unpack_mask(mask, 64), expect)
    one, zero = torch.ones(16, 64), torch.zeros(16, 64)
    out = K["tile.sel"](mask, one, zero, torch.zeros(16, 64))
    assert torch.equal(out, expect.float())


@pytest.mark.parametrize("cmp_type", range(6))
def test_tile_cmps_packed(cmp_type: int) -> None:
    a = torch.randint(-2, 3, (4, 20)).float()
    mask = K["tile.cmps"](a, 1.0, cmp_type=cmp_type)
    assert mask.shape == (4, 32)  # ceil(20 / 8) = 3 bytes, rounded up to 32
    assert torch.equal(unpack_mask(mask, 20), CMP_REF[cmp_type](a, 1.0))


def test_cmps_n32_and_default_cmp_type() -> None:
    a = torch.tensor([[1.0, 2.0, 1.0] + [0.0] * 29])
    mask = K["tile.cmps"](a, 1.0)  # missing cmp_type means EQ
    assert mask.shape == (1, 32) and mask.dtype == torch.uint8
    assert mask[0, 0] == 0b101


def test_sels_with_packed_mask() -> None:
    x = torch.randn(16, 64)
    mask = K["tile.cmps"](x, 0.0, cmp_type=4)
    out = K["tile.sels"](mask, x, torch.zeros(16, 64), -7.0)
    assert torch.equal(out, torch.where(x > 0, x, torch.tensor(-7.0)))


def test_sel_accepts_bool_and_01_masks() -> None:
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    c = x > y
    assert torch.equal(K["tile.sel"](c, x, y), torch.maximum(x, y))
    tc = K["tensor.cmp"](x, y, cmp_type=4)
    assert tc.dtype == torch.float32 and set(tc.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(K["tile.sel"](tc, x, y), torch.maximum(x, y))


def test_sel_with_nan_data() -> None:
    x = torch.tensor([[math.nan, 1.0]])
    mask = K["tile.cmps"](x, 0.0, cmp_type=4)  # NaN > 0 is False
    out = K["tile.sel"](mask, x, torch.zeros_like(x))
    assert out.tolist() == [[0.0, 1.0]]
