"""Localising a divergence: the first value a failing pass computes unlike the passing pass before it.

Real runs of real dumps: the shipped broken example, the shared fixtures' hand-broken copies
(where the injected bug is known line by line), and passing pass pairs of the fixtures where
nothing may be reported.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pypto_lsp.validate.golden import load_bundle
from pypto_lsp.validate.localize import first_differing_value
from pypto_lsp.validate.process_setup import configure_process
from pypto_lsp.validate.report import ValueDivergence

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
FIXTURES = ROOT.parent / "shared" / "fixtures"

configure_process()


def _elementwise_inputs() -> dict:
    return dict(load_bundle(EX / "elementwise" / "golden" / "inputs.pt"))


def _edited_tile_pass(old: str, new: str) -> tuple[str, str]:
    """The elementwise example's tile pass, and a copy with ``old`` replaced by ``new``."""
    prev = (EX / "elementwise" / "passes_dump" / "11_after_ConvertTensorToTileOps.py").read_text()
    cur = prev.replace(old, new)
    assert cur != prev
    return prev, cur


def test_broken_example_points_at_the_wrong_load() -> None:
    dumps = EX / "broken_elementwise" / "passes_dump"
    prev = (dumps / "09_after_OutlineIncoreScopes.py").read_text()
    cur = (dumps / "11_after_ConvertTensorToTileOps.py").read_text()
    v = first_differing_value(prev, cur, _elementwise_inputs(), rtol=0.05, atol=0.05)
    assert v is not None
    line = cur.splitlines()[v.line - 1]
    assert "y_chunk__tile" in line and "pl.tile.load(y__ssa_v0, [0, 0]" in line  # the injected bug
    # the first chunk loads rows 0-31 either way: it is the second assignment that differs,
    # paired through the rename y_chunk__ssa_v0 -> y_chunk__tile
    assert (v.name, v.occurrence, v.lanes) == ("y_chunk__tile", 1, 0)
    assert "pl.tensor.slice(y__ssa_v0" in prev.splitlines()[v.previous_line - 1]
    assert v.max_abs_diff > 1.0 and v.compared >= 2 and not v.truncated
    # where it differs most, with both values
    m = re.search(r"at \[(\d+), (\d+)\] \((\S+) here, (\S+) before\)", v.detail)
    assert m is not None, v.detail
    assert abs(float(m.group(3)) - float(m.group(4))) == pytest.approx(v.max_abs_diff, rel=1e-4)
    text = v.describe("09_after_OutlineIncoreScopes.py")
    assert "'y_chunk__tile' (assignment 2)" in text and "09_after_OutlineIncoreScopes.py" in text
    assert ValueDivergence.from_json(v.to_json()) == v


def test_identical_passes_report_nothing() -> None:
    dumps = EX / "elementwise" / "passes_dump"
    a = (dumps / "09_after_OutlineIncoreScopes.py").read_text()
    b = (dumps / "11_after_ConvertTensorToTileOps.py").read_text()
    assert first_differing_value(a, b, _elementwise_inputs(), rtol=0.05, atol=0.05) is None


def test_a_changed_scalar_is_reported_on_its_line() -> None:
    prev, cur = _edited_tile_pass("pl.tile.adds(x_chunk__tile, 1.0)", "pl.tile.adds(x_chunk__tile, 1.5)")
    v = first_differing_value(prev, cur, _elementwise_inputs(), rtol=0.05, atol=0.05)
    assert v is not None and v.name == "t__tile" and v.occurrence == 0
    assert "1.5" in cur.splitlines()[v.line - 1]
    # within tolerance it is not a difference
    assert first_differing_value(prev, cur, _elementwise_inputs(), rtol=1.0, atol=1.0) is None


def test_a_nan_is_found_and_placed() -> None:
    prev, cur = _edited_tile_pass("pl.tile.exp(t__tile)", "pl.tile.log(pl.tile.muls(t__tile, -1.0))")
    v = first_differing_value(prev, cur, _elementwise_inputs(), rtol=0.05, atol=0.05)
    assert v is not None and v.name == "t__tile_1"
    assert "nan here" in v.detail, v.detail
    assert ValueDivergence.from_json(v.to_json()).detail == v.detail  # NaN max diff survives JSON


def test_an_ambiguous_rename_pairs_nothing() -> None:
    # two new names share the source name "t": neither may take the other's partner
    dumps = EX / "elementwise" / "passes_dump"
    prev = (dumps / "11_after_ConvertTensorToTileOps.py").read_text()
    cur = re.sub(r"\bt__tile_1\b", "t__tile_b", re.sub(r"\bt__tile\b", "t__tile_a", prev))
    cur = cur.replace("pl.tile.exp(t__tile_a)", "pl.tile.exp(pl.tile.muls(t__tile_a, 2.0))")
    assert "t__tile_a" in cur and "t__tile_b" in cur
    v = first_differing_value(prev, cur, _elementwise_inputs(), rtol=0.05, atol=0.05)
    # the changed t__tile_b has no partner; the first paired value that differs is the product
    assert v is not None and v.name == "prod__tile"


def test_a_run_error_before_any_value_reports_nothing() -> None:
    dumps = EX / "elementwise" / "passes_dump"
    prev = (dumps / "11_after_ConvertTensorToTileOps.py").read_text()
    assert first_differing_value(prev, "this is not a dump", _elementwise_inputs(), rtol=0.05, atol=0.05) is None


# ---------------------------------------------------------------------- shared fixtures

# hand-broken copies: (case, first divergent pass, the text of the line with the injected bug)
BROKEN = [
    ("broken/qwen3_910b_wrong_slice_offset", "35_", 163),
    ("broken/rms_norm_wrong_mean_scale", "13_", 14),
    ("broken/softmax_row_sum_to_row_max", "04_", 15),
    ("broken/v2c_updown_wrong_lane_offset", "24_", 25),
]

# passing pass pairs where naive pairing by name or source name reports a false difference:
# lane splits, AIC/AIV outlining, new names beside renamed ones, split stores
QUIET = [
    ("cross_core_v2c_updown", "21_"),
    ("cross_core_v2c_updown", "22_"),
    ("cross_core_c2v_leftright", "21_"),
    ("cross_core_c2v_leftright", "22_"),
    ("cross_core_bidirect_nosplit", "18_"),
    ("cross_core_split_aiv_qk_pv", "21_"),
    ("example_flash_attention", "11_"),
    ("example_mixed_matmul_bias_updown", "16_"),
    ("ops/mm_batch", "14_"),
    ("qwen3_scope3_910b", "33_"),
]


def _case(case: str) -> tuple[dict, Path]:
    verdicts = FIXTURES / "verdicts.json"
    if not verdicts.is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    v = json.loads(verdicts.read_text())[case]
    return v, FIXTURES / v["dir"] / "passes_dump"


def _pair(dumps: Path, prefix: str) -> tuple[Path, Path]:
    files = sorted(dumps.glob("*.py"))
    i = next(i for i, f in enumerate(files) if f.name.startswith(prefix))
    return files[i - 1], files[i]


@pytest.mark.parametrize(("case", "prefix", "bug_line"), BROKEN)
def test_hand_broken_fixture_points_at_the_injected_bug(case: str, prefix: str, bug_line: int) -> None:
    v, dumps = _case(case)
    prev, cur = _pair(dumps, prefix)
    assert v["files"][prev.name]["status"] == "pass" and v["files"][cur.name]["status"] == "fail"
    res = first_differing_value(
        prev.read_text(), cur.read_text(), load_bundle(FIXTURES / v["inputs"]), rtol=v["rtol"], atol=v["atol"], entry=v.get("entry")
    )
    assert res is not None and res.line == bug_line, res


@pytest.mark.parametrize(("case", "prefix"), QUIET)
def test_passing_pairs_report_nothing(case: str, prefix: str) -> None:
    v, dumps = _case(case)
    prev, cur = _pair(dumps, prefix)
    # flash attention's files fail for the uninitialised read the program makes (a sanitizer finding,
    # tests/conformance KNOWN_FINDINGS), not for their values: a quiet pair still
    quiet = ("pass", "ran", "fail") if case == "example_flash_attention" else ("pass", "ran")
    assert v["files"][prev.name]["status"] in quiet and v["files"][cur.name]["status"] in quiet
    res = first_differing_value(
        prev.read_text(), cur.read_text(), load_bundle(FIXTURES / v["inputs"]), rtol=v["rtol"], atol=v["atol"], entry=v.get("entry")
    )
    assert res is None, res
