"""Every real dump reaches the verdict ../shared/fixtures/verdicts.json asks for.

At the base tolerance and at every `extra` tolerance; where the reference passed,
our max diff stays within 2x its value + 1e-3. Skipped when the fixtures are absent.
"""

from __future__ import annotations

import pytest

from .conformance import COVERAGE, FIXTURES, run

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def tally():
    if not (FIXTURES / "verdicts.json").is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}: conformance suite skipped")
    return run()


def test_every_file_reaches_its_verdict(tally, capsys):
    with capsys.disabled():
        print(f"\nconformance: {tally.right}/{tally.listed} files right; documented disagreements:")
        for k in tally.known:
            print(f"  {k}")
        print(
            f"edited files with a memory finding on an edited line: {tally.edit_checked - len(tally.edit_violations)}/{tally.edit_checked}"
        )
    lines = [f"{m.case}/{m.file} (atol {m.tol}): want {m.want}, got {m.got}: {m.detail}" for m in tally.mismatches]
    assert not lines, "\n".join(lines)
    assert not tally.stale, "\n".join(tally.stale)


def test_memory_cases_diverge_at_the_edit_with_a_finding_on_an_edited_line(tally):
    assert tally.edit_checked >= 45  # the three memory cases, 15 edited files each
    assert not tally.edit_violations, "\n".join(tally.edit_violations)


def test_no_memory_finding_on_a_real_compiler_dump(tally):
    assert tally.memory_checked > 1000  # the model really ran (every dump from InitMemRef on)
    assert not tally.memory_alarms, "\n".join(tally.memory_alarms)


def test_max_diff_close_to_the_reference_where_it_passed(tally):
    assert not tally.diff_violations, "\n".join(tally.diff_violations)


def test_every_coverage_file_reaches_its_verdict(capsys):
    """../shared/fixtures-coverage: the op families added last. Cases whose family does not run yet are
    tallied as pending (conformance.PENDING_COVERAGE) and must still miss, so an entry cannot go stale."""
    if not (COVERAGE / "verdicts.json").is_file():
        pytest.skip(f"coverage fixtures not found at {COVERAGE}")
    tally = run(root=COVERAGE)
    with capsys.disabled():
        print(f"\ncoverage conformance: {tally.right}/{tally.listed} files right; pending cases: {len(tally.pending)}")
        for p in tally.pending:
            print(f"  {p}")
    lines = [f"{m.case}/{m.file} (atol {m.tol}): want {m.want}, got {m.got}: {m.detail}" for m in tally.mismatches]
    assert not lines, "\n".join(lines)
    assert not tally.stale, "\n".join(tally.stale)
    assert not tally.memory_alarms, "\n".join(tally.memory_alarms)
