"""UINT32 parameters as golden bundles hold them: int32 bit patterns (PyPTO's harness maps
DataType.UINT32 to torch.int32) or torch.uint32. Both are accepted, read as the unsigned values,
and an output compares against the bundle's bit patterns."""

from __future__ import annotations

import pytest
import torch

from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.report import PASS

ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"
PROGRAM = "\n".join(
    [
        "# pypto.program: U32",
        "import pypto.language as pl",
        "",
        "@pl.program",
        "class U32:",
        f"    {ORCH}",
        "    def main(self, x: pl.Tensor[[2, 4], pl.UINT32], out: pl.Out[pl.Tensor[[2, 4], pl.UINT32]], "
        "wide: pl.Out[pl.Tensor[[2, 4], pl.INT64]]) -> tuple[pl.Tensor[[2, 4], pl.UINT32], pl.Tensor[[2, 4], pl.INT64]]:",
        "        d: pl.Tensor[[2, 4], pl.UINT32] = pl.tensor.adds(x, 1)",
        "        out: pl.Tensor[[2, 4], pl.UINT32] = pl.tensor.assemble(out, d, [0, 0])",
        "        w: pl.Tensor[[2, 4], pl.INT64] = pl.tensor.cast(x, target_type=pl.INT64)",
        "        wide: pl.Tensor[[2, 4], pl.INT64] = pl.tensor.assemble(wide, w, [0, 0])",
        "        return out, wide",
    ]
)

VALUES = [[0, 1, 2**31, 2**32 - 2], [5, 2**31 - 1, 7, 2**32 - 1]]


def _bits(values: list[list[int]]) -> torch.Tensor:
    """Unsigned values as the harness stores them: int32 with the same bits."""
    return (torch.tensor(values, dtype=torch.int64) & 0xFFFFFFFF).to(torch.int32)


@pytest.mark.parametrize("held", ["int32 bits", "torch.uint32"])
def test_uint32_parameters_from_the_bundle(held: str) -> None:
    x = _bits(VALUES) if held == "int32 bits" else torch.tensor(VALUES, dtype=torch.int64).to(torch.uint32)
    plus_one = [[(v + 1) & 0xFFFFFFFF for v in row] for row in VALUES]
    ins = {"x": x, "out": torch.zeros(2, 4, dtype=x.dtype), "wide": torch.zeros(2, 4, dtype=torch.int64)}
    expected = {"out": _bits(plus_one), "wide": torch.tensor(VALUES, dtype=torch.int64)}
    r = run_text(PROGRAM + "\n", ins, expected, rtol=0, atol=0)
    assert r.status == PASS, (r.error, r.tensors)
    # the values are read unsigned: 2**31 stays 2**31, not -2**31
    assert r.tensors["wide"].max_abs_diff == 0.0


def test_a_wrong_uint32_value_still_fails() -> None:
    ins = {"x": _bits(VALUES), "out": torch.zeros(2, 4, dtype=torch.int32), "wide": torch.zeros(2, 4, dtype=torch.int64)}
    wrong = {"out": _bits(VALUES), "wide": torch.tensor(VALUES, dtype=torch.int64)}  # not plus one
    r = run_text(PROGRAM + "\n", ins, wrong, rtol=0, atol=0)
    assert r.status != PASS and r.tensors["out"].passed is False


def test_other_dtypes_are_still_refused() -> None:
    ins = {"x": torch.zeros(2, 4), "out": torch.zeros(2, 4, dtype=torch.int32), "wide": torch.zeros(2, 4, dtype=torch.int64)}
    r = run_text(PROGRAM + "\n", ins, {}, rtol=0, atol=0)
    assert r.error is not None and "the entry declares UINT32" in r.error.message
