"""MX block-scaled matmul (Ascend950): ``tile.matmul_mx``, ``_acc``, ``_bias`` and the scale
address binding ``tile.tget_scale_addr``.

Sources: pypto ``src/ir/op/tile_ops/matmul_mx.cpp`` (signatures, FP32 Acc result, the PTOAS
alignment rules M % 16, K % 64, N % 32), the InsertMxScaleAddr pass (a ``tget_scale_addr`` before
each MX matmul), ``tests/st/runtime/ops/test_matmul_mx.py`` (the golden and the physical scale
layouts), pto-isa ``docs/isa/TMATMUL_MX.md`` and ``docs/isa/TGET_SCALE_ADDR.md``.

Meaning: ``C[m, n] = sum_k A[m, k] * 2**(sa[m, k // 32] - 127) * B[k, n] * 2**(sb[k // 32, n] - 127)``
with E8M0 scales shared by groups of 32 along K; the product is exact in float64 and rounded
once to FP32 (the test's golden does the same). Operands arrive decoded (FP8/FP4 data and E8M0
scales as float32 values: :mod:`pypto_lsp.exec.stored_dtypes`).

Scale tiles hold their bytes in the physical layouts the cube reads, not logically:

- lhs scale ``[M, K/32]`` in MX_A_ZZ: blocks of 16 rows x 2 K-groups, the blocks of one
  16-row band side by side, each block row-major;
- rhs scale ``[K/32, N]`` in MX_B_NN: for each band of 16 columns, for each pair of K-groups,
  the 16 columns' 2 scales column by column.

Both are unpacked to the logical ``[M, K/32]`` / ``[K/32, N]`` before use.
``tget_scale_addr(dst_scale, src)`` binds the scale tile's address from the data tile's
(``dst_addr = src_addr >> SHIFT_MX_ADDR``); its value is ``dst_scale`` itself.
"""

from __future__ import annotations

from typing import Any

import torch

from .base import register

__all__ = ["unpack_a_scale", "unpack_b_scale", "mx_matmul", "matmul_mx", "matmul_mx_acc", "matmul_mx_bias", "tget_scale_addr"]

GROUP = 32  # K elements per E8M0 scale
_BAND = 16  # rows (A) / columns (B) per scale block
_C0 = 2  # K-groups per scale block


def unpack_a_scale(packed: torch.Tensor) -> torch.Tensor:
    """MX_A_ZZ ``[M, G]`` -> logical ``[M, G]`` (G = K/32)."""
    m, g = packed.shape
    if m % _BAND or g % _C0:
        raise ValueError(f"matmul_mx: lhs scale [{m}, {g}] is not in MX_A_ZZ blocks (rows % 16, K-groups % 2)")
    return packed.reshape(m // _BAND, g // _C0, _BAND, _C0).permute(0, 2, 1, 3).reshape(m, g)


def unpack_b_scale(packed: torch.Tensor) -> torch.Tensor:
    """MX_B_NN ``[G, N]`` -> logical ``[G, N]``."""
    g, n = packed.shape
    if n % _BAND or g % _C0:
        raise ValueError(f"matmul_mx: rhs scale [{g}, {n}] is not in MX_B_NN blocks (K-groups % 2, cols % 16)")
    return packed.reshape(n // _BAND, g // _C0, _BAND, _C0).permute(1, 3, 0, 2).reshape(g, n)


def mx_matmul(lhs: torch.Tensor, lhs_scale: torch.Tensor, rhs: torch.Tensor, rhs_scale: torch.Tensor) -> torch.Tensor:
    """The dequantised product in float64 (FP32 rounding left to the caller)."""
    if lhs.dim() != 2 or rhs.dim() != 2 or lhs.shape[1] != rhs.shape[0]:
        raise ValueError(f"matmul_mx: lhs {list(lhs.shape)} and rhs {list(rhs.shape)} do not chain")
    k = lhs.shape[1]
    groups = torch.arange(k) // GROUP
    sa = unpack_a_scale(lhs_scale).to(torch.float64)
    sb = unpack_b_scale(rhs_scale).to(torch.float64)
    if sa.shape[1] * GROUP < k or sb.shape[0] * GROUP < k:
        raise ValueError(f"matmul_mx: K={k} needs {-(-k // GROUP)} scale groups, the scales have {sa.shape[1]} and {sb.shape[0]}")
    a = lhs.to(torch.float64) * sa[:, groups]
    b = rhs.to(torch.float64) * sb[groups, :]
    return a @ b


@register("tile.matmul_mx")
def matmul_mx(lhs: torch.Tensor, lhs_scale: torch.Tensor, rhs: torch.Tensor, rhs_scale: torch.Tensor, *_e: Any, **_kw: Any) -> torch.Tensor:
    return mx_matmul(lhs, lhs_scale, rhs, rhs_scale).to(torch.float32)


@register("tile.matmul_mx_acc")
def matmul_mx_acc(
    acc: torch.Tensor, lhs: torch.Tensor, lhs_scale: torch.Tensor, rhs: torch.Tensor, rhs_scale: torch.Tensor, *_e: Any, **_kw: Any
) -> torch.Tensor:
    """``acc + product``: the product rounded to FP32, then added in FP32 (the Acc buffer is FP32)."""
    return acc.to(torch.float32) + mx_matmul(lhs, lhs_scale, rhs, rhs_scale).to(torch.float32)


@register("tile.matmul_mx_bias")
def matmul_mx_bias(
    lhs: torch.Tensor, lhs_scale: torch.Tensor, rhs: torch.Tensor, rhs_scale: torch.Tensor, bias: torch.Tensor, *_e: Any, **_kw: Any
) -> torch.Tensor:
    return mx_matmul(lhs, lhs_scale, rhs, rhs_scale).to(torch.float32) + bias.to(torch.float32)


@register("tile.tget_scale_addr")
def tget_scale_addr(dst_scale: torch.Tensor, src: torch.Tensor, *_e: Any, **_kw: Any) -> torch.Tensor:
    return dst_scale
