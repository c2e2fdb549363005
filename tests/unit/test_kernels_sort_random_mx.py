"""Sorts, the random generator and MX matmul against plain torch (exec/kernels/sorting.py,
philox.py, matmul_mx.py), and golden tensors in the harness's storage dtypes (exec/stored_dtypes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pypto_lsp.exec.kernels import KERNELS as K
from pypto_lsp.exec.stored_dtypes import decode_stored, representable
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.differential import reference, synthesize
from pypto_lsp.validate.engine import run_text


def _unpack(pairs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Values and indices (int32 bits) of a packed FP32 pair tile."""
    return pairs[..., 0::2], pairs.contiguous().view(torch.int32)[..., 1::2]


# ---------------------------------------------------------------------- sort32


def test_sort32_sorts_each_32_block_descending_with_its_indices() -> None:
    g = torch.Generator().manual_seed(1)
    src = torch.randn(3, 96, generator=g)
    idx = torch.arange(1000, 1096, dtype=torch.int64).expand(3, 96)  # UINT32 held as int64
    out = K["tile.sort32"](src, idx)
    assert out.shape == (3, 192) and out.dtype == torch.float32
    vals, ids = _unpack(out)
    for b in range(3):
        block = src[:, 32 * b : 32 * (b + 1)]
        want_v, order = torch.sort(block, dim=-1, descending=True)
        assert torch.equal(vals[:, 32 * b : 32 * (b + 1)], want_v)
        assert torch.equal(ids[:, 32 * b : 32 * (b + 1)], (order + 1000 + 32 * b).to(torch.int32))


def test_sort32_ties_keep_position_order_and_idx_broadcasts() -> None:
    src = torch.tensor([[1.0, 3.0, 1.0, 3.0] * 8])
    idx = torch.arange(32, dtype=torch.int32).reshape(1, 32)
    _, ids = _unpack(K["tile.sort32"](src.expand(2, 32), idx))
    assert ids[0, :4].tolist() == [1, 3, 5, 7]
    assert torch.equal(ids[0], ids[1])


def test_sort32_tail_block_and_fp16_refused() -> None:
    src = torch.tensor([[0.0] * 32 + [5.0, -1.0, 7.0]])  # a 3-element tail after one full block
    vals, ids = _unpack(K["tile.sort32"](src, torch.arange(35).reshape(1, 35)))
    assert vals.shape == (1, 35)
    assert vals[0, 32:].tolist() == [7.0, 5.0, -1.0] and ids[0, 32:].tolist() == [34, 32, 33]
    with pytest.raises(ValueError, match="FP32 only"):
        K["tile.sort32"](src.half(), torch.arange(35).reshape(1, 35))


# ---------------------------------------------------------------------- merges


def _sorted_runs(values: torch.Tensor) -> torch.Tensor:
    return K["tile.sort32"](values, torch.arange(values.shape[-1]).expand(values.shape))


def test_mrgsort_format1_chain_sorts_the_whole_row() -> None:
    g = torch.Generator().manual_seed(2)
    src = torch.randn(1, 2048, generator=g)
    t = _sorted_runs(src)
    for i in range(3):
        t = K["tile.mrgsort_format1"](t, 1 << (6 + 2 * i))
    vals, ids = _unpack(t)
    want_v, order = torch.sort(src, dim=-1, descending=True)
    assert torch.equal(vals, want_v)
    assert torch.equal(ids, order.to(torch.int32))


def test_mrgsort_format1_one_pass_merges_groups_of_four_runs() -> None:
    src = torch.randn(1, 256, generator=torch.Generator().manual_seed(3))
    vals, _ = _unpack(K["tile.mrgsort_format1"](_sorted_runs(src), 64))
    for g in range(2):  # 256 values = 8 runs of 32 pairs = 2 groups of 4
        part = src[0, 128 * g : 128 * (g + 1)]
        assert torch.equal(vals[0, 128 * g : 128 * (g + 1)], torch.sort(part, descending=True).values)


def test_merge_is_greedy_not_a_sort() -> None:
    # runs that are not sorted merge as the device merges them: heads compared, never a sort
    pairs = torch.zeros(1, 256)
    pairs[0, 0:64:2] = torch.tensor([1.0, 5.0] + [0.0] * 30)
    pairs[0, 64:128:2] = torch.tensor([3.0, 2.0] + [0.0] * 30)
    pairs[0, 128::2] = -1.0
    vals, _ = _unpack(K["tile.mrgsort_format1"](pairs, 64))
    assert vals[0, :4].tolist() == [3.0, 2.0, 1.0, 5.0]


def test_mrgsort_format2_two_and_four_way() -> None:
    g = torch.Generator().manual_seed(4)
    lists = [torch.randn(1, 32, generator=g) for _ in range(4)]
    packed = [_sorted_runs(v) for v in lists]
    two = K["tile.mrgsort_format2"](packed[0], packed[1], torch.zeros(1, 128))
    assert torch.equal(_unpack(two)[0], torch.sort(torch.cat(lists[:2], -1), descending=True).values)
    four = K["tensor.mrgsort_format2"](*packed)
    assert four.shape == (1, 256)
    assert torch.equal(_unpack(four)[0], torch.sort(torch.cat(lists, -1), descending=True).values)


def test_mrgsort_format2_exhausted_stops_at_the_first_empty_list() -> None:
    a = _sorted_runs(torch.arange(32, dtype=torch.float32).reshape(1, 32) + 100)  # all larger
    b = _sorted_runs(torch.arange(32, dtype=torch.float32).reshape(1, 32))
    out = K["tile.mrgsort_format2"](a, b, torch.zeros(1, 128), exhausted=True)
    vals, _ = _unpack(out)
    assert vals[0, :32].min() >= 100 and bool((vals[0, 32:] == 0).all())


# ---------------------------------------------------------------------- unpacking (gather_mask, gather_scatter.py)


def test_gather_mask_output_dtype_reads_index_bits() -> None:
    pairs = K["tile.sort32"](torch.tensor([[2.0, 9.0] + [0.0] * 30]), torch.tensor([[4000000000, 7] + [0] * 30]))
    idx = K["tile.gather_mask"](pairs, mask_pattern="P1010", output_dtype=torch.int64)  # UINT32
    assert idx[0, :2].tolist() == [7, 4000000000]
    with pytest.raises(ValueError, match="mask_pattern"):
        K["tile.gather_mask"](pairs, mask_pattern=9)


# ---------------------------------------------------------------------- random


def _trandom_reference(key: tuple[int, int], ctr: tuple[int, ...], rows: int, cols: int, vr: int, vc: int, rounds: int) -> list[list[int]]:
    """pto-isa include/pto/cpu/TRandom.hpp, element by element, in plain Python integers."""
    m32 = 0xFFFFFFFF
    out = [[0] * cols for _ in range(rows)]
    row_ctr = sum(c << (32 * i) for i, c in enumerate(ctr))
    loops = -(-vc // 256)
    for r in range(vr):
        for lp in range(loops):
            for lane in range(64):
                c = [((row_ctr + lane) >> (32 * i)) & m32 for i in range(4)]
                k0, k1 = key
                for _ in range(rounds):
                    p0, p1 = c[0] * 0xD2511F53, c[2] * 0xCD9E8D57
                    c = [(p1 >> 32) ^ c[1] ^ k0, p1 & m32, (p0 >> 32) ^ c[3] ^ k1, p0 & m32]
                    k0, k1 = (k0 + 0x9E3779B9) & m32, (k1 + 0xBB67AE85) & m32
                for rep in range(4):
                    col = lp * 256 + rep * 64 + lane
                    if col < vc:
                        out[r][col] = c[rep]
            row_ctr += cols // 4
    return out


def test_random_matches_the_pto_isa_cpu_model() -> None:
    got = K["tile.random"](0x1234, 0x5678, 1, 2, 3, 4, [3, 512], [2, 300], dtype=torch.int64, rounds=7)
    want = _trandom_reference((0x1234, 0x5678), (1, 2, 3, 4), 3, 512, 2, 300, 7)
    assert got.tolist() == want
    # a seed counter whose low words carry into the next (INT32 scalars: -1 is 0xFFFFFFFF)
    got = K["tile.random"](7, 8, -1, -1, 5, 6, [1, 256], dtype=torch.int64, rounds=10)
    assert got.tolist() == _trandom_reference((7, 8), (0xFFFFFFFF, 0xFFFFFFFF, 5, 6), 1, 256, 1, 256, 10)


def test_random_is_deterministic_and_seed_dependent() -> None:
    a = K["tile.random"](4660, 22136, 1, 2, 3, 4, [4, 256], dtype=torch.int64, rounds=10)
    b = K["tensor.random"](4660, 22136, 1, 2, 3, 4, [4, 256], dtype=torch.int64, rounds=10)
    c = K["tile.random"](4660, 22136, 1, 2, 3, 5, [4, 256], dtype=torch.int64, rounds=10)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert int(a.min()) >= 0 and int(a.max()) > 2**31  # full 32-bit range as UINT32
    i32 = K["tile.random"](4660, 22136, 1, 2, 3, 4, [4, 256], dtype=torch.int32, rounds=10)
    assert i32.dtype == torch.int32 and torch.equal(i32.to(torch.int64) & 0xFFFFFFFF, a)
    with pytest.raises(ValueError, match="rounds"):
        K["tile.random"](1, 2, 3, 4, 5, 6, [4, 256], dtype=torch.int32, rounds=8)


# ---------------------------------------------------------------------- MX matmul


def _pack_a(codes: torch.Tensor) -> torch.Tensor:
    m, g = codes.shape
    return codes.reshape(m // 16, 16, g // 2, 2).permute(0, 2, 1, 3).reshape(m, g)


def _pack_b(codes: torch.Tensor) -> torch.Tensor:
    g, n = codes.shape
    return codes.reshape(g // 2, 2, n // 16, 16).permute(2, 0, 3, 1).reshape(g, n)


def test_matmul_mx_dequantises_with_physical_scales() -> None:
    g = torch.Generator().manual_seed(5)
    m, k, n = 32, 128, 64
    a = torch.randint(-3, 4, (m, k), generator=g).float()
    b = torch.randint(-3, 4, (k, n), generator=g).float()
    sa = torch.randint(120, 134, (m, k // 32), generator=g)
    sb = torch.randint(120, 134, (k // 32, n), generator=g)
    grp = torch.arange(k) // 32
    want = ((a.double() * torch.pow(2.0, sa.double() - 127)[:, grp]) @ (b.double() * torch.pow(2.0, sb.double() - 127)[grp, :])).float()
    pa = torch.pow(2.0, _pack_a(sa).float() - 127)  # decoded E8M0 bytes in MX_A_ZZ order
    pb = torch.pow(2.0, _pack_b(sb).float() - 127)
    got = K["tile.matmul_mx"](a, pa, b, pb)
    assert got.dtype == torch.float32 and torch.equal(got, want)
    assert torch.equal(K["tile.matmul_mx_acc"](got, a, pa, b, pb), 2 * want)
    bias = torch.randn(1, n, generator=g)
    assert torch.equal(K["tile.matmul_mx_bias"](a, pa, b, pb, bias), want + bias)
    # the logical scales read as if physical give another product (the layouts matter here)
    assert not torch.equal(K["tile.matmul_mx"](a, torch.pow(2.0, sa.float() - 127), b, pb), want)
    assert K["tile.tget_scale_addr"](pa, a) is pa


def test_matmul_mx_refuses_scales_off_the_block_grid() -> None:
    with pytest.raises(ValueError, match="MX_A_ZZ"):
        K["tile.matmul_mx"](torch.ones(8, 64), torch.ones(8, 2), torch.ones(64, 16), torch.ones(2, 16))


# ---------------------------------------------------------------------- stored dtypes


def test_decode_stored_dtypes() -> None:
    codes = torch.arange(16, dtype=torch.uint8)
    packed = (codes[1::2] << 4) | codes[0::2]
    fp4 = decode_stored("FP4", packed.reshape(1, 8).view(torch.float4_e2m1fn_x2))
    assert fp4.shape == (1, 16) and fp4.dtype == torch.float32
    assert fp4[0].tolist() == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
    e8 = decode_stored("FP8E8M0", torch.tensor([[126, 127, 130]], dtype=torch.uint8).view(torch.float8_e8m0fnu))
    assert e8.tolist() == [[0.5, 1.0, 8.0]]
    f8 = torch.tensor([[-2.0, 0.375, 448.0]]).to(torch.float8_e4m3fn)
    assert decode_stored("FP8E4M3FN", f8).tolist() == [[-2.0, 0.375, 448.0]]
    same = torch.ones(2)
    assert decode_stored("FP8E4M3FN", same) is same  # not a storage dtype of FP8: the dtype check speaks
    assert decode_stored("INT32", torch.ones(2, dtype=torch.int32)).dtype == torch.int32


_MX_DUMP = """\
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def main(self, a: pl.Tensor[[2, 4], pl.FP4], s: pl.Tensor[[2, 4], pl.FP8E8M0], u: pl.Tensor[[2, 4], pl.UINT32], out: pl.Out[pl.Tensor[[2, 4], pl.FP32]]) -> pl.Tensor[[2, 4], pl.FP32]:
        ta: pl.Tile[[2, 4], pl.FP4] = pl.tile.load(a, [0, 0], [2, 4], [2, 4])
        ts: pl.Tile[[2, 4], pl.FP8E8M0] = pl.tile.load(s, [0, 0], [2, 4], [2, 4])
        t: pl.Tile[[2, 4], pl.FP32] = pl.tile.mul(ta, ts)
        return pl.tile.store(t, [0, 0], out)
"""


def test_golden_bundle_in_storage_dtypes_is_accepted() -> None:
    codes = torch.tensor([[1, 2, 3, 4], [9, 10, 11, 7]], dtype=torch.uint8)
    a = ((codes[:, 1::2] << 4) | codes[:, 0::2]).contiguous().view(torch.float4_e2m1fn_x2)  # [2, 2] stored
    s = torch.full((2, 4), 128, dtype=torch.uint8).view(torch.float8_e8m0fnu)  # 2.0 each
    u = torch.tensor([[-1, 0, 1, 2]] * 2, dtype=torch.int32)
    vals = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
    want = vals[codes.long()] * 2
    inputs = {"a": a, "s": s, "u": u, "out": torch.zeros(2, 4)}
    r = run_text(_MX_DUMP, inputs, {"out": want}, rtol=0, atol=0)
    assert r.status == "pass", r.error
    bad = run_text(_MX_DUMP, inputs, {"out": want + 1}, rtol=0, atol=0)
    assert bad.status == "fail"


_RANDOM_DUMP = """\
import pypto.language as pl

@pl.program
class R:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, output: pl.Out[pl.Tensor[[4, 256], pl.INT32]]) -> pl.Tensor[[4, 256], pl.INT32]:
        a: pl.Tile[[4, 256], pl.INT32, pl.Mem.Vec] = pl.tile.random(pl.const(4660, pl.INT32), pl.const(22136, pl.INT32), \
pl.const(1, pl.INT32), pl.const(2, pl.INT32), pl.const(3, pl.INT32), pl.const(4, pl.INT32), [4, 256], dtype=pl.INT32, rounds=10)
        return pl.tile.store(a, [0, 0], output)
"""


def test_differential_mode_compares_random(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No goldens: the earliest dump's draw is the reference; a pass that changes the rounds diverges."""
    monkeypatch.setenv("PYPTO_LSP_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "passes_dump"
    d.mkdir()
    (d / "00_frontend.py").write_text(_RANDOM_DUMP)
    (d / "01_after_Same.py").write_text(_RANDOM_DUMP)
    (d / "02_after_Rounds.py").write_text(_RANDOM_DUMP.replace("rounds=10", "rounds=7"))
    ref = reference(sorted(d.iterdir()), use_cache=False)
    assert set(ref.expected) == {"output"} and bool((ref.expected["output"] != 0).any())
    same = run_text((d / "01_after_Same.py").read_text(), ref.inputs, ref.expected, rtol=0, atol=0)
    other = run_text((d / "02_after_Rounds.py").read_text(), ref.inputs, ref.expected, rtol=0, atol=0)
    assert (same.status, other.status) == ("pass", "fail")


def test_synthesized_mx_inputs_hold_representable_values() -> None:
    text = _MX_DUMP.replace("pl.FP4]", "pl.FP8E4M3FN]", 1)
    prog = parse_text(text).program
    assert prog is not None
    inputs, _ = synthesize(prog, "main", {"u": {"low": 0, "high": 4}})
    a, s = inputs["a"], inputs["s"]
    assert a.dtype == torch.float32 and torch.equal(a, a.to(torch.float8_e4m3fn).float())
    assert bool((torch.log2(s) == torch.round(torch.log2(s))).all())  # E8M0: powers of two
    fp4 = representable("FP4", torch.tensor([0.2, -0.8, 2.6, 100.0]))
    assert fp4.tolist() == [0.0, -1.0, 3.0, 6.0]


_TENSOR_SORT_DUMP = """\
import pypto.language as pl

@pl.program
class S:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, src: pl.Tensor[[1, 512], pl.FP32], idx: pl.Tensor[[1, 512], pl.UINT32], vals: pl.Out[pl.Tensor[[1, 512], pl.FP32]], \
ids: pl.Out[pl.Tensor[[1, 512], pl.UINT32]]) -> tuple[pl.Tensor[[1, 512], pl.FP32], pl.Tensor[[1, 512], pl.UINT32]]:
        with pl.at(level=pl.Level.CORE_GROUP):
            s: pl.Tensor[[1, 1024], pl.FP32] = pl.tensor.sort32(src, idx)
            m1: pl.Tensor[[1, 1024], pl.FP32] = pl.tensor.mrgsort_format1(s, 64)
            m2: pl.Tensor[[1, 1024], pl.FP32] = pl.tensor.mrgsort_format1(m1, 256)
            left: pl.Tensor[[1, 512], pl.FP32] = pl.tensor.slice(m2, [1, 512], [0, 0])
            right: pl.Tensor[[1, 512], pl.FP32] = pl.tensor.slice(m2, [1, 512], [0, 512])
            merged: pl.Tensor[[1, 1024], pl.FP32] = pl.tensor.mrgsort_format2(left, right)
            v: pl.Tensor[[1, 512], pl.FP32] = pl.tensor.gather_mask(merged, mask_pattern=1)
            i: pl.Tensor[[1, 512], pl.UINT32] = pl.tensor.gather_mask(merged, mask_pattern=2, output_dtype=pl.UINT32)
            vals: pl.Tensor[[1, 512], pl.FP32] = pl.tensor.assemble(vals, v, [0, 0])
            ids: pl.Tensor[[1, 512], pl.UINT32] = pl.tensor.assemble(ids, i, [0, 0])
        return vals, ids
"""


def test_tensor_level_sort_pipeline_runs_from_a_dump() -> None:
    """tensor.sort32 -> 2x tensor.mrgsort_format1 (one sorted run of 512) -> tensor.mrgsort_format2 of its halves
    -> tensor.gather_mask values and UINT32 indices (harness storage: int32 bits)."""
    src = torch.randn(1, 512, generator=torch.Generator().manual_seed(6))
    want_v, order = torch.sort(src, dim=-1, descending=True)
    inputs = {
        "src": src,
        "idx": torch.arange(512, dtype=torch.int32).reshape(1, 512),
        "vals": torch.zeros(1, 512),
        "ids": torch.zeros(1, 512, dtype=torch.int32),
    }
    r = run_text(_TENSOR_SORT_DUMP, inputs, {"vals": want_v, "ids": order.to(torch.int32)}, rtol=0, atol=0)
    assert r.status == "pass", (r.error, r.tensors)


_MX_CASE = Path(__file__).resolve().parents[3] / "shared" / "fixtures-coverage" / "matmul_mx_fp8_950"


@pytest.mark.skipif(not _MX_CASE.is_dir(), reason="shared coverage fixtures not available")
def test_tget_scale_addr_is_the_same_bytes_for_the_memory_model() -> None:
    """After AllocateMemoryAddr the bound scale tile shares its MemRef with the scale tile it binds
    (pypto: output_reuses_input(0)); reading the scale again for the second matmul is no overwrite."""
    from pypto_lsp.validate.golden import load_bundle

    f = _MX_CASE / "passes_dump" / "49_after_MaterializeValidShapeSymbols.py"
    inputs, expected = load_bundle(_MX_CASE / "tensors.pt"), load_bundle(_MX_CASE / "expected.pt")
    r = run_text(f.read_text(), inputs, expected, filename=str(f), rtol=0, atol=0, memory=True)
    assert r.memory is not None and r.memory["checked"] and r.memory["hazards"] == []
    assert r.status == "pass", r.error


_U32_DUMP = """\
import pypto.language as pl

@pl.program
class U:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, x: pl.Tensor[[1, 4], pl.UINT32], out: pl.Out[pl.Tensor[[1, 4], pl.UINT32]]) -> pl.Tensor[[1, 4], pl.UINT32]:
        d: pl.Tensor[[1, 4], pl.UINT32] = pl.tensor.adds(x, 1)
        out: pl.Tensor[[1, 4], pl.UINT32] = pl.tensor.assemble(out, d, [0, 0])
        return out
"""


@pytest.mark.parametrize("stored", [torch.int32, torch.uint32])
def test_uint32_bits_in_and_out_wrap_at_32_bits(stored: torch.dtype) -> None:
    values = torch.tensor([[0, 2**31 - 1, 2**31, 2**32 - 1]], dtype=torch.int64)
    bits = (values & 0xFFFFFFFF).to(torch.int32) if stored == torch.int32 else values.to(torch.uint32)
    plus = ((values + 1) & 0xFFFFFFFF).to(torch.int32)  # the device wraps 2**32 - 1 + 1 to 0
    ins = {"x": bits, "out": torch.zeros(1, 4, dtype=torch.int32)}
    assert run_text(_U32_DUMP, ins, {"out": plus}, rtol=0, atol=0).status == "pass"
    assert run_text(_U32_DUMP, ins, {"out": (values & 0xFFFFFFFF).to(torch.int32)}, rtol=0, atol=0).status == "fail"
