"""The sanitizer follows an uninitialised input of every real dump the same way batched and exact
(tests/conformance/undefined_inputs.py: the middle and last dump of each case, each orchestrator input
replaced by a tensor created without init_value), values only and with the memory model. Skipped when
the fixtures are absent."""

from __future__ import annotations

import pytest

from .undefined_inputs import FIXTURES, check

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("memory", [False, True])
def test_batched_and_exact_runs_follow_undefined_inputs_alike(memory: bool) -> None:
    if not (FIXTURES / "verdicts.json").is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    runs, found, disagree = check(FIXTURES, memory=memory)
    assert not disagree, "\n".join(disagree)
    assert runs >= 300 and found >= 0.9 * runs, (runs, found)  # nearly every input reaches an output
