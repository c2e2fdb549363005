"""The command line: ``python -m pypto_lsp check | validate | codegen`` as a subprocess.

Every ``validate``/``codegen`` run imports torch (a few seconds), so the slow runs are
started together by one module fixture (phase 1 in parallel, phase 2 after it, for the
runs that need phase 1's cache) and the tests only read their results.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
ELEMENTWISE = "examples/elementwise/passes_dump"
BROKEN = "examples/broken_elementwise/passes_dump"
DUMP_11 = "examples/elementwise/passes_dump/11_after_ConvertTensorToTileOps.py"
BANNER = "=" * 20


@dataclass
class Run:
    args: tuple[str, ...]
    rc: int
    out: str
    err: str
    wall: float

    def json(self) -> dict:
        return json.loads(self.out)


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYPTO_LSP_CACHE_DIR"] = str(cache)
    env.pop("PYTHONWARNINGS", None)
    return env


def _start(args: tuple[str, ...], cache: Path) -> tuple[subprocess.Popen[str], float]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pypto_lsp", *args], cwd=ROOT, env=_env(cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return proc, time.monotonic()


def _finish(args: tuple[str, ...], started: tuple[subprocess.Popen[str], float]) -> Run:
    proc, t0 = started
    out, err = proc.communicate(timeout=180)
    return Run(args, proc.returncode, out, err, time.monotonic() - t0)


def cli(*args: str, cache: Path) -> Run:
    return _finish(args, _start(args, cache))


def _bad_case(root: Path) -> Path:
    """A case folder: the elementwise dumps plus one that errors (an unknown op on line 11), goldens by absolute path."""
    case = root / "bad_case"
    dumps = case / "passes_dump"
    shutil.copytree(EX / "elementwise" / "passes_dump", dumps)
    text = (dumps / "11_after_ConvertTensorToTileOps.py").read_text()
    bad = text.replace(
        "t__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.adds(x_chunk__tile, 1.0)",
        "t__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.no_such_op(x_chunk__tile, y_chunk__tile)",
    )
    assert bad != text
    (dumps / "40_after_Broken.py").write_text(bad)
    gold = EX / "elementwise" / "golden"
    (case / "pypto-lsp.toml").write_text(
        f'[[cases]]\ndumps = "passes_dump"\ninputs = {json.dumps(str(gold / "inputs.pt"))}\nexpected = {json.dumps(str(gold / "expected.pt"))}\n'
    )
    return case


def _missing_bundle_case(root: Path) -> Path:
    case = root / "missing_bundle"
    shutil.copytree(EX / "elementwise" / "passes_dump", case / "passes_dump")
    (case / "pypto-lsp.toml").write_text(
        '[[cases]]\ndumps = "passes_dump"\ninputs = "golden/nope.pt"\nexpected = "golden/nope_expected.pt"\n'
    )
    return case


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    root = tmp_path_factory.mktemp("cli")
    cache = root / "cache"
    nocache = root / "nocache"
    bad = _bad_case(root)
    missing = _missing_bundle_case(root)
    phase1 = {
        "ok_json": (("validate", ELEMENTWISE, "--json"), cache),
        "broken_json": (("validate", BROKEN, "--json", "--no-cache"), nocache),
        "broken_text": (("validate", BROKEN, "--no-cache"), nocache),
        "broken_no_localize": (("validate", BROKEN, "--json", "--no-cache", "--no-localize"), nocache),
        "tight": (("validate", str(bad / "passes_dump"), "--json", "--atol", "1e-9", "--rtol", "0", "--no-cache"), nocache),
        "missing_bundle": (("validate", str(missing / "passes_dump")), nocache),
        "codegen": (("codegen", DUMP_11), nocache),
        "neg_rtol": (("validate", ELEMENTWISE, "--rtol", "-1", "--no-cache"), nocache),
    }
    started = {k: (a, _start(a, c)) for k, (a, c) in phase1.items()}
    out = {k: _finish(a, s) for k, (a, s) in started.items()}
    # phase 2 reads the cache phase 1 wrote
    phase2 = {
        "cached": (("validate", "examples/elementwise", "--json"), cache),
        "cached_no_cache": (("validate", ELEMENTWISE, "--json", "--no-cache"), cache),
    }
    out["cache_files_before"] = Run((), len(list(cache.glob("*/*.json"))), "", "", 0.0)
    started2 = {k: (a, _start(a, c)) for k, (a, c) in phase2.items()}
    out.update({k: _finish(a, s) for k, (a, s) in started2.items()})
    out["cache_files_after"] = Run((), len(list(cache.glob("*/*.json"))), "", "", 0.0)
    out["nocache_dir_exists"] = Run((), int(nocache.exists()), "", "", 0.0)
    return out


# ---------------------------------------------------------------------- check (no torch: cheap)


def test_check_clean_text_exit_0(tmp_path: Path) -> None:
    r = cli("check", ELEMENTWISE, "examples/mixed_matmul/passes_dump", cache=tmp_path)
    assert r.rc == 0, r.err
    assert ": error:" not in r.out
    assert "10 file(s) checked, no errors" in r.err


def test_check_errors_text_exit_1(tmp_path: Path) -> None:
    r = cli("check", "tests/badinput/ir_shape_contradicts_load.py", cache=tmp_path)
    assert r.rc == 1
    lines = r.out.strip().splitlines()
    assert lines[0].startswith("tests/badinput/ir_shape_contradicts_load.py:8:9: error: ")
    assert lines[0].endswith("[shape-mismatch]")


def test_check_json_shape(tmp_path: Path) -> None:
    r = cli("check", "tests/badinput/ir_shape_contradicts_load.py", ELEMENTWISE + "/00_frontend.py", "--json", cache=tmp_path)
    assert r.rc == 1
    data = json.loads(r.out)
    assert set(data) == {"files"}
    assert [f["file"] for f in data["files"]] == ["tests/badinput/ir_shape_contradicts_load.py", ELEMENTWISE + "/00_frontend.py"]
    bad, good = data["files"]
    assert set(bad) == {"file", "diagnostics"} and good["diagnostics"] == []
    d = bad["diagnostics"][0]
    assert {"line", "column", "severity", "code", "message"} <= set(d)
    assert (d["line"], d["column"], d["severity"], d["code"]) == (8, 9, "error", "shape-mismatch")
    assert isinstance(d["message"], str) and d["message"]


def test_check_json_clean_exit_0(tmp_path: Path) -> None:
    r = cli("check", ELEMENTWISE, "--json", cache=tmp_path)
    assert r.rc == 0
    files = json.loads(r.out)["files"]
    assert len(files) == 5 and all(f["diagnostics"] == [] or all(d["severity"] != "error" for d in f["diagnostics"]) for f in files)


def test_check_missing_path_exit_2(tmp_path: Path) -> None:
    r = cli("check", str(tmp_path / "nope"), cache=tmp_path)
    assert r.rc == 2
    assert "no such file or folder" in r.err and "nope" in r.err


def test_no_command_and_version(tmp_path: Path) -> None:
    assert cli(cache=tmp_path).rc == 2
    v = cli("--version", cache=tmp_path)
    assert v.rc == 0 and v.out.startswith("pypto-lsp ")


# ---------------------------------------------------------------------- validate: usage errors (before torch)


def test_inputs_without_expected_exit_2(tmp_path: Path) -> None:
    r = cli("validate", ELEMENTWISE, "--inputs", "examples/elementwise/golden/inputs.pt", cache=tmp_path)
    assert r.rc == 2
    assert "--inputs and --expected go together" in r.err


def test_expected_without_inputs_exit_2(tmp_path: Path) -> None:
    r = cli("validate", ELEMENTWISE, "--expected", "examples/elementwise/golden/expected.pt", cache=tmp_path)
    assert r.rc == 2


def test_missing_config_file_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "absent.toml"
    r = cli("validate", ELEMENTWISE, "--config", str(cfg), cache=tmp_path)
    assert r.rc == 2
    assert str(cfg) in r.err and r.out == ""


def test_bad_config_value_exit_2_names_the_key(tmp_path: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(EX / "elementwise" / "passes_dump", case / "passes_dump")
    (case / "pypto-lsp.toml").write_text('[[cases]]\ndumps = "passes_dump"\ninputs = "a.pt"\nexpected = "b.pt"\nrtol = "big"\n')
    r = cli("validate", str(case / "passes_dump"), cache=tmp_path)
    assert r.rc == 2
    assert "'rtol'" in r.err and "pypto-lsp.toml" in r.err


def test_no_goldens_anywhere_compares_with_the_frontend(tmp_path: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(EX / "elementwise" / "passes_dump", case / "passes_dump")
    r = cli("validate", str(case / "passes_dump"), cache=tmp_path)
    assert r.rc == 0, r.err
    assert "compared with: 00_frontend.py run on synthesized inputs (no goldens; seed 0)" in r.out
    assert r.out.rstrip().endswith("compared with: 00_frontend (no goldens)")


def test_missing_dump_path_exit_2(tmp_path: Path) -> None:
    r = cli("validate", str(tmp_path / "nowhere"), cache=tmp_path)
    assert r.rc == 2 and "nowhere" in r.err


def test_validate_a_non_py_file_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "run.log"
    f.write_text("x")
    r = cli("validate", str(f), cache=tmp_path)
    assert r.rc == 2 and "run.log" in r.err


@pytest.mark.parametrize("flag", ["--atol", "--timeout"])
def test_bad_numbers_are_usage_errors(tmp_path: Path, flag: str) -> None:
    r = cli("validate", ELEMENTWISE, flag, "nan", cache=tmp_path)
    assert r.rc == 2 and flag in r.err


def test_codegen_missing_file_exit_2(tmp_path: Path) -> None:
    r = cli("codegen", str(tmp_path / "nope.py"), cache=tmp_path)
    assert r.rc == 2 and "no such file" in r.err


def test_codegen_of_an_unparsable_dump_exit_1(tmp_path: Path) -> None:
    r = cli("codegen", "tests/badinput/syntax_missing_colon.py", cache=tmp_path)
    assert r.rc == 1
    assert "syntax_missing_colon.py:" in r.err and r.out == ""


# ---------------------------------------------------------------------- validate: the shared runs

FILE_KEYS = {"file", "status", "tensors", "error", "seconds"}
TENSOR_KEYS = {"max_abs_diff", "max_rel_diff", "pass"}


def _check_schema(data: dict) -> None:
    assert set(data) == {"files", "first_divergent", "summary", "compared_with"}
    assert data["compared_with"]["kind"] in ("goldens", "frontend") and isinstance(data["compared_with"]["label"], str)
    assert set(data["summary"]) == {"pass", "fail", "error", "ran", "seconds", "executor"}
    assert data["summary"]["executor"] == "in-process" or data["summary"]["executor"].startswith("processes:")
    for k in ("pass", "fail", "error", "ran"):
        assert isinstance(data["summary"][k], int)
    assert isinstance(data["summary"]["seconds"], float | int)
    assert data["first_divergent"] is None or isinstance(data["first_divergent"], str)
    for f in data["files"]:
        assert FILE_KEYS <= set(f), f.keys()
        assert isinstance(f["file"], str) and f["status"] in ("pass", "fail", "error", "ran")
        assert isinstance(f["seconds"], float | int) and f["seconds"] >= 0
        for name, tr in f["tensors"].items():
            assert isinstance(name, str)
            assert TENSOR_KEYS <= set(tr)
            assert isinstance(tr["pass"], bool)
            for k in ("max_abs_diff", "max_rel_diff"):
                assert tr[k] is None or isinstance(tr[k], float | int)
        if f["error"] is not None:
            assert {"kind", "message", "line", "column"} <= set(f["error"])
            assert isinstance(f["error"]["kind"], str) and isinstance(f["error"]["message"], str)
            assert f["error"]["line"] is None or isinstance(f["error"]["line"], int)
    counts = {s: sum(f["status"] == s for f in data["files"]) for s in ("pass", "fail", "error", "ran")}
    assert counts == {k: data["summary"][k] for k in counts}


def test_validate_json_schema_and_exit_0(runs: dict[str, Run]) -> None:
    r = runs["ok_json"]
    assert r.rc == 0, r.err
    data = r.json()
    _check_schema(data)
    names = [Path(f["file"]).name for f in data["files"]]
    assert names == sorted(names) and len(names) == 5 and names[0] == "00_frontend.py"
    assert all(f["status"] == "pass" and f["error"] is None for f in data["files"])
    assert all(set(f["tensors"]) == {"out"} and f["tensors"]["out"]["pass"] for f in data["files"])
    assert data["first_divergent"] is None
    s = data["summary"]
    assert (s["pass"], s["fail"], s["error"], s["ran"]) == (5, 0, 0, 0)
    # validation time only: no interpreter start-up or imports in it
    assert 0 < s["seconds"] < r.wall
    assert all(f["seconds"] <= s["seconds"] + 1e-3 for f in data["files"])  # files may run in parallel workers


def test_validate_broken_exit_1_first_divergent(runs: dict[str, Run]) -> None:
    r = runs["broken_json"]
    assert r.rc == 1, r.err
    data = r.json()
    _check_schema(data)
    assert Path(data["first_divergent"]).name == "11_after_ConvertTensorToTileOps.py"
    status = {Path(f["file"]).stem: f["status"] for f in data["files"]}
    assert status == {
        "00_frontend": "pass",
        "04_after_ConvertToSSA": "pass",
        "09_after_OutlineIncoreScopes": "pass",
        "11_after_ConvertTensorToTileOps": "fail",
        "32_after_InitMemRef": "fail",
    }
    failing = [f for f in data["files"] if f["status"] == "fail"]
    assert all(f["tensors"]["out"]["pass"] is False and f["tensors"]["out"]["max_abs_diff"] > 1.0 for f in failing)
    assert data["summary"]["fail"] == 2 and data["summary"]["pass"] == 3
    # the first divergent file's entry says which value first differs from the pass before
    v = failing[0]["first_differing_value"]
    assert (v["line"], v["name"], v["occurrence"], v["previous_line"]) == (10, "y_chunk__tile", 1, 10)
    assert "first_differing_value" not in failing[1]


def test_validate_no_localize(runs: dict[str, Run]) -> None:
    r = runs["broken_no_localize"]
    assert r.rc == 1, r.err
    data = r.json()
    _check_schema(data)
    assert all("first_differing_value" not in f for f in data["files"])


def test_validate_text_mode_banner_lines_and_summary(runs: dict[str, Run]) -> None:
    r = runs["broken_text"]
    assert r.rc == 1
    lines = r.out.splitlines()
    assert lines[0] == f"{BANNER} 00_frontend {BANNER}"
    assert lines[1].startswith("validate tensor: 'out', max_abs_diff: ") and lines[1].endswith(", pass: True")
    diff = lines[1].split("max_abs_diff: ")[1].split(",")[0]
    float(diff)
    assert "e" in diff and len(diff.split("e")[0].split(".")[1]) == 6  # %.6e as PyPTO prints it
    for stem in ("04_after_ConvertToSSA", "09_after_OutlineIncoreScopes", "11_after_ConvertTensorToTileOps", "32_after_InitMemRef"):
        assert f"{BANNER} {stem} {BANNER}" in lines
    i11 = lines.index(f"{BANNER} 11_after_ConvertTensorToTileOps {BANNER}")
    assert lines[i11 + 1].endswith(", pass: False")
    assert "3 pass, 2 fail, 0 error in" in r.out  # no "0 ran": nothing was run without a comparison
    assert any(ln.startswith("first divergent pass: 11_after_ConvertTensorToTileOps.py") for ln in lines)
    assert any(
        ln.startswith(
            "  11_after_ConvertTensorToTileOps.py:10: first value that differs from 09_after_OutlineIncoreScopes.py: 'y_chunk__tile'"
        )
        for ln in lines
    ), r.out
    assert "\r[" not in r.err  # no progress line when stderr is not a terminal


def test_tight_tolerances_make_a_passing_case_fail(runs: dict[str, Run]) -> None:
    r = runs["tight"]
    assert r.rc == 1, r.err
    data = r.json()
    _check_schema(data)
    by = {Path(f["file"]).stem: f for f in data["files"]}
    # with default tolerances these pass (ok_json); at atol=1e-9, rtol=0 their 2e-5 diff fails
    for stem in ("00_frontend", "04_after_ConvertToSSA", "09_after_OutlineIncoreScopes", "11_after_ConvertTensorToTileOps"):
        assert by[stem]["status"] == "fail", by[stem]
        assert 0 < by[stem]["tensors"]["out"]["max_abs_diff"] < 1e-3
    err = by["40_after_Broken"]
    assert err["status"] == "error" and err["tensors"] == {}
    assert err["error"]["line"] == 11 and "no_such_op" in err["error"]["message"]
    assert Path(data["first_divergent"]).stem == "00_frontend"
    assert data["summary"]["error"] == 1


def test_tolerances_are_respected_compared_to_defaults(runs: dict[str, Run]) -> None:
    ok = {Path(f["file"]).stem: f for f in runs["ok_json"].json()["files"]}
    tight = {Path(f["file"]).stem: f for f in runs["tight"].json()["files"]}
    for stem, f in ok.items():
        assert f["status"] == "pass" and tight[stem]["status"] == "fail"
        assert f["tensors"]["out"]["max_abs_diff"] == pytest.approx(tight[stem]["tensors"]["out"]["max_abs_diff"])


def test_missing_golden_bundle_exit_2(runs: dict[str, Run]) -> None:
    r = runs["missing_bundle"]
    assert r.rc == 2
    assert "nope.pt" in r.err and "not found" in r.err
    assert r.out == ""


def test_codegen_prints_a_script_that_compiles(runs: dict[str, Run]) -> None:
    r = runs["codegen"]
    assert r.rc == 0, r.err
    tree = ast.parse(r.out)
    compile(r.out, "<codegen>", "exec")
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert names == {"_pl_fn_exp_add_mul_incore_0", "_pl_fn_exp_add_mul"}
    assert "import pypto_lsp.exec.runtime as _pl_rt" in r.out
    # the IR names are bound too, so ns["exp_add_mul"] works as in the debug guide
    assert "exp_add_mul = _pl_fn_exp_add_mul" in r.out.splitlines()


def test_result_cache_is_used_and_no_cache_bypasses_it(runs: dict[str, Run]) -> None:
    first = runs["ok_json"].json()["files"]
    assert not any(f.get("cached") for f in first)
    assert runs["cache_files_before"].rc >= 1  # phase 1 wrote entries
    cached = runs["cached"]  # the output folder holding passes_dump/, same goldens
    assert cached.rc == 0
    data = cached.json()
    assert len(data["files"]) == 5 and all(f.get("cached") is True for f in data["files"])
    assert [f["tensors"] for f in data["files"]] == [f["tensors"] for f in first]
    no = runs["cached_no_cache"]
    assert no.rc == 0
    assert not any(f.get("cached") for f in no.json()["files"])
    assert runs["cache_files_after"].rc == runs["cache_files_before"].rc  # --no-cache wrote nothing
    assert runs["nocache_dir_exists"].rc == 0  # runs with --no-cache never created their cache dir


def test_negative_tolerance_is_a_usage_error(runs: dict[str, Run]) -> None:
    """Regression: --rtol -1 reached torch.allclose and escaped as a RuntimeError traceback (exit 1)."""
    r = runs["neg_rtol"]
    assert r.rc == 2, (r.rc, r.err[-300:])
    assert "rtol" in r.err and "Traceback" not in r.err
