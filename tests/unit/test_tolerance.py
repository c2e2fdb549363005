"""The one tolerance test (validate.engine.over_tolerance) is allclose's, element by element."""

from __future__ import annotations

import itertools

import pytest
import torch

from pypto_lsp.validate.engine import compare, over_tolerance, scalars_close

VALUES = [0.0, 1.0, -1.0, 1e-3, 1.05, float("inf"), float("-inf"), float("nan"), 1e308, -1e308, 5e-2, 0.1]


@pytest.mark.parametrize(("rtol", "atol"), [(0.05, 0.05), (0.0, 0.0), (1e-5, 1e-8), (1.0, 0.0)])
def test_it_is_isclose_on_every_edge(rtol: float, atol: float) -> None:
    pairs = list(itertools.product(VALUES, VALUES))
    a = torch.tensor([x for x, _ in pairs], dtype=torch.float64)
    e = torch.tensor([y for _, y in pairs], dtype=torch.float64)
    diff = torch.where(a == e, 0.0, (a - e).abs())
    assert torch.equal(~over_tolerance(diff, e, rtol, atol), torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=False))
    assert compare(a, e, rtol, atol).passed == bool(torch.allclose(a, e, rtol=rtol, atol=atol, equal_nan=False))
    for x, y in pairs:
        if x == x and y == y and abs(x) != float("inf") and abs(y) != float("inf"):
            assert scalars_close(x, y, rtol, atol) == bool(
                torch.isclose(torch.tensor(x, dtype=torch.float64), torch.tensor(y, dtype=torch.float64), rtol=rtol, atol=atol)
            )
