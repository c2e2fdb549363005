"""A run executes under ``torch.inference_mode`` (validate.engine.run): no op of a dump needs
autograd, and skipping its dispatch makes every op cheaper. Tensors made inside keep no version
counter, so the places that tell writes apart by versions must not read one there: the FP32
copies of weights (exec.values.as_f32), the products across tasks (exec.pipebatch), the loan of
inputs (validate.lend); and a tensor made in the mode may be written only in it, in a helper thread too."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from pypto_lsp.exec.values import version_of
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.golden import load_bundle
from pypto_lsp.validate.report import PASS

ROOT = Path(__file__).resolve().parents[2]
ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"


def _program() -> str:
    return (
        "\n".join(
            [
                "# pypto.program: Infer",
                "import pypto.language as pl",
                "",
                "@pl.program",
                "class Infer:",
                f"    {ORCH}",
                "    def main(self, x: pl.Tensor[[4, 8], pl.FP32], out: pl.Out[pl.Tensor[[4, 8], pl.FP32]]) -> pl.Tensor[[4, 8], pl.FP32]:",
                "        x_c: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.slice(x, [4, 8], [0, 0])",
                "        d: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.adds(x_c, 1.0)",
                "        out: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.assemble(out, d, [0, 0])",
                "        return out",
            ]
        )
        + "\n"
    )


def _run_value(text: str, x: torch.Tensor) -> torch.Tensor:
    from pypto_lsp.validate.engine import compile_text, run

    comp = compile_text(text)
    assert comp.error is None, comp.error
    out = run(comp, {"x": x, "out": torch.zeros(4, 8)})
    assert out.error is None, out.error
    return out.value


def test_a_run_makes_its_tensors_in_inference_mode_and_its_buffers_outside() -> None:
    """A value the run computes is an inference tensor; a ``tensor.create`` buffer is not (its writes
    must show in its version: the products across tasks are keyed by it)."""
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    made = _run_value(_program().replace("        return out", "        return d"), x)
    assert made.is_inference() and torch.equal(made, x + 1)
    created = _program().replace(
        "        return out",
        "        buf: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.create([4, 8], dtype=pl.FP32)\n"
        "        buf2: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.assemble(buf, d, [0, 0])\n"
        "        return buf2",
    )
    buf = _run_value(created, x)
    assert not buf.is_inference() and version_of(buf) is not None and torch.equal(buf, x + 1)
    assert not torch.is_inference_mode_enabled()  # the caller's thread is left as it was


def test_version_of_a_tensor_made_in_inference_mode_is_none() -> None:
    t = torch.zeros(3)
    assert version_of(t) == 0
    t.add_(1)
    assert version_of(t) == 1
    with torch.inference_mode():
        u = torch.zeros(3)
        t.add_(1)  # a tensor made outside still counts its writes inside
    assert version_of(u) is None and version_of(t) == 2


def test_an_input_an_earlier_run_made_is_copied_not_lent() -> None:
    """A tensor an earlier run made (no version counter) given to the next run as an input: it is
    copied rather than lent (a lent input's writes are found by its version: reading one raised)."""
    with torch.inference_mode():
        x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    r = run_text(_program(), {"x": x, "out": torch.zeros(4, 8)}, {"out": x + 1}, rtol=0, atol=0)
    assert r.status == PASS, r.error


def test_a_big_weight_converts_in_helper_threads_inside_a_run() -> None:
    """The FP32 copy of a big lent weight is made in parts by helper threads (exec.values): inside
    a run (inference mode) its buffer is an inference tensor, which a thread outside the mode may
    not write ("Inplace update to inference tensor outside InferenceMode")."""
    from pypto_lsp.exec import values
    from pypto_lsp.exec.side_threads import set_helper_threads
    from pypto_lsp.exec.values import as_f32, register_input

    w = torch.randn(2048, 2048 + 64).bfloat16()
    register_input(w)
    set_helper_threads(2)
    try:
        with torch.inference_mode():
            got = as_f32(w[:, 64:])
        assert torch.equal(got, w[:, 64:].float())
        assert w.untyped_storage().data_ptr() in values._F32  # kept: the weight was made outside a run
    finally:
        set_helper_threads(min(4, os.cpu_count() or 1))


def test_products_across_tasks_are_made_once_in_a_run_with_a_created_buffer_operand() -> None:
    """qwen3's last dump multiplies the post-norm buffer (``tensor.create``d by the orchestrator) by a
    stripe of ``w_gate`` in each MLP task: the products of every stripe are made once, in the first
    task, and found again by the others (keyed by the operands' versions). Were the buffer made in
    inference mode, it would have no version and every task would make its own."""
    from pypto_lsp.exec import context
    from pypto_lsp.validate.config import RunSettings

    case = ROOT.parent / "shared" / "fixtures" / "qwen3_scope3_910b"
    dump = case / "passes_dump" / "49_after_MaterializeValidShapeSymbols.py"
    if not dump.is_file():
        import pytest

        pytest.skip("needs ../shared/fixtures")
    tensors = {k: v for k, v in load_bundle(case / "tensors.pt").items() if isinstance(v, torch.Tensor)}
    expected = load_bundle(case / "expected.pt")
    r = run_text(dump.read_text(), tensors, expected, filename=dump.name, **RunSettings(timeout_s=0).engine_kwargs())
    assert r.status == PASS, r.error
    # the run's memo (kept until the next run on this thread): the MLP's gate and up products, the
    # output projection's
    kept = [v for k, v in context.run_memo().items() if k[0] == "products across tasks"]
    assert len(kept) == 3
    assert any(not a.is_inference() and a.shape == (16, 512) for a, _b, _wide in kept)  # the post-norm buffer
