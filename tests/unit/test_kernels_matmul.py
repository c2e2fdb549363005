"""Matmul kernels: FP32 accumulation, init_cond, bias, transposes, result dtypes."""

from __future__ import annotations

import torch

from pypto_lsp.exec.kernels import KERNELS, ResultType

K = KERNELS
torch.manual_seed(1)
A16 = torch.randn(32, 128).to(torch.bfloat16)
B16 = torch.randn(128, 32).to(torch.bfloat16)


def exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.double() @ b.double()).float()


def test_tile_matmul_bf16_accumulates_in_fp32() -> None:
    out = K["tile.matmul"](A16, B16)
    assert out.dtype == torch.float32 and out.shape == (32, 32)
    assert torch.allclose(out, exact(A16, B16), rtol=1e-5, atol=1e-4)
    # The reference's torch.matmul(bf16, bf16).float() is visibly less precise.
    ref_style = torch.matmul(A16, B16).float()
    assert (ref_style - exact(A16, B16)).abs().max() > (out - exact(A16, B16)).abs().max() * 10


def test_tile_matmul_fp32_and_result_type_dtype() -> None:
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    assert torch.allclose(K["tile.matmul"](a, b), a @ b, atol=1e-5)
    out = K["tile.matmul"](a, b, _rtype=ResultType((8, 4), torch.bfloat16, None, None, "Acc"))
    assert out.dtype == torch.bfloat16  # cast-folded (FIXPIPE) output


def test_tile_matmul_int8_gives_int32() -> None:
    a = torch.randint(-128, 127, (4, 64), dtype=torch.int8)
    b = torch.randint(-128, 127, (64, 4), dtype=torch.int8)
    out = K["tile.matmul"](a, b)
    assert out.dtype == torch.int32
    assert torch.equal(out, (a.long() @ b.long()).int())


def test_matmul_acc_accumulates_unless_init_cond() -> None:
    acc = torch.randn(32, 32)
    prod = exact(A16, B16)
    assert torch.allclose(K["tile.matmul_acc"](acc, A16, B16), acc + prod, atol=1e-4)
    assert torch.allclose(K["tile.matmul_acc"](acc, A16, B16, False), acc + prod, atol=1e-4)
    # init_cond (e.g. `k == 0`) => overwrite: the reference ignores it and accumulates.
    assert torch.allclose(K["tile.matmul_acc"](acc, A16, B16, True), prod, atol=1e-4)
    assert torch.allclose(K["tile.matmul_acc"](acc, A16, B16, torch.tensor(True)), prod, atol=1e-4)
    assert K["tile.matmul_acc"](acc, A16, B16).dtype == torch.float32


def test_matmul_k_loop_with_init_cond_equals_full_product() -> None:
    a, b = torch.randn(16, 64), torch.randn(64, 16)
    acc = torch.full((16, 16), 1e6)  # garbage: must be overwritten on the first step
    for k in range(0, 64, 16):
        acc = K["tile.matmul_acc"](acc, a[:, k : k + 16], b[k : k + 16], k == 0)
    assert torch.allclose(acc, a @ b, atol=1e-4)


def test_matmul_bias_gemv_batch() -> None:
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    bias = torch.randn(1, 4)
    assert torch.allclose(K["tile.matmul_bias"](a, b, bias), a @ b + bias, atol=1e-5)
    v = torch.randn(1, 16)
    assert torch.allclose(K["tile.gemv"](v, b), v @ b, atol=1e-5)
    acc = torch.randn(1, 4)
    assert torch.allclose(K["tile.gemv_acc"](acc, v, b), acc + v @ b, atol=1e-5)
    assert torch.allclose(K["tile.gemv_bias"](v, b, bias), v @ b + bias, atol=1e-5)
    ba, bb = torch.randn(2, 8, 16), torch.randn(2, 16, 4)
    assert torch.allclose(K["tile.batch_matmul"](ba, bb), ba @ bb, atol=1e-5)
    bacc = torch.randn(2, 8, 4)
    assert torch.allclose(K["tile.batch_matmul_acc"](bacc, ba, bb), bacc + ba @ bb, atol=1e-5)


def test_tensor_matmul_transposes_and_out_dtype() -> None:
    a, b = torch.randn(16, 8), torch.randn(4, 16)
    out = K["tensor.matmul"](a, b, out_dtype=torch.float32, a_trans=True, b_trans=True)
    assert torch.allclose(out, a.mT @ b.mT, atol=1e-5)
    out16 = K["tensor.matmul"](A16, B16, out_dtype=torch.bfloat16)
    assert out16.dtype == torch.bfloat16
    assert torch.equal(out16, exact(A16, B16).to(torch.bfloat16)) or torch.allclose(out16.float(), exact(A16, B16), rtol=1e-2)
    out_default = K["tensor.matmul"](A16, B16)
    assert out_default.dtype == torch.float32


def test_tensor_matmul_acc_init_cond() -> None:
    acc = torch.ones(4, 4)
    a, b = torch.randn(4, 8), torch.randn(8, 4)
    assert torch.allclose(K["tensor.matmul_acc"](acc, a, b), 1 + a @ b, atol=1e-5)
    assert torch.allclose(K["tensor.matmul_acc"](acc, a, b, True), a @ b, atol=1e-5)
    out = K["tensor.matmul_acc"](acc, a, b, out_dtype=torch.bfloat16)
    assert out.dtype == torch.bfloat16
