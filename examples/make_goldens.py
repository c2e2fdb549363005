"""Regenerate the golden tensors of the example cases.

    .venv/bin/python examples/make_goldens.py

Writes ``<case>/golden/inputs.pt`` (every entry parameter by its source name,
output buffers included, initialised to zeros) and ``<case>/golden/expected.pt``
(the outputs, computed with plain torch in float64 from the math and rounded to
the output dtype). The inputs are seeded, so the files come out the same on
every run; they are committed, and ``broken_elementwise`` / ``broken_memory`` /
``broken_softmax`` reuse the ``elementwise`` / ``softmax`` ones.
"""

from __future__ import annotations

from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


def save(case: str, inputs: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    golden = HERE / case / "golden"
    golden.mkdir(parents=True, exist_ok=True)
    torch.save(inputs, golden / "inputs.pt")
    torch.save(expected, golden / "expected.pt")
    print(f"{case}: inputs {sorted(inputs)}, expected {sorted(expected)} -> {golden.relative_to(HERE.parent)}")


def elementwise() -> None:
    """ExpAddMul: out = exp(x + 1.0) * y, all [64, 128] FP32."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 128, generator=g, dtype=torch.float32)
    y = torch.randn(64, 128, generator=g, dtype=torch.float32)
    out = torch.zeros(64, 128, dtype=torch.float32)
    ref = torch.exp(x.double() + 1.0) * y.double()
    save("elementwise", {"x": x, "y": y, "out": out}, {"out": ref.to(torch.float32)})


def mixed_matmul() -> None:
    """ScaledMatmul: c = (a @ b) * 2.0, a [32, 64] BF16, b [64, 64] BF16, c [32, 64] FP32."""
    g = torch.Generator().manual_seed(1)
    a = torch.randn(32, 64, generator=g, dtype=torch.float32).to(torch.bfloat16)
    b = torch.randn(64, 64, generator=g, dtype=torch.float32).to(torch.bfloat16)
    c = torch.zeros(32, 64, dtype=torch.float32)
    ref = (a.double() @ b.double()) * 2.0
    save("mixed_matmul", {"a": a, "b": b, "c": c}, {"c": ref.to(torch.float32)})


def softmax() -> None:
    """ScaledSoftmax: probs = softmax(scores * 0.125) along each row, [32, 128] FP32."""
    g = torch.Generator().manual_seed(2)
    scores = 24.0 * torch.randn(32, 128, generator=g, dtype=torch.float32)
    probs = torch.zeros(32, 128, dtype=torch.float32)
    ref = torch.softmax(scores.double() * 0.125, dim=-1)
    save("softmax", {"scores": scores, "probs": probs}, {"probs": ref.to(torch.float32)})


def odd_rows() -> None:
    """OddRows: out = exp(a[:15] @ w) and rs = its row sums on the 15 valid rows of a 16-row window;
    row 15 of both keeps its initial -1 (TSTORE writes the valid extent only)."""
    g = torch.Generator().manual_seed(3)
    a = 0.125 * torch.randn(16, 64, generator=g, dtype=torch.float32)
    w = 0.125 * torch.randn(64, 32, generator=g, dtype=torch.float32)
    out = torch.full((16, 32), -1.0, dtype=torch.float32)
    rs = torch.full((16, 1), -1.0, dtype=torch.float32)
    e = torch.exp(a[:15].double() @ w.double())
    want_out = out.clone()
    want_out[:15] = e.to(torch.float32)
    want_rs = rs.clone()
    want_rs[:15] = e.sum(dim=-1, keepdim=True).to(torch.float32)
    save("odd_rows", {"a": a, "w": w, "out": out, "rs": rs}, {"out": want_out, "rs": want_rs})


def split_rows() -> None:
    """SplitRows: out = exp(a[:11] @ w), rows split between two vector lanes of 8 (8 real rows, then 3);
    rows 11-15 keep their initial -1."""
    g = torch.Generator().manual_seed(4)
    a = 0.125 * torch.randn(16, 64, generator=g, dtype=torch.float32)
    w = 0.125 * torch.randn(64, 32, generator=g, dtype=torch.float32)
    out = torch.full((16, 32), -1.0, dtype=torch.float32)
    want = out.clone()
    want[:11] = torch.exp(a[:11].double() @ w.double()).to(torch.float32)
    save("split_rows", {"a": a, "w": w, "out": out}, {"out": want})


def returns() -> None:
    """HalfExp: returns exp(x * 0.5), x [32, 64] FP32; no output parameter, so the golden is
    the expected bundle's ``return`` entry."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(32, 64, generator=g, dtype=torch.float32)
    save("returns", {"x": x}, {"return": torch.exp(x.double() * 0.5).to(torch.float32)})


def broken_race() -> None:
    """ScaleShift: mid = x * 2.0 (one task), out = mid + 1.0 (a second task reading mid), [32, 64] FP32."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(32, 64, generator=g, dtype=torch.float32)
    out = torch.zeros(32, 64, dtype=torch.float32)
    save("broken_race", {"x": x, "out": out}, {"out": (x.double() * 2.0 + 1.0).to(torch.float32)})


def allreduce_ranks() -> None:
    """MeshAllReduce over 4 ranks: y[r] = x[0] + x[1] + x[2] + x[3] for every rank r, x and y [4, 1, 64] FP32
    (stacked per rank; each rank adds its own slice, then its peers' (r+1, r+2, r+3) % 4, in that order)."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(4, 1, 64, generator=g, dtype=torch.float32)
    y = torch.zeros(4, 1, 64, dtype=torch.float32)
    total = x.double().sum(dim=0, keepdim=True).expand(4, 1, 64)
    save("allreduce_ranks", {"x": x, "y": y}, {"y": total.to(torch.float32).contiguous()})


def broken_ranks_fence() -> None:
    """RingPush over 4 ranks: y[r] = x[(r - 1) % 4], x and y [4, 1, 64] FP32 (stacked per rank)."""
    g = torch.Generator().manual_seed(13)
    x = torch.randn(4, 1, 64, generator=g, dtype=torch.float32)
    y = torch.zeros(4, 1, 64, dtype=torch.float32)
    save("broken_ranks_fence", {"x": x, "y": y}, {"y": x.roll(1, dims=0).contiguous()})


if __name__ == "__main__":
    elementwise()
    mixed_matmul()
    softmax()
    odd_rows()
    split_rows()
    returns()
    broken_race()
    allreduce_ranks()
    broken_ranks_fence()
