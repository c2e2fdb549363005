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


if __name__ == "__main__":
    elementwise()
    mixed_matmul()
    softmax()
