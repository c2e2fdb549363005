"""validate --junit / --sarif: a folder with failing passes and an erroring one.

JUnit is read back with xml.etree; SARIF is validated with jsonschema against the official
SARIF 2.1.0 schema vendored in tests/data/sarif/ (see the README there).
"""

from __future__ import annotations

import copy
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from pypto_lsp import cli

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """broken_elementwise against its goldens, plus a file with an undefined name (an error)."""
    tmp = tmp_path_factory.mktemp("ci")
    shutil.copytree(EX / "elementwise", tmp / "elementwise")
    shutil.copytree(EX / "broken_elementwise", tmp / "broken_elementwise")
    dumps = tmp / "broken_elementwise" / "passes_dump"
    bad = (dumps / "32_after_InitMemRef.py").read_text().replace("pl.tile.exp(t__tile)", "pl.tile.exp(t__tile_nowhere)")
    (dumps / "40_after_Bogus.py").write_text(bad)
    mp = pytest.MonkeyPatch()
    mp.setenv("PYPTO_LSP_CACHE_DIR", str(tmp / "cache"))
    mp.chdir(tmp)
    try:
        rc = cli.main(["validate", str(dumps), "--junit", "out/report.xml", "--sarif", "out/report.sarif", "--jobs", "1"])
    finally:
        mp.undo()
    return {"rc": rc, "junit": ET.parse(tmp / "out" / "report.xml"), "sarif": json.loads((tmp / "out" / "report.sarif").read_text())}


def test_junit_suite_per_folder_case_per_pass(outputs: dict) -> None:
    assert outputs["rc"] == 1
    root = outputs["junit"].getroot()
    assert root.tag == "testsuites" and (root.get("tests"), root.get("failures"), root.get("errors")) == ("6", "2", "1")
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "broken_elementwise"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["compared_with"] == "goldens" and props["first_divergent"] == "11_after_ConvertTensorToTileOps.py"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == [
        "00_frontend",
        "04_after_ConvertToSSA",
        "09_after_OutlineIncoreScopes",
        "11_after_ConvertTensorToTileOps",
        "32_after_InitMemRef",
        "40_after_Bogus",
    ]
    assert all(c.get("classname") == "broken_elementwise" for c in cases.values())
    for name in ("00_frontend", "04_after_ConvertToSSA", "09_after_OutlineIncoreScopes"):
        assert not list(cases[name])  # passed: no failure, no error
    f11 = cases["11_after_ConvertTensorToTileOps"].find("failure")
    assert f11 is not None
    msg = f11.get("message", "")
    # the tensor, max |Δ|, the tolerance and the IR line (the localised first differing value)
    assert "'out'" in msg and "max |Δ| 146" in msg and "rtol 0.05, atol 0.05" in msg and "at line 10" in msg and "vs goldens" in msg
    assert "first value that differs from 09_after_OutlineIncoreScopes.py" in (f11.text or "")
    f32 = cases["32_after_InitMemRef"].find("failure")
    assert f32 is not None and "at line 19" in f32.get("message", "")  # the store that wrote out
    err = cases["40_after_Bogus"].find("error")
    assert err is not None and cases["40_after_Bogus"].find("failure") is None
    assert "t__tile_nowhere" in err.get("message", "") and err.get("type", "").startswith("static:")
    assert cases["40_after_Bogus"].get("line") == "17"


def test_sarif_is_schema_valid_with_rules_files_and_regions(outputs: dict) -> None:
    log = outputs["sarif"]
    jsonschema.validate(log, SCHEMA)
    (run,) = log["runs"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    results = run["results"]
    assert {r["ruleId"] for r in results} == set(rules) == {"numeric-mismatch", "static-error", "first-divergent-pass"}
    for r in results:
        assert rules[r["ruleIndex"]] == r["ruleId"]
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"].startswith("broken_elementwise/passes_dump/") and loc["region"]["startLine"] >= 1
    by = {(r["ruleId"], Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name): r for r in results}
    assert by[("numeric-mismatch", "11_after_ConvertTensorToTileOps.py")]["locations"][0]["physicalLocation"]["region"]["startLine"] == 10
    static = by[("static-error", "40_after_Bogus.py")]["locations"][0]["physicalLocation"]["region"]
    assert static["startLine"] == 17 and static["startColumn"] > 1
    first = by[("first-divergent-pass", "11_after_ConvertTensorToTileOps.py")]
    assert first["level"] == "warning" and first["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 10


def test_the_schema_check_can_fail(outputs: dict) -> None:
    """The vendored schema constrains what we write: a broken log does not validate."""
    bad = copy.deepcopy(outputs["sarif"])
    bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)
    bad = copy.deepcopy(outputs["sarif"])
    bad["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


def test_differential_results_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(EX / "broken_elementwise" / "passes_dump", tmp_path / "broken" / "passes_dump")
    monkeypatch.setenv("PYPTO_LSP_CACHE_DIR", str(tmp_path / "cache"))
    rc = cli.main(
        ["validate", str(tmp_path / "broken" / "passes_dump"), "--junit", str(tmp_path / "j.xml"), "--sarif", str(tmp_path / "s.sarif")]
    )
    assert rc == 1
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "broken"
    fails = [f.get("message", "") for f in suite.iter("failure")]
    assert len(fails) == 2 and all("vs 00_frontend (no goldens)" in m for m in fails)
    log = json.loads((tmp_path / "s.sarif").read_text())
    jsonschema.validate(log, SCHEMA)
    assert all("00_frontend (no goldens)" in r["message"]["text"] for r in log["runs"][0]["results"])


def test_every_finding_and_error_that_fails_a_file_has_a_rule() -> None:
    """A rule id with no entry in RULES was a KeyError that wrote no SARIF at all: a multi-rank
    run's ``fence`` finding did (examples/broken_ranks_fence with --sarif, found by a folder fuzz)."""
    from pypto_lsp.formats.ci_formats import RULES, finding_rule, rule_for
    from pypto_lsp.validate.report import FAILING_FINDINGS

    assert {finding_rule(k) for k in FAILING_FINDINGS} <= set(RULES)
    errors = ("static:undefined", "codegen", "cross-core:deadlock", "golden", "TimeoutError", "alloc-budget")
    assert {rule_for(k) for k in errors} <= set(RULES)


def test_a_multi_rank_fence_finding_is_a_sarif_result_on_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(EX / "broken_ranks_fence", tmp_path / "case")
    monkeypatch.setenv("PYPTO_LSP_CACHE_DIR", str(tmp_path / "cache"))
    rc = cli.main(["validate", str(tmp_path / "case"), "--sarif", str(tmp_path / "s.sarif"), "--jobs", "1"])
    assert rc == 1
    log = json.loads((tmp_path / "s.sarif").read_text())
    jsonschema.validate(log, SCHEMA)
    fences = [r for r in log["runs"][0]["results"] if r["ruleId"] == "sanitizer/fence"]
    assert fences and all(r["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1 for r in fences)
