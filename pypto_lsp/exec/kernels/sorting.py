"""Sorts on the device's packed (value, index) pairs: ``sort32``, ``mrgsort_format1/2``.

Sources: pypto ``src/ir/op/tile_ops/sort.cpp`` and ``tensor_ops/sort.cpp`` (signatures, result
shapes), its system test
``tests/st/runtime/ops/test_sort.py`` (what the harness expects), and pto-isa
``docs/isa/tile/ops/irregular-and-complex/tsort32.md`` and ``tmrgsort.md``.

The packed layout (FP32): every element becomes an 8-byte pair ``[value_f32, index_u32]``, so an
``[R, C]`` source sorts into ``[R, 2C]`` FP32 with the value in the even column and the index's
32 bits (not its value: a small index reads as a denormal) in the odd column. FP16 pairs are
``[value_f16, 0, index_u32]`` on the device (4 halves), which the IR's ``[R, 2C]`` FP16 result
cannot hold: refused with a message rather than guessed.

- ``sort32(src, idx)``: each row in blocks of 32 columns, each block sorted descending by value,
  equal values keeping their order (the smaller position first, tsort32.md); ``idx`` is read only
  (its values ride along; a ``[1, C]`` idx is broadcast over the rows). A tail block shorter than
  32 is padded with -inf on the device; the pads sort last, so its pairs are the real ones.
- ``mrgsort_format1(src, block_len)``: per row, each group of 4 consecutive runs of ``block_len``
  columns (``block_len / 2`` pairs) merged into one descending run (``repeatTimes`` groups).
- ``mrgsort_format2(src0, src1[, src2[, src3]], tmp)``: 2-4 lists merged into one, shaped like
  ``tmp`` (the tensor form has no tmp: shaped like the lists side by side). ``exhausted=True``
  stops when the first list runs out (the rest of the result stays zero).

The pairs are split again by the mask-pattern gather (``gather_mask``, P0101 the values, P1010 the
index bits read as UINT32) in :mod:`.gather_scatter`.

A merge is the device's greedy one (each step takes the larger of the list heads, ties to the
earlier list), not a sort: runs that are not sorted merge as the device merges them, so a wrong
``block_len`` shows as the device would show it.
"""

from __future__ import annotations

import heapq
from typing import Any

import torch

from .base import as_scalar, register

__all__ = ["sort32", "mrgsort_format1", "tile_mrgsort_format2", "tensor_mrgsort_format2"]

BLOCK = 32


def _pairs_dtype_ok(t: torch.Tensor, op: str) -> None:
    if t.dtype != torch.float32:
        raise ValueError(
            f"{op}: packed (value, index) pairs are modelled for FP32 only (got {str(t.dtype).replace('torch.', '')}); "
            "FP16 pairs take 4 halves on the device, which the IR's result shape does not hold"
        )


def _index_bits(idx: torch.Tensor) -> torch.Tensor:
    """Index values as their 32 bits read as float32 (how the pair stores them)."""
    return idx.to(torch.int64).to(torch.int32).view(torch.float32) if idx.dtype != torch.int32 else idx.view(torch.float32)


def _pack(values: torch.Tensor, index_bits: torch.Tensor) -> torch.Tensor:
    return torch.stack((values, index_bits), dim=-1).reshape(*values.shape[:-1], values.shape[-1] * 2)


@register("sort32")
def sort32(src: torch.Tensor, idx: torch.Tensor, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """``[.., C]`` values + ``[.., C]`` indices -> ``[.., 2C]`` pairs, descending per 32-block."""
    _pairs_dtype_ok(src, "sort32")
    cols = src.shape[-1]
    if idx.shape != src.shape:
        try:
            idx = idx.expand(src.shape)
        except RuntimeError:  # torch: "The expanded size of the tensor (64) must match the existing size (32)"
            raise ValueError(f"an index of {list(idx.shape)} for values of {list(src.shape)}: sort32 takes one index per value") from None
    ib = _index_bits(idx)
    out_v = torch.empty_like(src)
    out_i = torch.empty_like(ib)
    for start in range(0, cols, BLOCK):
        stop = min(start + BLOCK, cols)
        v, order = torch.sort(src[..., start:stop], dim=-1, descending=True, stable=True)
        out_v[..., start:stop] = v
        out_i[..., start:stop] = torch.gather(ib[..., start:stop], -1, order)
    return _pack(out_v, out_i)


def _merge_rows(lists: list[torch.Tensor], stop_at_first_empty: bool = False) -> torch.Tensor:
    """Greedy descending merge of packed pair lists (one row each) into one packed row."""
    seqs = [lst.reshape(-1, 2) for lst in lists]
    keyed = [[(float(p[0]), j, k) for j, p in enumerate(s.tolist())] for k, s in enumerate(seqs)]
    if stop_at_first_empty:
        picked: list[tuple[int, int]] = []
        heads = [0] * len(keyed)
        while all(h < len(lst) for h, lst in zip(heads, keyed, strict=True)):
            best = max(range(len(keyed)), key=lambda k: (keyed[k][heads[k]][0], -k))
            picked.append((best, heads[best]))
            heads[best] += 1
    else:
        merged = heapq.merge(*keyed, key=lambda e: e[0], reverse=True)
        picked = [(k, j) for _, j, k in merged]
    starts = [0]
    for s in seqs[:-1]:
        starts.append(starts[-1] + s.shape[0])
    out = torch.zeros(sum(s.shape[0] for s in seqs), 2, dtype=lists[0].dtype)
    if picked:
        order = torch.tensor([starts[k] + j for k, j in picked], dtype=torch.int64)
        out[: len(picked)] = torch.cat(seqs)[order]
    return out.reshape(-1)


@register("mrgsort_format1")
def mrgsort_format1(src: torch.Tensor, block_len: Any, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """Per row: groups of 4 runs of ``block_len`` columns, each group merged into one run."""
    _pairs_dtype_ok(src, "mrgsort_format1")
    blen = int(as_scalar(block_len))
    if blen <= 0 or blen % 2:
        raise ValueError(f"mrgsort_format1: block_len must be a positive even column count (a multiple of 64), got {blen}")
    rows = src.reshape(-1, src.shape[-1])
    out = rows.clone()
    cols = rows.shape[-1]
    group = 4 * blen
    for r in range(rows.shape[0]):
        for g in range(0, cols - cols % 2, group):
            runs = [rows[r, s : min(s + blen, cols)] for s in range(g, min(g + group, cols), blen)]
            runs = [x[: x.shape[0] - x.shape[0] % 2] for x in runs if x.shape[0] >= 2]
            if runs:
                m = _merge_rows(runs)
                out[r, g : g + m.shape[0]] = m
    return out.reshape(src.shape)


def _merge_lists(lists: list[torch.Tensor], out_shape: tuple[int, ...], exhausted: Any) -> torch.Tensor:
    if not 2 <= len(lists) <= 4:
        raise ValueError(f"mrgsort_format2: 2-4 sorted lists expected, got {len(lists)}")
    for t in lists:
        _pairs_dtype_ok(t, "mrgsort_format2")
    stop = bool(as_scalar(exhausted)) if exhausted is not None else False
    rows = lists[0].reshape(-1, lists[0].shape[-1]).shape[0]
    out = torch.zeros(out_shape, dtype=lists[0].dtype).reshape(rows, -1)
    for r in range(rows):
        m = _merge_rows([t.reshape(rows, -1)[r] for t in lists], stop_at_first_empty=stop)
        n = min(m.shape[0], out.shape[1])
        out[r, :n] = m[:n]
    return out.reshape(out_shape)


@register("tile.mrgsort_format2")
def tile_mrgsort_format2(*args: Any, exhausted: Any = False, **_kw: Any) -> torch.Tensor:
    """``(src0, src1[, src2[, src3]], tmp)``: the lists merged into a tile shaped like ``tmp``."""
    tiles = [a for a in args if isinstance(a, torch.Tensor)]
    if len(tiles) < 3:
        raise ValueError(f"tile.mrgsort_format2: (src0, src1[, src2[, src3]], tmp) expected, got {len(tiles)} tiles")
    return _merge_lists(tiles[:-1], tuple(tiles[-1].shape), exhausted)


@register("tensor.mrgsort_format2")
def tensor_mrgsort_format2(*args: Any, exhausted: Any = False, **_kw: Any) -> torch.Tensor:
    """``(src0, src1[, src2[, src3]])``: the lists merged side by side (the tmp is synthesised later)."""
    tiles = [a for a in args if isinstance(a, torch.Tensor)]
    if not tiles:
        raise ValueError("tensor.mrgsort_format2: no source lists")
    shape = (*tiles[0].shape[:-1], sum(t.shape[-1] for t in tiles))
    return _merge_lists(tiles, shape, exhausted)
