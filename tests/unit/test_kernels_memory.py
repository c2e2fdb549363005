"""Memory / data-movement / layout kernels, with boundary (partial) tiles."""

from __future__ import annotations

import math

import pytest
import torch

from pypto_lsp.exec import context
from pypto_lsp.exec.kernels import KERNELS, NOOPS, MemPtr, ResultType
from pypto_lsp.exec.values import DTYPES, get_valid, valid_or_shape, with_valid

K = KERNELS


def rt(shape=None, dtype=None, valid=None, layout=None, space=None) -> ResultType:
    return ResultType(shape, dtype, valid, layout, space)


# ---------------------------------------------------------------------- values


def test_with_valid_attaches_on_a_fresh_alias() -> None:
    t = torch.zeros(4, 8)
    v = with_valid(t, (2, 8))
    assert v is not t
    assert get_valid(v) == (2, 8) and get_valid(t) is None
    v[0, 0] = 5.0  # same storage
    assert t[0, 0] == 5.0
    assert with_valid(v, [2, 8]) is v  # same valid already attached
    full = with_valid(v, (4, 8))  # valid == shape is stored as None
    assert get_valid(full) is None and valid_or_shape(full) == (4, 8)
    assert with_valid(t, None) is t


def test_dtypes_table() -> None:
    assert DTYPES["FP32"] == torch.float32
    assert DTYPES["BF16"] == torch.bfloat16
    assert DTYPES["UINT16"] == torch.int32
    assert DTYPES["UINT32"] == torch.int64
    assert DTYPES["INDEX"] == torch.int64
    assert DTYPES["FP8E4M3FN"] == torch.float32
    assert DTYPES["BOOL"] == torch.bool


# ---------------------------------------------------------------------- load / store


def test_load_full_window_is_a_copy() -> None:
    x = torch.randn(128, 64)
    t = K["tile.load"](x, [64, 0], [64, 64], [64, 64], target_memory="Vec")
    assert torch.equal(t, x[64:128])
    assert get_valid(t) is None
    t[0, 0] = 99.0
    assert x[64, 0] != 99.0


def test_load_past_the_end_zero_pads_and_sets_valid() -> None:
    x = torch.randn(100, 64)
    t = K["tile.load"](x, [64, 0], [64, 64], [64, 64], target_memory="Vec")
    assert t.shape == (64, 64)
    assert torch.equal(t[:36], x[64:])
    assert bool((t[36:] == 0).all())
    assert get_valid(t) == (36, 64)


def test_load_zeroes_outside_requested_valid() -> None:
    x = torch.randn(64, 64)
    t = K["tile.load"](x, [0, 0], [64, 64], [48, 40])
    assert get_valid(t) == (48, 40)
    assert torch.equal(t[:48, :40], x[:48, :40])
    assert bool((t[48:] == 0).all()) and bool((t[:, 40:] == 0).all())


def test_load_dynamic_offsets_and_partial_columns() -> None:
    x = torch.randn(32, 100)
    t = K["tile.load"](x, [8, 64], [16, 64], [16, 64])
    assert get_valid(t) == (16, 36)
    assert torch.equal(t[:, :36], x[8:24, 64:])


def test_load_nd_window_reshaped_to_declared_2d() -> None:
    x = torch.randn(2, 32, 64)
    t = K["tile.load"](x, [0, 0, 0], [2, 32, 64], [2, 32, 64], _rtype=rt((64, 64), torch.float32))
    assert t.shape == (64, 64)
    assert torch.equal(t, x.reshape(64, 64))
    # partial leading dim -> prefix rows valid
    t = K["tile.load"](x, [0, 0, 0], [2, 32, 64], [1, 32, 64], _rtype=rt((64, 64), torch.float32))
    assert get_valid(t) == (32, 64)
    assert bool((t[32:] == 0).all())


def test_load_without_rtype_keeps_window_rank() -> None:
    x = torch.randn(2, 4, 8)
    t = K["tile.load"](x, [1, 0, 0], [1, 4, 8], [1, 4, 8], _rtype=None)
    assert t.shape == (1, 4, 8) and torch.equal(t[0], x[1])


def test_store_writes_only_the_valid_region() -> None:
    out = torch.zeros(64, 64)
    t = with_valid(torch.ones(64, 64), (10, 20))
    res = K["tile.store"](t, [0, 0], out)
    assert res is out
    assert out.sum() == 200.0 and out[:10, :20].sum() == 200.0


def test_store_partial_tile_clamps_at_tensor_edge() -> None:
    # The reference: valid lost through a compute op -> 64-row store into 36 rows -> crash.
    x = torch.randn(100, 64)
    out = torch.zeros(100, 64)
    for i in range(0, 100, 64):
        t = K["tile.load"](x, [i, 0], [64, 64], [min(64, 100 - i), 64])
        u = K["tile.adds"](t, 1.0)  # fresh tensor: no valid metadata
        K["tile.store"](u, [i, 0], out)
    assert torch.allclose(out, x + 1.0)


def test_store_atomic_add() -> None:
    out = torch.ones(4, 4)
    t = torch.full((2, 2), 3.0)
    K["tile.store"](t, [1, 1], out, atomic="Add")
    assert out[1, 1] == 4.0 and out[0, 0] == 1.0
    K["tile.store"](t, [1, 1], out, atomic="None_")
    assert out[1, 1] == 3.0


def test_store_with_nd_shapes_reshapes_2d_tile() -> None:
    out = torch.zeros(2, 32, 32)
    tile0 = torch.randn(32, 32)
    tile1 = torch.randn(32, 32)
    K["tile.store"](tile0, [0, 0, 0], out, [1, 32, 32])
    K["tile.store"](tile1, [1, 0, 0], out, [1, 32, 32])
    assert torch.equal(out[0], tile0) and torch.equal(out[1], tile1)


def test_store_nd_shapes_with_partial_rows() -> None:
    out = torch.zeros(2, 8, 4)
    t = with_valid(torch.ones(16, 4), (12, 4))  # flattened [2, 8, 4], 12 of 16 rows valid
    K["tile.store"](t, [0, 0, 0], out, [2, 8, 4])
    assert out[0].sum() == 32.0  # first 8 rows all written
    assert out[1, :4].sum() == 16.0 and out[1, 4:].sum() == 0.0  # then 4 more, not a rounded-up box


def test_store_2d_tile_into_3d_tensor_without_shapes() -> None:
    out = torch.zeros(3, 4, 5)
    K["tile.store"](torch.ones(4, 5), [2, 0, 0], out)
    assert out[2].sum() == 20.0 and out[:2].sum() == 0.0


@pytest.mark.parametrize("name", ["tensor.assemble", "tile.assemble"])
def test_assemble_in_place_with_valid_and_atomic(name: str) -> None:
    target = torch.zeros(8, 8)
    src = with_valid(torch.full((4, 4), 2.0), (3, 4))
    res = K[name](target, src, [4, 4])
    assert res is target
    assert target.sum() == 2.0 * 12 and target[7].sum() == 0.0
    K[name](target, torch.ones(2, 2), [6, 6], atomic="Add")
    assert target[6, 6] == 3.0 and target[7, 7] == 1.0


# ---------------------------------------------------------------------- slices and views


def test_tensor_slice_in_bounds_is_a_view() -> None:
    x = torch.zeros(8, 8)
    s = K["tensor.slice"](x, [4, 4], [2, 2])
    s[0, 0] = 7.0
    assert x[2, 2] == 7.0


def test_slice_overhang_zero_pads_and_valid_is_cut() -> None:
    x = torch.randn(6, 8)
    s = K["tile.slice"](x, [4, 8], [4, 0])
    assert s.shape == (4, 8)
    assert torch.equal(s[:2], x[4:]) and bool((s[2:] == 0).all())
    assert get_valid(s) == (2, 8)


def test_slice_valid_shape_and_source_valid_shift() -> None:
    x = with_valid(torch.randn(16, 16), (10, 16))
    s = K["tile.slice"](x, [8, 8], [8, 0], [8, 4])
    assert get_valid(s) == (2, 4)  # source valid 10 rows shifted by 8 -> 2; requested cols 4
    s2 = K["tensor.slice"](x, [8, 8], [0, 0], [])  # empty valid_shape tuple = none
    assert get_valid(s2) is None


def test_slice_drop_dims() -> None:
    x = torch.randn(4, 6, 8)
    s = K["tensor.slice"](x, [1, 6, 8], [2, 0, 0], [], [0])
    assert s.shape == (6, 8) and torch.equal(s, x[2])
    t = K["tile.slice"](torch.randn(4, 8), [1, 8], [3, 0], [], [0])
    assert t.shape == (1, 8)  # tiles stay 2-D


def test_extract() -> None:
    x = torch.randn(64, 128)
    e = K["tile.extract"](x, 16, 64, [32, 64], target_memory="Left")
    assert torch.equal(e, x[16:48, 64:128])


def test_tensor_view_reshape_aliases_storage() -> None:
    x = torch.zeros(2, 32, 64)
    v = K["tensor.view"](x, [64, 64], _rtype=rt((64, 64), torch.float32, None, "ND"))
    assert v.shape == (64, 64)
    K["tile.store"](torch.ones(32, 64), [32, 0], v)
    assert x[1].sum() == 32 * 64 and x[0].sum() == 0


def test_tensor_view_dn_layout() -> None:
    x = torch.arange(12.0)
    v = K["tensor.view"](x, [3, 4], layout="DN")
    ref = torch.as_strided(x, (3, 4), (1, 3))
    assert torch.equal(v, ref)
    v2 = K["tensor.view"](x, [3, 4], _rtype=rt((3, 4), torch.float32, None, "DN"))
    assert torch.equal(v2, ref)


def test_tensor_view_one_arg_layout_flip() -> None:
    x = torch.randn(4, 6)
    v = K["tensor.view"](x, _rtype=rt((6, 4), torch.float32, None, "DN"))
    assert torch.equal(v, x.mT)
    same = K["tensor.view"](x, _rtype=rt((4, 6), torch.float32, None, "ND"))
    assert torch.equal(same, x)
    sq = torch.randn(4, 4)
    assert torch.equal(K["tensor.view"](sq, layout="DN"), sq.mT)


def test_tensor_view_valid_shape() -> None:
    v = K["tensor.view"](torch.zeros(4, 8), [8, 4], [6, 4])
    assert get_valid(v) == (6, 4)


def test_reshape_carries_valid() -> None:
    t = with_valid(torch.randn(64, 1), (48, 1))
    r = K["tile.reshape"](t, [1, 64])
    assert r.shape == (1, 64) and get_valid(r) == (1, 48)
    r2 = K["tensor.reshape"](torch.randn(4, 8), [8, 4], [5, 4])
    assert get_valid(r2) == (5, 4)
    r3 = K["tile.reshape"](torch.randn(4, 8), [32])
    assert r3.shape == (32,) and get_valid(r3) is None


def test_transpose_and_transpose_view() -> None:
    x = with_valid(torch.randn(4, 6), (3, 6))
    t = K["tile.transpose"](x, 0, 1, torch.zeros(6, 4))
    assert torch.equal(t, x.transpose(0, 1)) and get_valid(t) == (6, 3)
    tv = K["tile.transpose_view"](x)
    assert torch.equal(tv, x.mT) and get_valid(tv) == (6, 3)
    tt = K["tensor.transpose"](torch.randn(2, 3, 4), 1, 2, [2, 4, 2])
    assert tt.shape == (2, 4, 3) and get_valid(tt) == (2, 4, 2)


def test_concat() -> None:
    a, b = torch.randn(4, 3), torch.randn(4, 5)
    assert torch.equal(K["tile.concat"](a, b), torch.cat([a, b], -1))


# ---------------------------------------------------------------------- fillpad


def test_fillpad_zero_and_inf() -> None:
    x = torch.randn(64, 64)
    t = K["tile.load"](x, [0, 0], [64, 64], [48, 64])
    z = K["tile.fillpad"](t, pad_value="zero")
    assert torch.equal(z[:48], x[:48]) and bool((z[48:] == 0).all())
    mx = K["tile.fillpad"](t, pad_value="max")
    assert bool((mx[48:] == math.inf).all())  # the reference pads finfo.max
    mn = K["tile.fillpad"](t, pad_value="min")
    assert bool((mn[48:] == -math.inf).all())
    assert get_valid(mx) is None


def test_fillpad_max_feeds_row_min_like_hardware() -> None:
    x = torch.randn(4, 8)
    t = with_valid(x.clone(), (4, 5))
    p = K["tile.fillpad"](t, pad_value="max")
    assert torch.allclose(p.amin(-1, keepdim=True), x[:, :5].amin(-1, keepdim=True))


def test_fillpad_int_and_noop() -> None:
    t = with_valid(torch.zeros(2, 4, dtype=torch.int32), (1, 4))
    p = K["tensor.fillpad"](t, pad_value="max")
    assert p[1, 0] == torch.iinfo(torch.int32).max and p[0, 0] == 0
    full = torch.randn(2, 2)
    assert torch.equal(K["tile.fillpad"](full, pad_value="zero"), full)


def test_fillpad_expand() -> None:
    t = with_valid(torch.ones(2, 2), (1, 2))
    out = K["tile.fillpad_expand"](t, [3, 4], pad_value="min")
    assert out.shape == (3, 4) and out[0, 0] == 1.0 and out[1, 0] == -math.inf and out[0, 3] == -math.inf


def test_set_validshape() -> None:
    t = torch.randn(8, 8)
    v = K["tile.set_validshape"](t, 3, 5)
    assert get_valid(v) == (3, 5) and get_valid(t) is None
    out = torch.zeros(8, 8)
    K["tile.store"](v, [0, 0], out)
    assert torch.count_nonzero(out) <= 15 and torch.equal(out[:3, :5], t[:3, :5])


# ---------------------------------------------------------------------- misc


def test_create_full_alloc_move() -> None:
    c = K["tile.create"]([4, 8], dtype=torch.bfloat16, target_memory="Vec")
    assert c.shape == (4, 8) and c.dtype == torch.bfloat16
    f = K["tile.full"]([2, 3], dtype=torch.int32, value=7)
    assert f.dtype == torch.int32 and bool((f == 7).all())
    ti = K["tensor.create"]([2, 2], dtype=torch.float32, layout="ND", init_value=1.5)
    assert bool((ti == 1.5).all())  # the reference ignores init_value
    p = K["tile.alloc"]("Vec", 16384)
    assert isinstance(p, MemPtr) and p.size == 16384
    assert K["tile.move"](c, target_memory="Left") is c


def test_read_write_dim() -> None:
    t = torch.arange(12.0).reshape(3, 4)
    v = K["tile.read"](t, [1, 2])
    assert v == 6.0 and isinstance(v, float)
    w = K["tensor.write"](t, [2, 3], 100.0)
    assert w is t and t[2, 3] == 100.0
    assert K["tensor.dim"](t, 1) == 4 and isinstance(K["tensor.dim"](t, 1), int)
    assert K["tensor.read"](torch.tensor([5, 6], dtype=torch.int32), [1]) == 6


def test_scatter_update_rows_in_place() -> None:
    x = torch.zeros(5, 3)
    src = torch.arange(6.0).reshape(2, 3)
    idx = torch.tensor([[4], [1]], dtype=torch.int32)
    r = K["tile.scatter_update"](x, idx, src)
    assert r is x
    assert torch.equal(x[4], src[0]) and torch.equal(x[1], src[1]) and x[0].sum() == 0


def test_scatter_update_reads_a_4d_input_as_blocks_times_block_size_rows() -> None:
    # PyPTO's tensor_ops.py: input [blockNum, blockSize, 1, d], src [b, s, 1, d], index [b, s],
    # input row index.flat[k] (linear over blockNum * blockSize) = src row k. Indexing dim -2 of
    # the 4-D input (size 1) as the 2-D rule does would refuse row 5.
    x = torch.zeros(2, 4, 1, 3)
    src = torch.arange(12.0).reshape(2, 2, 1, 3)
    idx = torch.tensor([[5, 0], [7, 2]], dtype=torch.int32)
    r = K["tensor.scatter_update"](x, idx, src, dim=-2)
    assert r is x
    rows = x.reshape(8, 3)
    for k, row in enumerate([5, 0, 7, 2]):
        assert torch.equal(rows[row], src.reshape(4, 3)[k])
    assert rows[[1, 3, 4, 6]].abs().sum() == 0


def test_scatter_update_later_row_wins_a_repeated_index() -> None:
    # PyPTO's ST TileScatterUpdateDuplicateIndicesTestCase: the later flat index wins.
    x = torch.ones(6, 2)
    src = torch.arange(1.0, 9.0).reshape(4, 2) * 10
    idx = torch.tensor([[0, 1], [0, 1]], dtype=torch.int32)
    K["tile.scatter_update"](x, idx, src)
    assert x[0].tolist() == [50.0, 60.0] and x[1].tolist() == [70.0, 80.0] and x[2:].eq(1).all()


def test_scatter_update_out_of_range_and_other_dims_are_said_in_the_irs_terms() -> None:
    with pytest.raises(IndexError, match=r"scatter_update: index 9 \(entry 1\) is outside the input's 5 rows"):
        K["tile.scatter_update"](torch.zeros(5, 3), torch.tensor([[1], [9]], dtype=torch.int32), torch.ones(2, 3))
    with pytest.raises(ValueError, match="only dim=-2 is defined, got dim=-1"):
        K["tile.scatter_update"](torch.zeros(5, 3), torch.tensor([[1]], dtype=torch.int32), torch.ones(1, 3), dim=-1)
    with pytest.raises(ValueError, match=r"2 indices take 2 source rows of 3, got a source of shape \[3, 3\]"):
        K["tile.scatter_update"](torch.zeros(5, 3), torch.tensor([[1], [2]], dtype=torch.int32), torch.ones(3, 3))


def test_scatter_update_writes_through_a_strided_input() -> None:
    base = torch.zeros(3, 8)
    x = base[:, ::2]  # [3, 4], not contiguous
    K["tile.scatter_update"](x, torch.tensor([[2]], dtype=torch.int32), torch.full((1, 4), 7.0))
    assert base[2, ::2].eq(7).all() and base[2, 1::2].eq(0).all() and base[:2].eq(0).all()


def test_block_and_subblock_indices() -> None:
    assert K["tile.get_block_idx"]() == 0 and K["tile.get_block_num"]() == 1
    with context.spmd_block(3, 4):
        assert K["tile.get_block_idx"]() == 3 and K["tensor.get_block_num"]() == 4
    assert K["tile.get_subblock_idx"]() == 0
    with context.subblock(1):
        assert K["tile.get_subblock_idx"]() == 1
    assert K["tile.get_subblock_idx"]() == 0


def test_ci_and_tri() -> None:
    c = K["tile.ci"](5, [1, 4], dtype=torch.int32)
    assert c.tolist() == [[5, 6, 7, 8]]
    d = K["tile.ci"](5, [1, 3], dtype=torch.int32, descending=True)
    assert d.tolist() == [[5, 4, 3]]
    t = K["tile.tri"](0, [3, 3], dtype=torch.float32)
    assert torch.equal(t, torch.tril(torch.ones(3, 3)))
    u = K["tile.tri"](1, [3, 3], upper=True)
    assert torch.equal(u, torch.triu(torch.ones(3, 3, dtype=torch.int32), 1))


def test_gather_row() -> None:
    dst = torch.zeros(4, 6)
    src = torch.randn(10, 6)
    out = K["tile.gather_row"](dst, src, [2, 0], [7, 0], [1, 6])
    assert torch.equal(out[2], src[7]) and dst.sum() == 0


def test_noops_return_none() -> None:
    assert len(NOOPS) == 16
    for name in NOOPS:
        assert K[name](torch.zeros(1), split=0, name="x") is None


def test_every_reference_op_has_a_kernel() -> None:
    catalogue = pytest.importorskip("pypto_lsp.ir.catalogue")
    names = set(catalogue.REFERENCE_SUPPORTED) | set(catalogue.NOOP_OPS) | set(catalogue.EXECUTOR_EXTRAS)
    names |= set(catalogue.SORT_RANDOM_MX_EXECUTED)
    missing = sorted(n for n in names if n not in K)
    assert not missing
