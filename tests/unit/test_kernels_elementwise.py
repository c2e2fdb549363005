"""Element-wise, broadcast-expand and reduction kernels against plain torch."""

from __future__ import annotations

import math

import pytest
import torch

from pypto_lsp.exec.kernels import KERNELS
from pypto_lsp.exec.values import get_valid, with_valid

torch.manual_seed(0)
A = torch.randn(16, 24)
B = torch.randn(16, 24).abs() + 0.5
IA = torch.randint(-50, 50, (8, 12), dtype=torch.int32)
IB = torch.randint(1, 7, (8, 12), dtype=torch.int32)


@pytest.mark.parametrize("prefix", ["tile", "tensor"])
@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("add", torch.add),
        ("sub", torch.sub),
        ("mul", torch.mul),
        ("div", torch.div),
        ("maximum", torch.maximum),
        ("minimum", torch.minimum),
        ("fmod", torch.fmod),
        ("rem", torch.remainder),
        ("part_add", torch.add),
        ("part_mul", torch.mul),
        ("part_max", torch.maximum),
        ("part_min", torch.minimum),
    ],
)
def test_binary_float(prefix: str, op: str, ref) -> None:
    out = KERNELS[f"{prefix}.{op}"](A, B)
    assert torch.equal(out, ref(A, B))


@pytest.mark.parametrize("prefix", ["tile", "tensor"])
@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("adds", lambda a, s: a + s),
        ("subs", lambda a, s: a - s),
        ("muls", lambda a, s: a * s),
        ("divs", lambda a, s: a / s),
        ("maximums", lambda a, s: torch.clamp(a, min=s)),
        ("minimums", lambda a, s: torch.clamp(a, max=s)),
        ("fmods", torch.fmod),
        ("rems", torch.remainder),
    ],
)
def test_scalar_float(prefix: str, op: str, ref) -> None:
    # maximums/minimums with a Python float: a TypeError in the reference.
    out = KERNELS[f"{prefix}.{op}"](A, 0.25)
    assert out.dtype == torch.float32
    assert torch.allclose(out, ref(A, 0.25))


def test_tile_rem_ignores_tmp_and_uses_floor_mod() -> None:
    a = torch.tensor([[-7.0, 7.0, -7.5]])
    tmp = torch.zeros_like(a)
    assert KERNELS["tile.rem"](a, torch.full_like(a, 3.0), tmp).tolist() == [[2.0, 1.0, 1.5]]
    assert KERNELS["tile.rems"](a, 3.0, tmp).tolist() == [[2.0, 1.0, 1.5]]
    assert KERNELS["tile.fmods"](a, 3.0).tolist() == [[-1.0, 1.0, -1.5]]


def test_integer_division_truncates_and_keeps_dtype() -> None:
    a = torch.tensor([[-7, 7, 9]], dtype=torch.int32)
    out = KERNELS["tile.divs"](a, 2)
    assert out.dtype == torch.int32
    assert out.tolist() == [[-3, 3, 4]]
    out2 = KERNELS["tile.div"](a, torch.tensor([[2, -2, 4]], dtype=torch.int32))
    assert out2.tolist() == [[-3, -3, 2]]


@pytest.mark.parametrize("prefix", ["tile", "tensor"])
def test_bitwise_and_shifts(prefix: str) -> None:
    k = KERNELS
    tmp = torch.zeros_like(IA)
    assert torch.equal(k[f"{prefix}.and"](IA, IB), IA & IB)
    assert torch.equal(k[f"{prefix}.or"](IA, IB), IA | IB)
    assert torch.equal(k[f"{prefix}.xor"](IA, IB, tmp), IA ^ IB)  # tile.xor carries a tmp
    assert torch.equal(k[f"{prefix}.not"](IA), ~IA)
    assert torch.equal(k[f"{prefix}.ands"](IA, 6), IA & 6)
    assert torch.equal(k[f"{prefix}.ors"](IA, 6), IA | 6)
    assert torch.equal(k[f"{prefix}.xors"](IA, 6, tmp), IA ^ 6)
    assert torch.equal(k[f"{prefix}.shl"](IA, IB), IA << IB)
    assert torch.equal(k[f"{prefix}.shr"](IA, IB), IA >> IB)
    assert torch.equal(k[f"{prefix}.shls"](IA, 2), IA << 2)
    assert torch.equal(k[f"{prefix}.shrs"](IA, 2), IA >> 2)


@pytest.mark.parametrize("prefix", ["tile", "tensor"])
@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("exp", torch.exp),
        ("log", torch.log),
        ("sqrt", torch.sqrt),
        ("rsqrt", torch.rsqrt),
        ("recip", torch.reciprocal),
        ("abs", torch.abs),
        ("neg", torch.neg),
        ("relu", torch.relu),
        ("sin", torch.sin),
        ("cos", torch.cos),
    ],
)
def test_unary(prefix: str, op: str, ref) -> None:
    x = B if op in ("log", "sqrt", "rsqrt") else A
    assert torch.allclose(KERNELS[f"{prefix}.{op}"](x), ref(x))


def test_rsqrt_with_tmp_and_high_precision_kwargs() -> None:
    tmp = torch.zeros_like(B)
    assert torch.allclose(KERNELS["tile.rsqrt"](B, tmp), torch.rsqrt(B))
    assert torch.allclose(KERNELS["tile.recip"](B, high_precision=True), 1 / B)


def test_ternary_and_leaky_ops() -> None:
    c = torch.randn(16, 24)
    assert torch.allclose(KERNELS["tile.addc"](A, B, c), A + B + c)
    assert torch.allclose(KERNELS["tile.subc"](A, B, c), A - B - c)
    assert torch.allclose(KERNELS["tile.addsc"](A, 2.0, c), A + 2.0 + c)
    assert torch.allclose(KERNELS["tile.subsc"](A, 2.0, c), A - 2.0 - c)
    assert torch.allclose(KERNELS["tile.lrelu"](A, 0.1), torch.where(A > 0, A, 0.1 * A))
    slope = torch.full_like(A, 0.3)
    assert torch.allclose(KERNELS["tile.prelu"](A, slope, torch.zeros_like(A)), torch.where(A > 0, A, 0.3 * A))


M, N = 8, 12
T = torch.randn(M, N)
ROW = torch.randn(M, 1)
COL = torch.randn(1, N)


@pytest.mark.parametrize("prefix", ["tile", "tensor"])
@pytest.mark.parametrize(
    ("op", "vec", "ref"),
    [
        ("row_expand_add", ROW, lambda t, v: t + v),
        ("row_expand_sub", ROW, lambda t, v: t - v),
        ("row_expand_mul", ROW, lambda t, v: t * v),
        ("row_expand_div", ROW, lambda t, v: t / v),
        ("row_expand_max", ROW, torch.maximum),
        ("row_expand_min", ROW, torch.minimum),
        ("row_expand_expdif", ROW, lambda t, v: torch.exp(t - v)),
        ("col_expand_add", COL, lambda t, v: t + v),  # no handler in the reference
        ("col_expand_sub", COL, lambda t, v: t - v),
        ("col_expand_mul", COL, lambda t, v: t * v),
        ("col_expand_div", COL, lambda t, v: t / v),
        ("col_expand_max", COL, torch.maximum),
        ("col_expand_min", COL, torch.minimum),
        ("col_expand_expdif", COL, lambda t, v: torch.exp(t - v)),
    ],
)
def test_expand_ops(prefix: str, op: str, vec: torch.Tensor, ref) -> None:
    out = KERNELS[f"{prefix}.{op}"](T, vec, torch.zeros_like(T))  # tile.row_expand_add has a tmp
    assert out.shape == (M, N)
    assert torch.allclose(out, ref(T, vec))


def test_expand_tolerates_transposed_vector_spelling() -> None:
    out = KERNELS["tile.row_expand_mul"](T, ROW.reshape(1, M))
    assert torch.allclose(out, T * ROW)
    out = KERNELS["tile.col_expand_mul"](T, COL.reshape(N, 1))
    assert torch.allclose(out, T * COL)


def test_row_col_expand_and_expands() -> None:
    r = KERNELS["tile.row_expand"](T, ROW)
    assert r.shape == (M, N) and torch.equal(r, ROW.expand(M, N))
    r[0, 0] = 123.0  # a materialised copy, not a zero-stride view of ROW
    assert ROW[0, 0] != 123.0
    c16 = COL.to(torch.float16)
    c = KERNELS["tile.col_expand"](T, c16)
    assert c.dtype == torch.float32 and torch.equal(c, c16.float().expand(M, N))
    e = KERNELS["tile.expands"](T, 3.25)
    assert e.shape == (M, N) and bool((e == 3.25).all())


def test_part_ops_combine_partial_valid_regions() -> None:
    a = with_valid(torch.full((4, 4), 2.0), (2, 4))
    b = with_valid(torch.full((4, 4), 5.0), (4, 2))
    out = KERNELS["tile.part_add"](a, b)
    assert out[0, 0] == 7.0  # both valid
    assert out[0, 3] == 2.0  # only a valid
    assert out[3, 0] == 5.0  # only b valid
    assert out[3, 3] == 0.0  # neither
    assert get_valid(out) is None  # union (4, 4) == shape
    out = KERNELS["tile.part_max"](a, b)
    assert out[0, 0] == 5.0 and out[0, 3] == 2.0


@pytest.mark.parametrize("prefix", ["tile", "tensor"])
@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("row_sum", lambda x: x.sum(-1, keepdim=True)),
        ("row_max", lambda x: x.amax(-1, keepdim=True)),
        ("row_min", lambda x: x.amin(-1, keepdim=True)),
        ("row_prod", lambda x: x.prod(-1, keepdim=True)),
        ("col_sum", lambda x: x.sum(-2, keepdim=True)),
        ("col_max", lambda x: x.amax(-2, keepdim=True)),
        ("col_min", lambda x: x.amin(-2, keepdim=True)),
        ("col_prod", lambda x: x.prod(-2, keepdim=True)),
    ],
)
def test_reductions(prefix: str, op: str, ref) -> None:
    x = torch.randn(6, 5)
    out = KERNELS[f"{prefix}.{op}"](x, torch.zeros_like(x))  # tile forms carry a tmp
    assert out.shape == ref(x).shape
    assert torch.allclose(out, ref(x))


def test_reductions_read_only_the_valid_region() -> None:
    x = torch.randn(4, 8)
    x[:, 5:] = 1000.0  # padding garbage outside the valid columns
    xv = with_valid(x, (4, 5))
    assert torch.allclose(KERNELS["tile.row_sum"](xv, None), x[:, :5].sum(-1, keepdim=True))
    assert torch.allclose(KERNELS["tile.row_max"](xv, None), x[:, :5].amax(-1, keepdim=True))
    y = torch.randn(6, 3)
    y[4:] = -1000.0
    yv = with_valid(y, (4, 3))
    assert torch.allclose(KERNELS["tile.col_min"](yv), y[:4].amin(-2, keepdim=True))


def test_tensor_reduction_axis_and_keep_dim() -> None:
    x = torch.randn(3, 4, 5)
    out = KERNELS["tensor.row_sum"](x, axis=1, keep_dim=False)
    assert out.shape == (3, 5) and torch.allclose(out, x.sum(1))
    out = KERNELS["tensor.col_max"](x)
    assert out.shape == (3, 1, 5) and torch.allclose(out, x.amax(-2, keepdim=True))


def test_argmax_argmin_are_int32() -> None:
    x = torch.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 9.0]])
    assert KERNELS["tile.row_argmax"](x, None).tolist() == [[1], [2]]
    assert KERNELS["tile.row_argmin"](x, None).dtype == torch.int32
    assert KERNELS["tile.col_argmax"](x, None).tolist() == [[1, 0, 1]]


def test_int_reduction_keeps_dtype() -> None:
    out = KERNELS["tile.row_sum"](IA, None)
    assert out.dtype == torch.int32
    assert torch.equal(out, IA.sum(-1, keepdim=True).to(torch.int32))


def test_nan_and_inf_pass_through() -> None:
    x = torch.tensor([[math.nan, 1.0, -math.inf]])
    out = KERNELS["tile.adds"](x, 1.0)
    assert math.isnan(out[0, 0]) and out[0, 1] == 2.0 and out[0, 2] == -math.inf
    assert math.isnan(KERNELS["tile.maximums"](x, 0.0)[0, 0])
    assert math.isnan(KERNELS["tile.row_sum"](x, None)[0, 0])


def test_bf16_elementwise_computes_in_bf16() -> None:
    a = torch.randn(4, 4).to(torch.bfloat16)
    out = KERNELS["tile.add"](a, a)
    assert out.dtype == torch.bfloat16 and torch.equal(out, a + a)
