"""Gather/scatter kernels (exec/kernels/gather_scatter.py) against plain torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from pypto_lsp.exec.kernels import KERNELS
from pypto_lsp.exec.values import get_valid, with_valid


def _k(name: str) -> Callable[..., Any]:
    return KERNELS[name]


def test_tile_gather_flat_index_over_the_whole_tile() -> None:
    src = torch.arange(64, dtype=torch.float32).reshape(4, 16) * 0.5
    col = torch.randint(0, 16, (4, 8), generator=torch.Generator().manual_seed(1))
    flat = col + torch.arange(4).reshape(4, 1) * 16
    out = _k("tile.gather")(src, flat.to(torch.int32), torch.zeros(4, 8, dtype=torch.int32))
    assert torch.equal(out, torch.gather(src, 1, col))
    assert out.dtype == src.dtype and tuple(out.shape) == (4, 8)


def test_tile_gather_outside_reads_zero_and_int16() -> None:
    src = torch.arange(1, 9, dtype=torch.int16).reshape(2, 4)
    idx = torch.tensor([[7, 8, -1, 0]], dtype=torch.int16)
    assert _k("tile.gather")(src, idx, None).tolist() == [[8, 0, 0, 1]]


def test_tile_gather_keeps_the_index_valid_region() -> None:
    src = torch.arange(8, dtype=torch.float32).reshape(1, 8)
    idx = with_valid(torch.tensor([[3, 2, 1, 0]], dtype=torch.int32), (1, 2))
    assert get_valid(_k("tile.gather")(src, idx, None)) == (1, 2)


@pytest.mark.parametrize(("shape", "index_shape", "dim"), [((4, 16), (4, 8), -1), ((2, 8, 8), (2, 3, 8), 1), ((3, 5, 4), (2, 5, 4), 0)])
def test_tensor_gather_every_dim(shape: tuple[int, ...], index_shape: tuple[int, ...], dim: int) -> None:
    g = torch.Generator().manual_seed(0)
    inp = torch.randn(shape, generator=g)
    idx = torch.randint(0, shape[dim], index_shape, generator=g, dtype=torch.int32)
    out = _k("tensor.gather")(inp, idx, dim=dim)
    assert torch.equal(out, torch.gather(inp, dim % inp.dim(), idx.long()))


def test_tensor_gather_index_outside_its_dimension_is_said_in_the_irs_terms() -> None:
    # The lowering turns the index into flat offsets, so a row's index past its dimension reads
    # the next row on the device; torch said "index 5 is out of bounds for dimension 1 with size 4".
    inp = torch.arange(8.0).reshape(2, 4)
    idx = torch.tensor([[0, 1], [5, 2]], dtype=torch.int32)
    with pytest.raises(IndexError, match=r"tensor.gather: index 5 at \[1, 0\] is outside dimension 1 of the input \(size 4\)"):
        _k("tensor.gather")(inp, idx, dim=-1)


@pytest.mark.parametrize(
    ("pattern", "cols"), [(1, [0, 2, 4, 6]), (2, [1, 3, 5, 7]), (3, [0, 4]), (4, [1, 5]), (5, [2, 6]), (6, [3, 7]), (7, list(range(8)))]
)
def test_gather_mask_patterns(pattern: int, cols: list[int]) -> None:
    src = torch.arange(16, dtype=torch.float32).reshape(2, 8)
    for name in ("tile.gather_mask", "tensor.gather_mask"):
        assert torch.equal(_k(name)(src, mask_pattern=pattern), src[:, cols])
    assert torch.equal(_k("tile.gather_mask")(src, mask_pattern="pl.tile.MaskPattern.P1010"), src[:, 1::2])


def test_gather_mask_output_dtype_keeps_the_bits() -> None:
    src = torch.tensor([[1.0, -2.0, 3.5, 0.25]])
    out = _k("tile.gather_mask")(src, mask_pattern=1, output_dtype=torch.int32)
    assert torch.equal(out, src[:, ::2].view(torch.int32))
    # UINT32 is held as int64 (exec.values.DTYPES): the bits, read unsigned
    wide = _k("tile.gather_mask")(src, mask_pattern=2, output_dtype=torch.int64)
    assert wide.tolist() == [[int(src[0, 1].view(torch.int32)) & 0xFFFFFFFF, int(src[0, 3].view(torch.int32))]]


@pytest.mark.parametrize("mode", range(6))
def test_gather_compare_every_mode(mode: int) -> None:
    g = torch.Generator().manual_seed(mode)
    src = torch.randint(0, 4, (5, 32), generator=g, dtype=torch.int32)
    ops = (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)
    dst, cdst = _k("tile.gather_compare")(src, 2, torch.zeros(5, 32, dtype=torch.uint8), cmp_mode=mode, offset=100, out_cols=40)
    tdst, tcdst = _k("tensor.gather_compare")(src, 2, cmp_mode=mode, offset=100, out_cols=40)
    assert torch.equal(dst, tdst) and torch.equal(cdst, tcdst)
    assert dst.dtype == torch.int32 and tuple(dst.shape) == (5, 40) and tuple(cdst.shape) == (1, 5)
    for r in range(5):
        hits = [j + 100 for j in range(32) if bool(ops[mode](src[r, j], 2))]
        assert cdst[0, r].item() == len(hits)
        assert dst[r, : len(hits)].tolist() == hits
        assert dst[r, len(hits) :].eq(0).all()


def test_gather_compare_fewer_out_cols_than_matches() -> None:
    src = torch.zeros(1, 16)
    dst, cdst = _k("tensor.gather_compare")(src, 0.0, cmp_mode="eq", out_cols=4, count_dtype=torch.int64)
    assert dst.tolist() == [[0, 1, 2, 3]] and cdst.tolist() == [[16]] and cdst.dtype == torch.int64


def test_gatherb_copies_32_byte_blocks() -> None:
    src = torch.arange(64, dtype=torch.float32).reshape(2, 32)
    offs = torch.tensor([[32, 0, 224, 96, 0, 0, 0, 0]], dtype=torch.int64)  # byte offsets (UINT32 held as int64)
    out = _k("tile.gatherb")(src, offs)
    assert tuple(out.shape) == (1, 64)
    flat = src.reshape(-1)
    want = torch.cat([flat[o // 4 : o // 4 + 8] for o in offs[0].tolist()])
    assert torch.equal(out[0], want)


def test_tile_scatter_in_place_last_write_wins() -> None:
    dst = torch.zeros(2, 8)
    src = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    idx = torch.tensor([[1, 1, 7], [8, 15, 8]], dtype=torch.int32)
    out = _k("tile.scatter")(dst, src, idx)
    assert out is dst
    want = torch.zeros(16)
    want[1], want[7], want[15], want[8] = 2.0, 3.0, 5.0, 6.0
    assert torch.equal(dst.reshape(-1), want)


def test_tile_scatter_outside_is_an_error() -> None:
    with pytest.raises(IndexError, match="outside the destination"):
        _k("tile.scatter")(torch.zeros(2, 2), torch.ones(1, 1), torch.tensor([[4]], dtype=torch.int32))


def test_tensor_scatter_matches_torch_and_keeps_the_input() -> None:
    g = torch.Generator().manual_seed(3)
    base = torch.randn(8, 16, generator=g)
    idx = torch.stack([torch.randperm(16, generator=g)[:8] for _ in range(8)]).to(torch.int32)
    val = torch.randn(8, 8, generator=g)
    before = base.clone()
    out = _k("tensor.scatter")(base, idx, val, dim=-1)
    assert torch.equal(out, torch.scatter(before, 1, idx.long(), val))
    assert torch.equal(base, before)


def test_scatter_mask_places_the_compact_rows() -> None:
    dst = torch.full((2, 8), -1.0)
    src = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    out = _k("tensor.scatter_mask")(src, dst, mask_pattern=1)
    assert out[:, ::2].tolist() == src.tolist() and out[:, 1::2].eq(-1).all() and dst.eq(-1).all()
    narrow = torch.zeros(2, 8)
    _k("tile.scatter_mask")(narrow, src[:, :2], mask_pattern=6)
    assert narrow[:, 3::4].tolist() == src[:, :2].tolist() and narrow.count_nonzero() == 4


def test_mgather_elements_and_rows() -> None:
    mem = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
    idx = torch.tensor([[0, 59, 17], [3, 3, 40]], dtype=torch.int32)
    assert torch.equal(_k("tile.mgather")(mem, idx, coalesce=1), mem.reshape(-1)[idx.long()])
    rows = torch.tensor([[11, 0, 4]], dtype=torch.int32)
    want = mem.reshape(-1, 5)[rows.reshape(-1).long()]
    assert torch.equal(_k("tile.mgather")(mem, rows, coalesce=0), want)
    assert torch.equal(_k("tile.mgather")(mem, rows.reshape(3, 1)), want)  # row mode is the default


@pytest.mark.parametrize(("oob", "want"), [(0, [0.0, 3.0]), (1, [11.0, 3.0]), (2, [1.0, 3.0]), (3, [0.0, 3.0])])
def test_mgather_out_of_range(oob: int, want: list[float]) -> None:
    mem = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert _k("tile.mgather")(mem, torch.tensor([[13, 3]], dtype=torch.int32), coalesce=1, gather_oob=oob).tolist() == [want]


def test_mscatter_writes_the_tensor_in_place() -> None:
    out = torch.zeros(4, 8)
    src = torch.arange(6, dtype=torch.float32).reshape(2, 3) + 1
    idx = torch.tensor([[31, 0, 9], [10, 11, 2]], dtype=torch.int32)
    assert _k("tile.mscatter")(src, idx, out) is out
    want = torch.zeros(32)
    want[idx.reshape(-1).long()] = src.reshape(-1)
    assert torch.equal(out.reshape(-1), want)


@pytest.mark.parametrize("is_trans", [False, True])
def test_paged_gather(is_trans: bool) -> None:
    g = torch.Generator().manual_seed(5)
    src = torch.randn(64, 24, generator=g)
    bt = torch.tensor([3, 0, 2, 1], dtype=torch.int32)
    idx = torch.tensor([0, 17, 5, 31, 16], dtype=torch.int32)
    out = _k("tensor.paged_gather")(src, idx, bt, block_size=16, size=8, col_off=4, max_indices=6, is_trans=is_trans)
    phys = bt[idx.long() // 16].long() * 16 + idx.long() % 16
    want = torch.zeros(6, 8)
    want[:5] = src[phys, 4:12]
    assert torch.equal(out, want.t() if is_trans else want)


def test_gather_row_transposed_goes_in_as_a_column() -> None:
    src = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    acc = torch.zeros(4, 3)
    out = _k("tile.gather_row")(acc, src, [0, 1], [2, 0], [1, 4], transpose=True)
    assert out[:, 1].tolist() == src[2].tolist() and out[:, [0, 2]].eq(0).all()


def test_store_rows_continue_into_the_next_slice() -> None:
    """A [6, 8] tile stored at [0, 0, 0] of a [2, 3, 8] tensor fills it (TSTORE's address arithmetic)."""
    tile = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    for args in ((), ([1, 6, 8],)):
        out = torch.zeros(2, 3, 8)
        _k("tile.store")(tile, [0, 0, 0], out, *args)
        assert torch.equal(out.reshape(-1), tile.reshape(-1))
    out = torch.zeros(2, 3, 8)
    _k("tile.store")(tile[:3], [1, 0, 0], out)  # rows that fit stay where they are
    assert torch.equal(out[1], tile[:3]) and out[0].eq(0).all()


def test_tensor_scatter_any_dim_and_the_later_write_wins() -> None:
    g = torch.Generator().manual_seed(4)
    inp = torch.randn(3, 4, 5, generator=g)
    idx = torch.stack([torch.randperm(3, generator=g)[:2] for _ in range(4 * 5)], dim=1).reshape(2, 4, 5)
    src = torch.randn(2, 4, 6, generator=g)  # larger than the index: only its leading part is read
    out = _k("tensor.scatter")(inp, idx.to(torch.int32), src, dim=0)
    assert torch.equal(out, torch.scatter(inp, 0, idx, src[:, :, :5]))
    clash = _k("tensor.scatter")(torch.zeros(1, 4), torch.tensor([[2, 2, 2]], dtype=torch.int32), torch.tensor([[1.0, 2.0, 3.0]]))
    assert clash.tolist() == [[0.0, 0.0, 3.0, 0.0]]


def test_mgather_mat_element_mode_stages_in_scratch_and_narrows_to_valid_shape() -> None:
    mem = torch.arange(64, dtype=torch.float32).reshape(8, 8)
    idx = torch.arange(16 * 8, dtype=torch.int32).reshape(16, 8) % 64
    scratch = torch.full((200,), -1.0)
    out = _k("tile.mgather")(mem, idx, scratch=scratch, valid_shape=[16, 4], coalesce=1, target_memory="Mat")
    full = mem.reshape(-1)[idx.long()]
    assert torch.equal(scratch[:128], full.reshape(-1)) and scratch[128:].eq(-1).all()
    assert get_valid(out) == (16, 4) and torch.equal(out[:, :4], full[:, :4]) and out[:, 4:].eq(0).all()
