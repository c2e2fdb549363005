"""Config discovery (``pypto-lsp.toml`` / ``[tool.pypto-lsp]``), golden bundles and ``save_golden``."""

from __future__ import annotations

import builtins
import ctypes
import json
import os
import pickle
import shutil
import struct
from pathlib import Path

import pytest
import torch

from pypto_lsp import save_golden, validate_passes
from pypto_lsp.validate.config import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    DEFAULT_TIMEOUT_S,
    ConfigError,
    RunSettings,
    config_warnings,
    default_case,
    discover_dumps,
    find_case,
    is_dump_path,
)
from pypto_lsp.validate.golden import GoldenError, load_bundle
from pypto_lsp.validate.report import ERROR, PASS

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "elementwise"
GOLD_IN = EX / "golden" / "inputs.pt"
GOLD_EXP = EX / "golden" / "expected.pt"


def _dumps(where: Path) -> Path:
    """A copy of the elementwise dump folder at ``where`` (a ``passes_dump`` folder)."""
    shutil.copytree(EX / "passes_dump", where)
    return where


def _case_toml(dumps: str, extra: str = "", inputs: str = "golden/inputs.pt", expected: str = "golden/expected.pt") -> str:
    return f'[[cases]]\ndumps = "{dumps}"\ninputs = "{inputs}"\nexpected = "{expected}"\n{extra}'


# ---------------------------------------------------------------------- discovery


def test_pypto_lsp_toml_found_by_walking_up(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "proj" / "out" / "run1" / "passes_dump")
    (tmp_path / "proj" / "pypto-lsp.toml").write_text(
        _case_toml("out/run1/passes_dump", 'entry = "exp_add_mul"\nrtol = 0.01\natol = 0.002\ntimeout_s = 7\n')
    )
    for target in (dumps / "00_frontend.py", dumps, dumps.parent):
        case = find_case(target)
        assert case.source == str(tmp_path / "proj" / "pypto-lsp.toml")
        assert case.dumps == dumps.resolve()
        # relative paths are relative to the config file, not to the cwd or the dump
        assert case.inputs == (tmp_path / "proj" / "golden" / "inputs.pt").resolve()
        assert case.expected == (tmp_path / "proj" / "golden" / "expected.pt").resolve()
        assert (case.settings.entry, case.settings.rtol, case.settings.atol, case.settings.timeout_s) == ("exp_add_mul", 0.01, 0.002, 7.0)


def test_nearest_covering_case_wins_and_non_covering_configs_are_skipped(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "a" / "b" / "passes_dump")
    # nearer config whose case covers another folder: skipped
    (tmp_path / "a" / "b" / "pypto-lsp.toml").write_text(_case_toml("elsewhere/passes_dump"))
    (tmp_path / "a" / "pypto-lsp.toml").write_text(_case_toml("b/passes_dump", inputs="g/i.pt", expected="g/e.pt"))
    (tmp_path / "pypto-lsp.toml").write_text(_case_toml("a/b/passes_dump", inputs="far/i.pt", expected="far/e.pt"))
    case = find_case(dumps / "00_frontend.py")
    assert case.inputs == (tmp_path / "a" / "g" / "i.pt").resolve()


def test_first_matching_case_in_a_file(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    (tmp_path / "pypto-lsp.toml").write_text(
        _case_toml("other")
        + _case_toml("passes_dump", inputs="one/i.pt", expected="one/e.pt")
        + _case_toml("passes_dump", inputs="two/i.pt", expected="two/e.pt")
    )
    assert find_case(dumps).inputs == (tmp_path / "one" / "i.pt").resolve()


def test_pyproject_tool_table(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[[tool.pypto-lsp.cases]]\ndumps = "passes_dump"\ninputs = "g/i.pt"\nexpected = "g/e.pt"\natol = 0.5\n'
    )
    case = find_case(dumps / "00_frontend.py")
    assert case.source == str(tmp_path / "pyproject.toml")
    assert case.inputs == (tmp_path / "g" / "i.pt").resolve() and case.settings.atol == 0.5 and case.settings.rtol == DEFAULT_RTOL


def test_pyproject_without_the_tool_table_is_ignored(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n')
    case = find_case(dumps)
    assert case.source == "none" and not case.has_goldens


def test_pypto_lsp_toml_beats_pyproject_in_the_same_folder(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    (tmp_path / "pyproject.toml").write_text('[[tool.pypto-lsp.cases]]\ndumps = "passes_dump"\ninputs = "p/i.pt"\nexpected = "p/e.pt"\n')
    (tmp_path / "pypto-lsp.toml").write_text(_case_toml("passes_dump", inputs="t/i.pt", expected="t/e.pt"))
    assert find_case(dumps).inputs == (tmp_path / "t" / "i.pt").resolve()


def test_defaults_when_keys_are_absent(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    (tmp_path / "pypto-lsp.toml").write_text('[[cases]]\ndumps = "passes_dump"\nname = "x"\nfuture_key = 1\n')
    case = find_case(dumps)
    assert (case.settings.entry, case.settings.rtol, case.settings.atol, case.settings.timeout_s) == (
        None,
        DEFAULT_RTOL,
        DEFAULT_ATOL,
        DEFAULT_TIMEOUT_S,
    )
    assert case.inputs is None and not case.has_goldens
    assert any("future_key" in n for n in case.notes) and not any("name" in n for n in case.notes)


def test_every_case_key_is_used_and_only_unknown_keys_are_noted_and_warned(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    extra = (
        'entry = "main"\nrtol = 0.25\natol = 0.5\ntimeout_s = 7\nmax_alloc = "1G"\nmemory = false\nbackend = "910B"\nexact = true\n'
        'name = "all"\nseed = 3\nrtoll = 1\n[cases.generate]\nx = [1, 2]\n'
    )
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text(_case_toml("passes_dump", extra))
    case = find_case(dumps)
    assert case.settings == RunSettings(0.25, 0.5, "main", 7.0, False, "910B", exact=True, max_alloc=1 << 30)
    assert (case.settings.max_alloc, case.seed, case.generate) == (1 << 30, 3, {"x": [1, 2]})
    assert case.notes == ["ignored unknown keys: rtoll"]
    assert [(w.line, w.key) for w in config_warnings(cfg)] == [(15, "rtoll")]


def test_explicit_config_argument(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "d" / "passes_dump")
    cfg = tmp_path / "elsewhere" / "my.toml"
    cfg.parent.mkdir()
    cfg.write_text(_case_toml("../d/passes_dump", inputs="i.pt", expected="e.pt"))
    case = find_case(dumps, cfg)
    assert case.inputs == (tmp_path / "elsewhere" / "i.pt").resolve()
    # a config with one case applies even when its dumps do not cover the path
    cfg.write_text(_case_toml("nowhere", inputs="i.pt", expected="e.pt"))
    assert find_case(dumps, cfg).inputs == (tmp_path / "elsewhere" / "i.pt").resolve()
    # two cases and none covers: an error naming the config
    cfg.write_text(_case_toml("nowhere") + _case_toml("nowhere2"))
    with pytest.raises(ConfigError, match="my.toml"):
        find_case(dumps, cfg)


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ('rtol = "big"', "rtol"),
        ("atol = -1", "atol"),
        ("timeout_s = true", "timeout_s"),
        ("rtol = [1]", "rtol"),
        ("timeout_s = -0.5", "timeout_s"),
    ],
)
def test_bad_values_raise_config_error_naming_the_key(tmp_path: Path, extra: str, key: str) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    (tmp_path / "pypto-lsp.toml").write_text(_case_toml("passes_dump", extra + "\n"))
    with pytest.raises(ConfigError) as info:
        find_case(dumps)
    assert f"'{key}'" in str(info.value) and "pypto-lsp.toml" in str(info.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[[cases]]\ninputs = "i.pt"\n', ["dumps"]),
        ("[[cases]]\ndumps = 3\n", ["dumps"]),
        ('[[cases]]\ndumps = "passes_dump"\ninputs = 1\n', ["inputs"]),
        ('cases = "x"\n', ["cases"]),
        ("cases = [1]\n", ["not a table"]),
        ("[[cases]\ndumps = \n", ["pypto-lsp.toml"]),
    ],
)
def test_malformed_configs(tmp_path: Path, text: str, words: list[str]) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    (tmp_path / "pypto-lsp.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        find_case(dumps)
    for w in words:
        assert w in str(info.value)


def test_nan_tolerance_is_a_config_error(tmp_path: Path) -> None:
    """Regression: 'v < 0' let NaN through; torch.allclose then raised out of run_text."""
    dumps = _dumps(tmp_path / "passes_dump")
    (tmp_path / "pypto-lsp.toml").write_text(_case_toml("passes_dump", "rtol = nan\n"))
    with pytest.raises(ConfigError, match="'rtol'"):
        find_case(dumps)


def test_non_string_entry_is_a_config_error(tmp_path: Path) -> None:
    """Regression: 'entry = 5' was taken as is and every file failed later with a no-entry error."""
    dumps = _dumps(tmp_path / "passes_dump")
    (tmp_path / "pypto-lsp.toml").write_text(_case_toml("passes_dump", "entry = 5\n"))
    with pytest.raises(ConfigError, match="'entry'"):
        find_case(dumps)


# ---------------------------------------------------------------------- defaults without a config


def test_golden_folder_beside_passes_dump_is_the_default(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "out" / "passes_dump")
    (tmp_path / "out" / "golden").mkdir()
    shutil.copy(GOLD_IN, tmp_path / "out" / "golden" / "inputs.pt")
    shutil.copy(GOLD_EXP, tmp_path / "out" / "golden" / "expected.pt")
    case = find_case(dumps / "11_after_ConvertTensorToTileOps.py")
    assert case.inputs == tmp_path / "out" / "golden" / "inputs.pt"
    assert case.expected == tmp_path / "out" / "golden" / "expected.pt"
    report = validate_passes(tmp_path / "out")  # the output folder holding passes_dump/
    assert [f.status for f in report.files] == [PASS] * 5


def test_tensors_pt_beside_passes_dump_and_missing_goldens(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    assert default_case(dumps).source == "none"
    # no goldens: the earliest dump on synthesized inputs is the reference (validate.differential)
    assert [f.status for f in validate_passes(dumps).files] == [PASS] * len(list(dumps.glob("*.py")))
    shutil.copy(GOLD_IN, tmp_path / "tensors.pt")
    shutil.copy(GOLD_EXP, tmp_path / "expected.pt")
    case = find_case(dumps)
    assert case.inputs == tmp_path / "tensors.pt" and case.expected == tmp_path / "expected.pt"


def test_discover_dumps(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    (dumps / "notes.log").write_text("x")
    (dumps / "sub").mkdir()
    (dumps / "sub" / "99_after_X.py").write_text("x")
    names = [f.name for f in discover_dumps(tmp_path)]
    assert names == sorted(names) and len(names) == 5 and names[0] == "00_frontend.py"
    assert discover_dumps(dumps) == discover_dumps(tmp_path)
    assert discover_dumps(dumps / "04_after_ConvertToSSA.py") == [dumps / "04_after_ConvertToSSA.py"]
    with pytest.raises(FileNotFoundError):
        discover_dumps(tmp_path / "missing")
    with pytest.raises(ValueError):
        discover_dumps(dumps / "notes.log")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError):
        discover_dumps(tmp_path / "empty")


def test_is_dump_path(tmp_path: Path) -> None:
    assert is_dump_path(Path("x/passes_dump/00_frontend.py"), "")
    assert is_dump_path(Path("x/y.py"), "# pypto.program: Foo\n")
    assert not is_dump_path(Path("x/y.py"), "import os\n")
    assert not is_dump_path(Path("x/passes_dump/notes.log"), "# pypto.program: X")


# ---------------------------------------------------------------------- bundles

_ST_DTYPES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.bool: "BOOL",
}


def write_safetensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """``safetensors.torch.save_file``; safetensors 0.8 needs numpy for it, so without numpy the same
    format (u64 header size, JSON header, raw little-endian data) is written directly."""
    try:
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in tensors.items()}, str(path))
        return
    except ModuleNotFoundError:
        pass
    header: dict[str, object] = {}
    blobs = []
    offset = 0
    for k, v in tensors.items():
        v = v.contiguous()
        n = v.numel() * v.element_size()
        blobs.append(ctypes.string_at(v.data_ptr(), n) if n else b"")
        header[k] = {"dtype": _ST_DTYPES[v.dtype], "shape": list(v.shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def test_safetensors_bundles(tmp_path: Path) -> None:
    ins = load_bundle(GOLD_IN)
    exp = load_bundle(GOLD_EXP)
    g = tmp_path / "golden"
    g.mkdir()
    write_safetensors(dict(ins), g / "inputs.safetensors")
    write_safetensors(dict(exp), g / "expected.safetensors")
    loaded = load_bundle(g / "inputs.safetensors")
    assert set(loaded) == set(ins) and all(torch.equal(loaded[k], ins[k]) for k in ins)
    dumps = _dumps(tmp_path / "passes_dump")
    case = find_case(dumps)  # default golden/ folder, .safetensors form
    assert case.inputs == g / "inputs.safetensors"
    report = validate_passes(dumps)
    assert [f.status for f in report.files] == [PASS] * 5
    # and as explicit bundle paths
    report = validate_passes(dumps, g / "inputs.safetensors", g / "expected.safetensors")
    assert report.ok


def test_missing_bundle(tmp_path: Path) -> None:
    with pytest.raises(GoldenError, match="not found"):
        load_bundle(tmp_path / "nope.pt")


def test_corrupt_pt(tmp_path: Path) -> None:
    p = tmp_path / "bad.pt"
    p.write_bytes(b"PK\x03\x04 this is not a torch file" * 10)
    with pytest.raises(GoldenError) as info:
        load_bundle(p)
    assert str(p) in str(info.value)
    q = tmp_path / "truncated.pt"
    q.write_bytes(GOLD_IN.read_bytes()[:200])
    with pytest.raises(GoldenError):
        load_bundle(q)


def test_corrupt_safetensors(tmp_path: Path) -> None:
    p = tmp_path / "bad.safetensors"
    p.write_bytes(b"\xff" * 64)
    with pytest.raises(GoldenError, match="bad.safetensors"):
        load_bundle(p)


@pytest.mark.parametrize("payload", [torch.zeros(3), [torch.zeros(3)], ("a", torch.zeros(1))], ids=["tensor", "list", "tuple"])
def test_pt_holding_a_non_dict(tmp_path: Path, payload: object) -> None:
    p = tmp_path / "x.pt"
    torch.save(payload, p)
    with pytest.raises(GoldenError, match="expected a dict"):
        load_bundle(p)


def test_pt_dict_with_bad_entries(tmp_path: Path) -> None:
    p = tmp_path / "x.pt"
    torch.save({"a": torch.zeros(1), "b": 3}, p)
    with pytest.raises(GoldenError, match="'b'"):
        load_bundle(p)
    torch.save({1: torch.zeros(1)}, p)
    with pytest.raises(GoldenError, match="not a string"):
        load_bundle(p)


class _Evil:
    """Unpickling this calls ``open(marker, "w")``: a file appears if code ran."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (builtins.open, (self.marker, "w"))


@pytest.mark.parametrize("how", ["torch.save", "pickle"])
def test_pickle_with_code_is_refused(tmp_path: Path, how: str) -> None:
    marker = tmp_path / "pwned"
    p = tmp_path / "evil.pt"
    payload = {"x": torch.zeros(2), "evil": _Evil(str(marker))}
    if how == "torch.save":
        torch.save(payload, p)
    else:
        with p.open("wb") as fh:
            pickle.dump(payload, fh, protocol=2)
    assert not marker.exists()
    with pytest.raises(GoldenError):
        load_bundle(p)
    assert not marker.exists(), "the pickle's code ran"


# ---------------------------------------------------------------------- save_golden


def test_save_golden_writes_bundles_and_a_case(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "out" / "passes_dump")
    ins, exp = load_bundle(GOLD_IN), load_bundle(GOLD_EXP)
    d = save_golden(tmp_path / "goldens" / "run1", ins, exp, dumps=dumps, entry="exp_add_mul", rtol=0.01, atol=0.001)
    assert d == tmp_path / "goldens" / "run1"
    assert set(load_bundle(d / "inputs.pt")) == {"x", "y", "out"}
    cfg = tmp_path / "goldens" / "pypto-lsp.toml"
    assert cfg.is_file()
    assert "[[cases]]" in cfg.read_text()
    # the config sits in goldens/, the dumps in out/: not on the dump's walk up -> pass it explicitly
    case = find_case(dumps / "00_frontend.py", cfg)
    assert case.inputs == (d / "inputs.pt").resolve() and case.expected == (d / "expected.pt").resolve()
    assert (case.settings.entry, case.settings.rtol, case.settings.atol) == ("exp_add_mul", 0.01, 0.001)
    report = validate_passes(dumps, config=cfg)
    assert report.ok and all(f.rtol == 0.01 and f.atol == 0.001 for f in report.files)


def test_save_golden_case_is_found_by_walking_up(tmp_path: Path) -> None:
    dumps = _dumps(tmp_path / "passes_dump")
    ins, exp = load_bundle(GOLD_IN), load_bundle(GOLD_EXP)
    save_golden(tmp_path / "golden_v2", ins, exp, dumps=dumps)  # config: tmp_path/pypto-lsp.toml
    text = (tmp_path / "pypto-lsp.toml").read_text()
    assert 'dumps = "passes_dump"' in text and 'inputs = "golden_v2/inputs.pt"' in text  # relative to the config
    case = find_case(dumps / "04_after_ConvertToSSA.py")
    assert case.inputs == (tmp_path / "golden_v2" / "inputs.pt").resolve()
    report = validate_passes(dumps)
    assert report.ok


def test_save_golden_appends_to_an_existing_config(tmp_path: Path) -> None:
    (tmp_path / "pypto-lsp.toml").write_text('# mine\n[[cases]]\ndumps = "other/passes_dump"\n')
    dumps = _dumps(tmp_path / "passes_dump")
    save_golden(tmp_path / "g", {"x": torch.zeros(1)}, {"out": torch.zeros(1)}, dumps=dumps)
    text = (tmp_path / "pypto-lsp.toml").read_text()
    assert text.startswith("# mine\n") and text.count("[[cases]]") == 2
    assert find_case(dumps).inputs == (tmp_path / "g" / "inputs.pt").resolve()


def test_save_golden_without_dumps_writes_no_config(tmp_path: Path) -> None:
    save_golden(tmp_path / "g", {"x": torch.ones(2)}, {"out": torch.ones(2)})
    assert not (tmp_path / "pypto-lsp.toml").exists()
    assert torch.equal(load_bundle(tmp_path / "g" / "expected.pt")["out"], torch.ones(2))


def test_save_golden_rejects_non_tensors(tmp_path: Path) -> None:
    with pytest.raises(GoldenError):
        save_golden(tmp_path / "g", {"x": [1, 2]}, {})  # type: ignore[dict-item]


def test_save_golden_escapes_paths_in_the_config(tmp_path: Path) -> None:
    """Regression: values were spliced into '"..."' without TOML escaping (invalid config for a '"' in a path)."""
    dumps = _dumps(tmp_path / 'we"ird' / "passes_dump")
    save_golden(
        tmp_path / 'we"ird' / "golden", {"x": torch.zeros(1)}, {"out": torch.zeros(1)}, dumps=dumps, config=tmp_path / "pypto-lsp.toml"
    )
    case = find_case(dumps)
    assert case.inputs == (tmp_path / 'we"ird' / "golden" / "inputs.pt").resolve()


def test_save_golden_never_corrupts_an_existing_config(tmp_path: Path) -> None:
    good = _dumps(tmp_path / "good" / "passes_dump")
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text(_case_toml("good/passes_dump", inputs="good/i.pt", expected="good/e.pt"))
    weird = tmp_path / os.fsdecode(b"caf\xe9")
    (weird / "passes_dump").mkdir(parents=True)
    try:
        save_golden(weird / "golden", {"x": torch.zeros(1)}, {"out": torch.zeros(1)}, dumps=weird / "passes_dump", config=cfg)
    except (GoldenError, ValueError):
        pass  # refusing such a path is fine
    assert find_case(good).inputs == (tmp_path / "good" / "i.pt").resolve()


# ---------------------------------------------------------------------- bundle vs entry parameters


def _validate_with(tmp_path: Path, ins: dict[str, torch.Tensor], exp: dict[str, torch.Tensor]) -> list:
    dumps = _dumps(tmp_path / "passes_dump")
    return validate_passes(dumps / "11_after_ConvertTensorToTileOps.py", ins, exp).files


def test_shape_mismatch_between_bundle_and_entry_is_an_error(tmp_path: Path) -> None:
    ins, exp = dict(load_bundle(GOLD_IN)), load_bundle(GOLD_EXP)
    ins["x"] = torch.zeros(32, 128)
    (fr,) = _validate_with(tmp_path, ins, exp)
    assert fr.status == ERROR and fr.error is not None and fr.error.kind == "golden"
    msg = fr.error.message
    assert "'x" in msg and "[32, 128]" in msg and "[64, 128]" in msg
    assert fr.error.line is not None  # on the entry function


def test_dtype_mismatch_between_bundle_and_entry_is_an_error(tmp_path: Path) -> None:
    ins, exp = dict(load_bundle(GOLD_IN)), load_bundle(GOLD_EXP)
    ins["y"] = ins["y"].to(torch.float16)
    (fr,) = _validate_with(tmp_path, ins, exp)
    assert fr.status == ERROR and fr.error is not None and fr.error.kind == "golden"
    assert "'y" in fr.error.message and "float16" in fr.error.message and "FP32" in fr.error.message


def test_missing_input_key_is_an_error(tmp_path: Path) -> None:
    ins, exp = dict(load_bundle(GOLD_IN)), load_bundle(GOLD_EXP)
    del ins["y"]
    (fr,) = _validate_with(tmp_path, ins, exp)
    assert fr.status == ERROR and fr.error is not None
    assert "y__ssa_v0" in fr.error.message and "'x'" in fr.error.message  # names the parameter and lists the keys


def test_expected_key_that_is_not_a_parameter_is_an_error(tmp_path: Path) -> None:
    ins, exp = load_bundle(GOLD_IN), dict(load_bundle(GOLD_EXP))
    exp["result"] = exp.pop("out")
    (fr,) = _validate_with(tmp_path, ins, exp)
    assert fr.status == ERROR and fr.error is not None and "'result'" in fr.error.message


def test_expected_shape_differs_from_the_output(tmp_path: Path) -> None:
    ins, exp = load_bundle(GOLD_IN), dict(load_bundle(GOLD_EXP))
    exp["out"] = exp["out"][:32]
    (fr,) = _validate_with(tmp_path, ins, exp)
    assert fr.status == ERROR and fr.error is not None
    assert "[32, 128]" in fr.error.message and "[64, 128]" in fr.error.message


def test_every_file_gets_fresh_input_copies(tmp_path: Path) -> None:
    ins, exp = load_bundle(GOLD_IN), load_bundle(GOLD_EXP)
    before = {k: v.clone() for k, v in ins.items()}
    dumps = _dumps(tmp_path / "passes_dump")
    report = validate_passes(dumps, ins, exp)
    assert report.ok and len(report.files) == 5
    assert all(torch.equal(ins[k], before[k]) for k in ins)
