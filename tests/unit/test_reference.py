"""``validate.reference.resolve``: what a run compares with, one test per case of the rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from pypto_lsp.validate.config import RunSettings, find_case
from pypto_lsp.validate.differential import DifferentialError
from pypto_lsp.validate.golden import GoldenError, load_bundle
from pypto_lsp.validate.reference import memoized_differential, resolve

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_LSP_CACHE_DIR", str(tmp_path / "cache"))


def _without_goldens(tmp_path: Path, name: str = "elementwise") -> Path:
    dst = tmp_path / name / "passes_dump"
    shutil.copytree(EX / name / "passes_dump", dst)
    return dst


def test_the_cases_goldens() -> None:
    folder = EX / "elementwise" / "passes_dump"
    case = find_case(folder)
    c = resolve(folder, case, case.settings)
    assert not c.differential and c.label == "goldens" and c.note is None
    assert c.bundle_paths == (str(case.inputs), str(case.expected))
    assert set(c.expected) == set(load_bundle(case.expected)) and c.expected
    assert c.to_json()["kind"] == "goldens"


def test_bundles_given_win_over_the_case_and_tensors_are_not_keyed_by_a_path(tmp_path: Path) -> None:
    folder = EX / "elementwise" / "passes_dump"
    case = find_case(folder)
    ins, exp = load_bundle(case.inputs), load_bundle(case.expected)
    c = resolve(folder, None, RunSettings(), inputs=dict(ins), expected=dict(exp))
    assert c.bundle_paths is None and c.label == "goldens"
    assert c.inputs.keys() == ins.keys() and c.expected.keys() == exp.keys()


def test_no_goldens_is_differential_on_synthesized_inputs(tmp_path: Path) -> None:
    folder = _without_goldens(tmp_path)
    case = find_case(folder)
    assert not case.has_goldens
    c = resolve(folder, case, case.settings, use_cache=False)
    assert c.differential and c.bundle_paths is None and c.note is None
    assert c.label == "00_frontend (no goldens)" and "synthesized" in c.describe()
    assert c.expected and c.to_json()["kind"] == "frontend"


def test_differential_asked_for_even_with_goldens_and_its_seed() -> None:
    folder = EX / "elementwise" / "passes_dump"
    case = find_case(folder)
    a = resolve(folder, case, case.settings, differential=True, use_cache=False)
    b = resolve(folder, case, case.settings, differential=True, use_cache=False, seed=7)
    assert a.differential and a.reference is not None and a.reference.seed == 0
    assert b.reference is not None and b.reference.seed == 7
    # the seed reaches the synthesized inputs (outputs start at zero either way)
    assert any(not torch.equal(a.inputs[k], b.inputs[k]) for k in a.inputs)


def test_an_empty_expected_bundle_is_differential_on_its_inputs_with_a_note(tmp_path: Path) -> None:
    folder = EX / "returns" / "passes_dump"
    inputs = EX / "returns" / "golden" / "inputs.pt"
    empty = tmp_path / "expected.pt"
    torch.save({}, str(empty))
    c = resolve(folder, None, RunSettings(), inputs=inputs, expected=empty)
    assert c.differential and c.reference is not None and c.reference.given == str(inputs)
    assert c.note == f"the expected bundle {empty} holds no tensors: differential mode"
    assert "return" in c.expected  # the earliest dump's returned value
    assert c.inputs.keys() == load_bundle(inputs).keys()
    assert c.bundle_paths is None  # results are keyed by the tensors, not by the empty bundle


def test_the_runs_entry_is_the_references(tmp_path: Path) -> None:
    folder = _without_goldens(tmp_path)
    case = find_case(folder)
    with pytest.raises(DifferentialError, match="no_such_function|entry"):
        resolve(folder, case, case.settings.override(entry="no_such_function"), use_cache=False)


def test_one_bundle_alone_or_no_case_is_a_golden_error(tmp_path: Path) -> None:
    folder = _without_goldens(tmp_path)
    case = find_case(folder)
    with pytest.raises(GoldenError, match="pass --inputs/--expected"):
        resolve(folder, case, case.settings, inputs=EX / "elementwise" / "golden" / "inputs.pt")
    with pytest.raises(GoldenError, match="no golden tensors"):
        resolve(folder, None, RunSettings())


def test_the_workers_memo_is_the_same_reference(tmp_path: Path) -> None:
    folder = _without_goldens(tmp_path)
    ins, exp, ident = memoized_differential(folder)
    assert ident.startswith("differential:")
    assert memoized_differential(folder)[2] == ident  # kept while the earliest dump is unchanged
    c = resolve(folder, find_case(folder), find_case(folder).settings)
    assert c.expected.keys() == exp.keys()
