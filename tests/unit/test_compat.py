"""PyPTO-compatible wrappers: ``validate_pass_ir_codegen_results`` and ``validate_ir`` (reference §6)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch

from pypto_lsp import validate_ir, validate_pass_ir_codegen_results
from pypto_lsp.validate.golden import load_bundle

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
GOOD = EX / "elementwise" / "passes_dump"
BROKEN = EX / "broken_elementwise" / "passes_dump"
BANNER_RE = re.compile(r"^={20} (\S+) ={20}$")
LINE_RE = re.compile(r"^validate tensor: '(\w+)', max_abs_diff: (\d\.\d{6}e[+-]\d\d), pass: (True|False)$")


@pytest.fixture(scope="module")
def goldens() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    return dict(load_bundle(EX / "elementwise" / "golden" / "inputs.pt")), dict(load_bundle(EX / "elementwise" / "golden" / "expected.pt"))


def _parse(out: str) -> list[tuple[str, list[tuple[str, float, bool]]]]:
    blocks: list[tuple[str, list[tuple[str, float, bool]]]] = []
    for line in out.splitlines():
        m = BANNER_RE.match(line)
        if m:
            blocks.append((m.group(1), []))
            continue
        m = LINE_RE.match(line)
        assert m, f"unexpected line {line!r}"
        blocks[-1][1].append((m.group(1), float(m.group(2)), m.group(3) == "True"))
    return blocks


def test_passing_folder_prints_banners_and_returns(goldens, capsys: pytest.CaptureFixture[str]) -> None:
    tensors, expected = goldens
    assert validate_pass_ir_codegen_results(GOOD, tensors, expected) is None
    blocks = _parse(capsys.readouterr().out)
    assert [b[0] for b in blocks] == [
        "00_frontend",
        "04_after_ConvertToSSA",
        "09_after_OutlineIncoreScopes",
        "11_after_ConvertTensorToTileOps",
        "32_after_InitMemRef",
    ]
    for _, lines in blocks:
        assert len(lines) == 1 and lines[0][0] == "out" and lines[0][2] is True and lines[0][1] < 1e-3


def test_broken_folder_raises_assertion_naming_the_first_failing_file(goldens, capsys: pytest.CaptureFixture[str]) -> None:
    tensors, expected = goldens
    with pytest.raises(AssertionError) as info:
        validate_pass_ir_codegen_results(BROKEN, tensors, expected)
    msg = str(info.value)
    assert "11_after_ConvertTensorToTileOps.py" in msg and "32_after" not in msg
    assert re.search(
        r"tensor mismatch for key 'out', max abs diff \d\.\d{6}e[+-]\d\d exceeds tolerance \(rtol=5\.000e-02, atol=5\.000e-02\)", msg
    ), msg
    blocks = _parse(capsys.readouterr().out)
    # every file still runs and prints (the reference would stop at the first failure)
    assert [(b[0], b[1][0][2]) for b in blocks] == [
        ("00_frontend", True),
        ("04_after_ConvertToSSA", True),
        ("09_after_OutlineIncoreScopes", True),
        ("11_after_ConvertTensorToTileOps", False),
        ("32_after_InitMemRef", False),
    ]


def test_single_file_and_inputs_untouched(goldens, capsys: pytest.CaptureFixture[str]) -> None:
    tensors, expected = goldens
    before = {k: v.clone() for k, v in tensors.items()}
    validate_pass_ir_codegen_results(str(GOOD / "04_after_ConvertToSSA.py"), tensors, expected, rtol=1e-3, atol=1e-3)
    assert [b[0] for b in _parse(capsys.readouterr().out)] == ["04_after_ConvertToSSA"]
    assert all(torch.equal(tensors[k], before[k]) for k in tensors)


def test_tolerances_are_used(goldens, capsys: pytest.CaptureFixture[str]) -> None:
    tensors, expected = goldens
    with pytest.raises(AssertionError, match=r"00_frontend\.py.*rtol=0\.000e\+00, atol=0\.000e\+00"):
        validate_pass_ir_codegen_results(GOOD, tensors, expected, rtol=0, atol=0)
    capsys.readouterr()


def test_a_run_error_is_raised_with_file_and_line(tmp_path: Path, goldens, capsys: pytest.CaptureFixture[str]) -> None:
    tensors, expected = goldens
    shutil.copytree(GOOD, tmp_path / "passes_dump")
    f = tmp_path / "passes_dump" / "11_after_ConvertTensorToTileOps.py"
    f.write_text(f.read_text().replace("pl.tile.adds(x_chunk__tile, 1.0)", "pl.tile.no_such_op(x_chunk__tile, y_chunk__tile)"))
    with pytest.raises(RuntimeError) as info:
        validate_pass_ir_codegen_results(tmp_path / "passes_dump", tensors, expected)
    assert f"{f}:11:" in str(info.value) and "no_such_op" in str(info.value)
    out = capsys.readouterr().out
    assert f"{'=' * 20} 11_after_ConvertTensorToTileOps {'=' * 20}" in out


def test_unresolvable_parameter_raises_key_error(goldens, capsys: pytest.CaptureFixture[str]) -> None:
    tensors, expected = goldens
    partial = {k: v for k, v in tensors.items() if k != "y"}
    with pytest.raises(KeyError, match="y__ssa_v0"):
        validate_pass_ir_codegen_results(GOOD / "04_after_ConvertToSSA.py", partial, expected)
    capsys.readouterr()


# ---------------------------------------------------------------------- argument checks (before anything runs)


@pytest.mark.parametrize(
    ("tensors", "expected"),
    [
        ([torch.zeros(1)], {}),
        ({}, [torch.zeros(1)]),
        ({"x": [1.0]}, {}),
        ({1: torch.zeros(1)}, {}),
        ({}, {"out": 1.0}),
        (None, {}),
    ],
    ids=["tensors-list", "expected-list", "non-tensor-value", "non-str-key", "expected-float", "none"],
)
def test_type_error_for_bad_dicts(tensors: object, expected: object, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TypeError):
        validate_pass_ir_codegen_results(GOOD, tensors, expected)  # type: ignore[arg-type]
    assert capsys.readouterr().out == ""  # nothing ran


@pytest.mark.parametrize(
    ("kw", "value"),
    [("rtol", -1e-3), ("atol", -1), ("rtol", True), ("atol", False), ("rtol", "0.1"), ("atol", None)],
)
def test_value_error_for_bad_tolerances(goldens, kw: str, value: object, capsys: pytest.CaptureFixture[str]) -> None:
    tensors, expected = goldens
    with pytest.raises(ValueError):
        validate_pass_ir_codegen_results(GOOD, tensors, expected, **{kw: value})  # type: ignore[arg-type]
    assert capsys.readouterr().out == ""


def test_value_error_for_nan_tolerance(goldens, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: 'v < 0' let NaN through (reference contract: rtol/atol >= 0, else ValueError)."""
    tensors, expected = goldens
    with pytest.raises(ValueError):
        validate_pass_ir_codegen_results(GOOD, tensors, expected, rtol=float("nan"))


def test_path_checks(tmp_path: Path, goldens) -> None:
    tensors, expected = goldens
    with pytest.raises(FileNotFoundError):
        validate_pass_ir_codegen_results(tmp_path / "missing", tensors, expected)
    log = tmp_path / "x.log"
    log.write_text("")
    with pytest.raises(ValueError):
        validate_pass_ir_codegen_results(log, tensors, expected)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError):
        validate_pass_ir_codegen_results(tmp_path / "empty", tensors, expected)


# ---------------------------------------------------------------------- validate_ir


def test_validate_ir_without_passes_dump(tmp_path: Path, goldens) -> None:
    tensors, expected = goldens
    with pytest.raises(FileNotFoundError, match="passes_dump"):
        validate_ir(tmp_path, tensors, expected)
    with pytest.raises(FileNotFoundError):
        validate_ir(tmp_path / "does_not_exist", tensors, expected)


def test_validate_ir_with_passes_dump(goldens, capsys: pytest.CaptureFixture[str]) -> None:
    tensors, expected = goldens
    validate_ir(EX / "elementwise", tensors, expected, rtol=0.05, atol=0.05)
    assert len(_parse(capsys.readouterr().out)) == 5
    with pytest.raises(AssertionError, match="11_after_ConvertTensorToTileOps"):
        validate_ir(EX / "broken_elementwise", tensors, expected)
    capsys.readouterr()


def test_validate_ir_forwards_tolerances(goldens, capsys: pytest.CaptureFixture[str]) -> None:
    tensors, expected = goldens
    with pytest.raises(AssertionError, match="atol=1.000e-09"):
        validate_ir(EX / "elementwise", tensors, expected, rtol=0.0, atol=1e-9)
    with pytest.raises(ValueError):
        validate_ir(EX / "elementwise", tensors, expected, rtol=-1.0)
    capsys.readouterr()
