"""Gathers and scatters: by index, by mask pattern, by compare, by 32-byte block, from and into
global memory (``mgather``/``mscatter``) and through a paged block table (``paged_gather``).

Semantics, from PyPTO's op registrations at the fixtures' commit (hw-native-sys/pypto
``src/ir/op/tile_ops/gather.cpp``, ``scatter.cpp``, ``memory.cpp`` (mgather, mscatter),
``paged_gather.cpp``; ``src/ir/op/tensor_ops/gather.cpp``, ``scatter.cpp``, ``paged_gather.cpp``;
the paged gather's lowering in ``src/ir/transforms/op_conversion_registry.cpp``; the mask patterns
in ``docs/en/dev/ir/05-operators.md``) and from pto-isa (``docs/isa/tile/ops/irregular-and-complex/
tgather.md``; the CPU simulator's ``include/pto/cpu/TGather.hpp``, ``TGatherB.hpp``,
``MGather.hpp``, ``MScatter.hpp``, ``TScatter.hpp``):

- ``tile.gather(src, indices, tmp)``: ``dst.flat[k] = src.flat[indices.flat[k]]``, the index
  counting elements of the whole (physical) source tile row-major; the result has the index
  tile's shape. An index outside the tile reads 0 (the CPU simulator's rule; the NPU's is
  undefined). ``tmp`` is scratch.
- ``tensor.gather(input, index, dim=d)``: ``torch.gather`` along ``d`` (any rank >= 2; the index
  may be smaller than the input on the other axes). Files 00-10 print the index second
  (``gather(inp, idx, dim=-1)``): it is the IR's positional order, which the kernel takes.
- ``*.gather_mask(src, mask_pattern=p)``: keep the columns pattern ``p`` marks (1 = P0101: even
  columns, 2 = P1010: odd, 3..6 = P0001..P1000: column ``c % 4 == p - 3``, 7 = P1111: all),
  compacted; ``output_dtype`` reinterprets the bits (same width).
- ``*.gather_compare(src, kvalue, [tmp,] cmp_mode=m, offset=o, out_cols=n)``: per row, the column
  indices (plus ``o``) whose element compares true against ``kvalue`` (m: 0 eq, 1 ne, 2 lt,
  3 le, 4 gt, 5 ge), packed at the front of an INT32 ``[rows, n]`` tile, and the match count
  per row in a ``[1, rows]`` tile. Cells past a row's count are 0 here (the NPU leaves them).
- ``tile.gatherb(src, offset)``: each UINT32 byte offset copies the 32-byte block of the source
  tile's bytes that starts there (a block reaching past the tile is left 0).
- ``tile.scatter(dst, src, indexes)``: ``dst.flat[indexes[i, j]] = src[i, j]`` over the source's
  valid region, in place (DPS), later elements winning on a collision (pto.tscatter's order).
- ``tensor.scatter(input, index, src, dim=d)``: ``input`` with ``src`` scattered along ``d``
  (``torch.scatter``); a new value.
- ``*.scatter_mask``: the compact rows written into the marked columns of ``dst`` (in place for
  the tile form, a new value for the tensor form), the other columns kept.
- ``tile.mgather(mem, idx, coalesce=c, gather_oob=m)``: from a global tensor; ``c = 1``
  (elements): ``out[i, j] = mem.flat[idx[i, j]]``; ``c = 0`` (rows; the default): with a
  ``[1, R]`` or ``[R, 1]`` index, ``out[r, :] = rows(mem)[idx[r]]`` where ``rows(mem)`` is ``mem``
  as ``[-1, last dim]``. Out-of-range indices: 1 clamp, 2 wrap, 3 zero; 0 (undefined on the NPU)
  reads 0 here. The printer moves the optional ``scratch``/``valid_shape`` operands into
  keywords (ir.catalogue); ``valid_shape`` narrows the written region of a Mat result, and a Mat
  element gather leaves the gathered elements in its GM ``scratch`` (where it stages them).
- ``tile.mscatter(src, idx, output_tensor)``: ``output.flat[idx[i, j]] = src[i, j]`` over the
  source's valid region, in place; returns the tensor (as ``tile.store``).
- ``tensor.paged_gather(src, indices, block_table, block_size=b, size=s, col_off=c,
  max_indices=n, is_trans=t)``: row ``i < len(indices)`` of an ``[n, s]`` result (``[s, n]``
  when ``t``) is ``src[block_table[idx // b] * b + idx % b, c : c + s]`` for ``idx = indices[i]``;
  the rows past ``len(indices)`` are 0 (``tile.create`` leaves them undefined).
- ``tensor.create_l1``: an on-chip accumulator (``tensor.create``'s kernel).

The sanitizer is not told of ``mgather``'s reads nor ``mscatter``'s writes of global memory: their
footprint is data-dependent, and a box around it would report races and uninitialised reads that
are not there.
"""

from __future__ import annotations

from typing import Any

import torch

from ..values import get_valid, valid_box, with_valid
from .base import KERNELS, as_ints, as_scalar, check_alloc, enum_name, last_writes, register
from .movement import create

__all__ = ["mask_columns", "MASK_PATTERNS"]

# pattern number -> (stride, the marked column within each stride); 7 = every column
MASK_PATTERNS: dict[int, tuple[int, int]] = {1: (2, 0), 2: (2, 1), 3: (4, 0), 4: (4, 1), 5: (4, 2), 6: (4, 3), 7: (1, 0)}
_PATTERN_NAMES = {"p0101": 1, "p1010": 2, "p0001": 3, "p0010": 4, "p0100": 5, "p1000": 6, "p1111": 7}
_CMP_MODES = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}
_SAME_WIDTH_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _pattern(mask_pattern: Any) -> int:
    """A mask pattern as printed (``1``, ``pl.tile.MaskPattern.P0101``, ``"P0101"``) as its number."""
    v = as_scalar(mask_pattern)
    if isinstance(v, int) and not isinstance(v, bool):
        p = int(v)
    else:
        name = enum_name(v) or ""
        p = _PATTERN_NAMES.get(name, int(name) if name.isdigit() else -1)
    if p not in MASK_PATTERNS:
        raise ValueError(f"mask_pattern must be 1..7 (P0101..P1111), got {mask_pattern!r}")
    return p


def mask_columns(cols: int, mask_pattern: Any) -> torch.Tensor:
    """The column indices a mask pattern marks in a row of ``cols`` columns."""
    stride, first = MASK_PATTERNS[_pattern(mask_pattern)]
    return torch.arange(first, cols, stride)


def _as_dtype(t: torch.Tensor, dtype: Any) -> torch.Tensor:
    """``t`` as ``dtype`` with the same bits (``output_dtype``); values kept when the IR widened it."""
    if not isinstance(dtype, torch.dtype) or dtype == t.dtype:
        return t
    if t.dtype.itemsize == dtype.itemsize:
        return t.view(dtype)
    # an IR UINT16/UINT32 is held widened (exec.values.DTYPES): the bits, read unsigned
    bits = t.element_size()
    same = _SAME_WIDTH_INT.get(bits)
    if same is None or dtype not in (torch.int32, torch.int64):
        return t.to(dtype)
    raw = t.view(same).to(torch.int64)
    return (raw & ((1 << (8 * bits)) - 1)).to(dtype)


# ---------------------------------------------------------------------- index gathers


@register("tile.gather")
def tile_gather(src: torch.Tensor, indices: torch.Tensor, tmp: Any = None, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """``dst.flat[k] = src.flat[indices.flat[k]]`` (the whole tile, row-major); outside: 0."""
    flat = src.reshape(-1)
    idx = indices.to(torch.int64)
    inside = (idx >= 0) & (idx < flat.numel())
    out = torch.where(inside, flat[idx.clamp(0, max(flat.numel() - 1, 0))], torch.zeros((), dtype=src.dtype))
    return with_valid(out, get_valid(indices))


@register("tensor.gather")
def tensor_gather(inp: torch.Tensor, index: torch.Tensor, *_extra: Any, dim: Any = -1, **_kw: Any) -> torch.Tensor:
    """``out[..., k, ...] = inp[..., index[..., k, ...], ...]`` along ``dim`` (``torch.gather``)."""
    d = int(as_scalar(dim)) % inp.dim()
    idx = index.to(torch.int64)
    bad = (idx < 0) | (idx >= inp.shape[d])
    if bool(bad.any()):
        at = [int(i) for i in bad.nonzero()[0]]
        raise IndexError(f"tensor.gather: index {int(idx[tuple(at)])} at {at} is outside dimension {d} of the input (size {inp.shape[d]})")
    return torch.gather(inp, d, idx)


@register("gather_mask")
def gather_mask(src: torch.Tensor, *_extra: Any, mask_pattern: Any = 7, output_dtype: Any = None, **_kw: Any) -> torch.Tensor:
    """The columns the pattern marks, compacted (``output_dtype``: the same bits as another dtype)."""
    out = src[..., mask_columns(src.shape[-1], mask_pattern)].contiguous()
    return _as_dtype(out, output_dtype)


def _compare(src: torch.Tensor, kvalue: Any, cmp_mode: Any) -> torch.Tensor:
    v = as_scalar(cmp_mode)
    mode = int(v) if isinstance(v, int) else _CMP_MODES.get(enum_name(v) or "", -1)
    k = as_scalar(kvalue)
    ops = (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)
    if not 0 <= mode < len(ops):
        raise ValueError(f"cmp_mode must be 0..5 (eq ne lt le gt ge), got {cmp_mode!r}")
    return ops[mode](src, k)


def _gather_compare(
    src: torch.Tensor, kvalue: Any, cmp_mode: Any, offset: Any, out_cols: Any, count_dtype: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    rows, cols = src.shape[0], src.shape[-1]
    n = int(as_scalar(out_cols))
    vr, vc = valid_box(src)[:2] if src.dim() == 2 else (rows, cols)
    hit = torch.zeros(rows, cols, dtype=torch.bool)
    hit[:vr, :vc] = _compare(src.reshape(rows, cols)[:vr, :vc], kvalue, cmp_mode)
    counts = hit.sum(dim=1)
    # stable order: the matching columns first, in column order
    order = torch.argsort((~hit).to(torch.int8), dim=1, stable=True)
    check_alloc([rows, n], torch.int32, "gather's index tile")
    dst = torch.zeros(rows, n, dtype=torch.int32)
    take = min(n, cols)
    picked = (order[:, :take] + int(as_scalar(offset) or 0)).to(torch.int32)
    keep = torch.arange(take).unsqueeze(0) < counts.unsqueeze(1)
    dst[:, :take] = torch.where(keep, picked, torch.zeros((), dtype=torch.int32))
    cdt = count_dtype if isinstance(count_dtype, torch.dtype) else torch.int32
    return dst, counts.reshape(1, rows).to(cdt)


@register("tile.gather_compare")
def tile_gather_compare(
    src: torch.Tensor,
    kvalue: Any,
    tmp: Any = None,
    *_extra: Any,
    cmp_mode: Any = 0,
    offset: Any = 0,
    out_cols: Any = 1,
    count_dtype: Any = None,
    **_kw: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: the (offset) column indices whose element compares true, and their count."""
    return _gather_compare(src, kvalue, cmp_mode, offset, out_cols, count_dtype)


@register("tensor.gather_compare")
def tensor_gather_compare(
    inp: torch.Tensor,
    kvalue: Any,
    *_extra: Any,
    cmp_mode: Any = 0,
    offset: Any = 0,
    out_cols: Any = 1,
    count_dtype: Any = None,
    **_kw: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The tensor form of ``tile.gather_compare`` (no scratch operand)."""
    return _gather_compare(inp, kvalue, cmp_mode, offset, out_cols, count_dtype)


@register("tile.gatherb")
def gatherb(src: torch.Tensor, offset: torch.Tensor, *_extra: Any, output_dtype: Any = None, **_kw: Any) -> torch.Tensor:
    """Each UINT32 byte offset copies the 32-byte block of ``src``'s bytes starting there."""
    dt = output_dtype if isinstance(output_dtype, torch.dtype) else src.dtype
    raw = src.contiguous().reshape(-1).view(torch.uint8)
    offs = offset.to(torch.int64)
    rows, ocols = offs.shape[0], offs.shape[-1]
    out = torch.zeros(rows, ocols, 32, dtype=torch.uint8)
    blocks = offs.reshape(rows, ocols, 1) + torch.arange(32)
    inside = (offs >= 0) & (offs + 32 <= raw.numel())
    gathered = raw[blocks.clamp(0, max(raw.numel() - 1, 0))]
    out[inside] = gathered[inside]
    return out.reshape(rows, ocols * 32).view(dt)


# ---------------------------------------------------------------------- scatters


def _scatter_flat(dst: torch.Tensor, src: torch.Tensor, idx: torch.Tensor, op: str) -> torch.Tensor:
    """``dst.flat[idx[i, j]] = src[i, j]`` over the source's valid region, later elements winning."""
    if tuple(idx.shape) != tuple(src.shape):
        raise ValueError(f"{op}: {list(idx.shape)} indices for a {list(src.shape)} source; one index per source element")
    box = tuple(slice(0, n) for n in valid_box(src))
    values = src[box].reshape(-1).to(dst.dtype)
    where = idx[box].reshape(-1).to(torch.int64)
    if not dst.is_contiguous():  # written through a contiguous copy
        work = dst.contiguous()
        _scatter_flat(work, src, idx, op)
        dst.copy_(work)
        return dst
    flat = dst.view(-1)
    bad = (where < 0) | (where >= flat.numel())
    if bool(bad.any()):
        first = int(where[bad][0])
        raise IndexError(f"{op}: index {first} is outside the destination ({flat.numel()} elements)")
    winners = last_writes(where, flat.numel())  # a collision: the later element wins
    flat[where[winners]] = values[winners]
    return dst


@register("tile.scatter")
def tile_scatter(dst: torch.Tensor, src: torch.Tensor, indexes: torch.Tensor, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """``dst.flat[indexes[i, j]] = src[i, j]``, in place (DPS)."""
    return _scatter_flat(dst, src, indexes, "tile.scatter")


@register("tensor.scatter")
def tensor_scatter(inp: torch.Tensor, index: torch.Tensor, src: torch.Tensor, *_extra: Any, dim: Any = -1, **_kw: Any) -> torch.Tensor:
    """``input`` with ``out[b, index[b, k]] = src[b, k]`` along ``dim`` (a new value); on a collision
    the later element (row-major) wins, as the tile lowering's flat scatter (torch.scatter leaves it
    unspecified)."""
    d = int(as_scalar(dim)) % inp.dim()
    idx = index.to(torch.int64)
    # the flat position of each written cell: the index's own coordinates, dim d replaced by its value
    flat = torch.zeros(idx.shape, dtype=torch.int64)
    stride = 1
    for k in range(inp.dim() - 1, -1, -1):
        shape = [1] * idx.dim()
        shape[k] = idx.shape[k]
        coord = idx if k == d else torch.arange(idx.shape[k]).reshape(shape)
        flat = flat + coord * stride
        stride *= inp.shape[k]
    values = src[tuple(slice(0, n) for n in idx.shape)]
    return _scatter_flat(inp.clone().contiguous(), with_valid(values.contiguous(), None), flat, "tensor.scatter")


def _scatter_mask(dst: torch.Tensor, src: torch.Tensor, mask_pattern: Any) -> torch.Tensor:
    cols = mask_columns(dst.shape[-1], mask_pattern)
    n = min(cols.numel(), src.shape[-1])
    dst[..., cols[:n]] = src[..., :n].to(dst.dtype)
    return dst


@register("tile.scatter_mask")
def tile_scatter_mask(dst: torch.Tensor, src: torch.Tensor, *_extra: Any, mask_pattern: Any = 7, **_kw: Any) -> torch.Tensor:
    """``src``'s compact rows into the columns of ``dst`` the pattern marks, in place (DPS)."""
    return _scatter_mask(dst, src, mask_pattern)


@register("tensor.scatter_mask")
def tensor_scatter_mask(inp: torch.Tensor, dst: torch.Tensor, *_extra: Any, mask_pattern: Any = 7, **_kw: Any) -> torch.Tensor:
    """``input``'s rows written into the marked columns of a copy of ``dst``."""
    return _scatter_mask(dst.clone(), inp, mask_pattern)


# ---------------------------------------------------------------------- global memory


def _oob(idx: torch.Tensor, n: int, mode: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices brought inside ``[0, n)`` by ``gather_oob`` and where the value read is 0."""
    m = int(as_scalar(mode) or 0)
    if m == 1:
        return idx.clamp(0, n - 1), torch.zeros(idx.shape, dtype=torch.bool)
    if m == 2:
        return idx % n, torch.zeros(idx.shape, dtype=torch.bool)
    outside = (idx < 0) | (idx >= n)
    return idx.clamp(0, n - 1), outside


@register("tile.mgather")
def mgather(
    mem: torch.Tensor,
    idx: torch.Tensor,
    scratch: Any = None,
    valid_shape: Any = None,
    *_extra: Any,
    coalesce: Any = 0,
    gather_oob: Any = 0,
    **_kw: Any,
) -> torch.Tensor:
    """Rows (``coalesce=0``) or elements (``coalesce=1``) of a global tensor, by index."""
    index = idx.to(torch.int64)
    if int(as_scalar(coalesce) or 0) == 1:
        flat = mem.reshape(-1)
        where, zero = _oob(index, flat.numel(), gather_oob)
        out = torch.where(zero, torch.zeros((), dtype=mem.dtype), flat[where])
    else:
        rows = mem.reshape(-1, mem.shape[-1])
        vec = index.reshape(-1)
        where, zero = _oob(vec, rows.shape[0], gather_oob)
        out = torch.where(zero.unsqueeze(1), torch.zeros((), dtype=mem.dtype), rows[where])
    if isinstance(scratch, torch.Tensor) and int(as_scalar(coalesce) or 0) == 1 and scratch.numel() >= out.numel():
        # Mat element mode stages the gathered elements in the GM scratch (its registration's Write effect)
        scratch.view(-1)[: out.numel()] = out.reshape(-1).to(scratch.dtype)
    if valid_shape is not None:
        vs = as_ints(valid_shape)
        if len(vs) == out.dim():
            box = tuple(slice(0, n) for n in vs)
            kept = torch.zeros_like(out)
            kept[box] = out[box]
            return with_valid(kept, vs)
    return out.contiguous()


@register("tile.mscatter")
def mscatter(src: torch.Tensor, idx: torch.Tensor, output_tensor: torch.Tensor, *_extra: Any, **_kw: Any) -> torch.Tensor:
    """``output.flat[idx[i, j]] = src[i, j]`` over the source's valid region (in place)."""
    return _scatter_flat(output_tensor, src, idx, "tile.mscatter")


@register("tensor.paged_gather")
def paged_gather(
    src: torch.Tensor,
    indices: torch.Tensor,
    block_table: torch.Tensor,
    *_extra: Any,
    block_size: Any = 1,
    size: Any = None,
    col_off: Any = 0,
    max_indices: Any = None,
    is_trans: Any = False,
    **_kw: Any,
) -> torch.Tensor:
    """Rows of a paged pool through the block table: ``src[bt[i // b] * b + i % b, c : c + s]``."""
    b = int(as_scalar(block_size))
    c = int(as_scalar(col_off) or 0)
    s = int(as_scalar(size)) if size is not None else src.shape[-1] - c
    logical = indices.reshape(-1).to(torch.int64)
    n = int(as_scalar(max_indices)) if max_indices is not None else logical.numel()
    if logical.numel() > n:
        raise ValueError(f"tensor.paged_gather: {logical.numel()} indices for max_indices={n}")
    if b <= 0 or s <= 0 or c < 0 or c + s > src.shape[-1]:
        raise ValueError(
            f"tensor.paged_gather: block_size={b}, columns [{c}, {c + s}) of a source {src.shape[-1]} wide; "
            "the block size and the size are positive, the columns inside the source"
        )
    table = block_table.reshape(-1).to(torch.int64)
    if bool(((logical < 0) | (logical // b >= table.numel())).any()):
        bad = int(logical[(logical < 0) | (logical // b >= table.numel())][0])
        raise IndexError(f"tensor.paged_gather: index {bad} is outside the {table.numel()} blocks of {b} the block table maps")
    phys = table[logical // b] * b + logical % b
    if bool(((phys < 0) | (phys >= src.shape[0])).any()):
        bad = int(phys[(phys < 0) | (phys >= src.shape[0])][0])
        raise IndexError(f"tensor.paged_gather: the block table maps to row {bad}, outside the source's {src.shape[0]} rows")
    check_alloc([n, s], src.dtype, "tensor.paged_gather's rows")
    out = torch.zeros(n, s, dtype=src.dtype)
    out[: logical.numel()] = src[phys, c : c + s]
    return out.t().contiguous() if bool(as_scalar(is_trans)) else out


KERNELS["tensor.create_l1"] = create
