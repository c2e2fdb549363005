"""K-chunk accumulations run as one matmul: the run-time half (the plans: :mod:`pypto_lsp.analysis.batching_plan`)."""

from __future__ import annotations

from typing import Any

import torch

from . import sanitizer
from .values import as_f32

__all__ = ["chunk_window", "kchunk"]


def chunk_window(src: Any, offsets: tuple[Any, ...], shape: tuple[int, int], axis: int, chunks: int) -> Any:
    if not isinstance(src, torch.Tensor) or src.dim() != 2 or getattr(src, "_pl_valid", None) is not None:
        return None
    full = list(shape)
    full[axis] *= chunks
    offs = [int(o) for o in offsets]
    if any(o < 0 or o + n > size for o, n, size in zip(offs, full, src.shape, strict=True)):
        return None  # past the edge: the loop as written handles the clamping
    san = sanitizer.active()
    if san is not None:  # the chunks' loads, as one read of their region
        san.access("r", src, offs, full, "tile.load")
    return src[offs[0] : offs[0] + full[0], offs[1] : offs[1] + full[1]]


def kchunk(inits: tuple[Any, ...], specs: tuple[tuple[Any, ...], ...], chunks: int) -> tuple[Any, ...] | None:
    """The accumulators after the whole loop, or None when the loop must run as written.

    ``specs``: per accumulator ``(A, a_offsets, a_shape, B, b_offsets, b_shape)`` at the first chunk.
    """
    if any(sanitizer.undefined_in((init, s[0], s[3])) for init, s in zip(inits, specs, strict=True)):
        return None  # undefined elements are followed kernel by kernel (exec.definedness)
    out = []
    for init, (a, a_off, a_shape, b, b_off, b_shape) in zip(inits, specs, strict=True):
        if not isinstance(init, torch.Tensor) or init.dtype != torch.float32 or getattr(init, "_pl_valid", None) is not None:
            return None
        lhs = chunk_window(a, a_off, a_shape, 1, chunks)
        rhs = chunk_window(b, b_off, b_shape, 0, chunks)
        if lhs is None or rhs is None or not (lhs.dtype.is_floating_point and rhs.dtype.is_floating_point):
            return None
        if tuple(init.shape) != (a_shape[0], b_shape[1]):
            return None
        # DIVERGENCE from chunk-by-chunk order: one FP32 matmul over the whole contracted axis
        out.append(init + torch.matmul(as_f32(lhs), as_f32(rhs)))
    return tuple(out)
