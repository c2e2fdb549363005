"""Differential mode (no goldens) over the shared fixtures; the tallies are printed.

(a) each case's own inputs, expected values from its 00_frontend.py instead of the goldens: every
    file reaches its verdicts.json status, apart from the files listed (with the reason) in
    differential_conf.FRONTEND_AS_GOLDEN and the memory-placement cases (issue #10);
(b) synthesized inputs: every broken/ copy's first divergent pass (at the base tolerance and at
    every `extra` one) is still found, apart from the cases listed in differential_conf.SYNTHESIZED.
"""

from __future__ import annotations

import pytest

from .conformance import FIXTURES
from .differential_conf import run_frontend_expected, run_synthesized

pytestmark = pytest.mark.conformance


@pytest.fixture(autouse=True)
def _fixtures() -> None:
    if not (FIXTURES / "verdicts.json").is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}: conformance suite skipped")


def test_frontend_as_golden_reaches_the_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    tally = run_frontend_expected()
    with capsys.disabled():
        print(
            f"\n(a) frontend as golden: {tally.right}/{tally.listed} files reach their verdict; "
            f"listed: {len(tally.known)}; memory-placement expected failures: {len(tally.expected_failures)}"
        )
        for k in tally.known:
            print(f"  {k}")
    assert tally.listed > 4000  # the whole fixture set ran
    assert not tally.mismatches, "\n".join(tally.mismatches)
    assert not tally.stale, "\n".join(tally.stale)


def test_synthesized_inputs_find_every_broken_first_divergent_pass(capsys: pytest.CaptureFixture[str]) -> None:
    tally = run_synthesized()
    with capsys.disabled():
        print(
            f"\n(b) synthesized inputs: first divergent pass found in {len(tally.found)} broken/ verdict run(s); "
            f"listed: {len(tally.known)}; memory-placement expected failures: {len(tally.expected_failures)}"
        )
        for line in tally.found + tally.known + tally.expected_failures:
            print(f"  {line}")
    assert len(tally.found) >= 6
    assert not tally.missed, "\n".join(tally.missed)
    assert not tally.stale, "\n".join(tally.stale)
