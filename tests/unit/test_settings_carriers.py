"""A run setting is declared once, in ``RunSettings`` (validate/config.py): its metadata makes the
``validate`` flag, the editor setting the server reads, the extension's ``package.json`` entry and
the docs' rows (tools/gen_settings.py). These tests hold every carrier to the declaration, so a
field added there shows up everywhere or a test says which file to regenerate."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

from pypto_lsp.cli import build_parser, main, run_setting_flags
from pypto_lsp.server import config as scfg
from pypto_lsp.validate.carriers import carried
from pypto_lsp.validate.config import RunSettings, find_case
from pypto_lsp.worker import protocol as P

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "tools" / "gen_settings.py"
FILES = ("vscode-extension/package.json", "docs/configuration.md", "vscode-extension/README.md", "docs/cli.md")


def _gen(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GEN), "--root", str(root), *args], capture_output=True, text=True, timeout=120)


def test_package_json_and_the_docs_are_written_from_run_settings() -> None:
    r = _gen("--check")
    assert r.returncode == 0, r.stdout + r.stderr  # else: python tools/gen_settings.py
    props = json.loads((ROOT / FILES[0]).read_text(encoding="utf-8"))["contributes"]["configuration"]["properties"]
    for f, e in carried(RunSettings, "editor"):
        assert props[f"pypto-lsp.{e.key}"]["default"] == e.schema["default"], f.name
    table = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert all(f"| `{f.name}` |" in table for f in fields(RunSettings))  # every run setting has its row


def test_the_generator_writes_only_its_entries(tmp_path: Path) -> None:
    for rel in FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    pkg_path = tmp_path / FILES[0]
    pkg = json.loads(pkg_path.read_text(encoding="utf-8"))
    props = pkg["contributes"]["configuration"]["properties"]
    del props["pypto-lsp.maxAlloc"]  # a regeneration forgotten
    props["pypto-lsp.rtol"]["description"] = "stale"
    props["pypto-lsp.interpreter"]["markdownDescription"] = "the extension's own: kept"
    pkg_path.write_text(json.dumps(pkg, indent=2) + "\n", encoding="utf-8")
    doc = tmp_path / "docs" / "configuration.md"
    doc.write_text(doc.read_text(encoding="utf-8").replace("| `ranks` |", "| `rank_count` |"), encoding="utf-8")

    stale = _gen("--check", root=tmp_path)
    assert stale.returncode == 1 and "package.json: out of date" in stale.stdout and "configuration.md" in stale.stdout, stale.stdout
    assert _gen(root=tmp_path).returncode == 0
    assert _gen("--check", root=tmp_path).returncode == 0
    again = json.loads(pkg_path.read_text(encoding="utf-8"))["contributes"]["configuration"]["properties"]
    original = json.loads((ROOT / FILES[0]).read_text(encoding="utf-8"))["contributes"]["configuration"]["properties"]
    assert again["pypto-lsp.interpreter"]["markdownDescription"] == "the extension's own: kept"
    assert list(again) == list(original)  # the same entries in the same order
    assert (tmp_path / "vscode-extension" / "README.md").read_text(encoding="utf-8") == (ROOT / FILES[2]).read_text(encoding="utf-8")

    props = again
    props["pypto-lsp.notARunSetting"] = {"type": "boolean", "default": False}  # in package.json only: no run setting
    pkg["contributes"]["configuration"]["properties"] = props
    pkg_path.write_text(json.dumps(pkg, indent=2) + "\n", encoding="utf-8")
    stray = _gen("--check", root=tmp_path)
    assert stray.returncode == 2 and "'pypto-lsp.notARunSetting'" in stray.stderr, stray.stderr


def test_every_declared_flag_is_a_validate_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["validate", "--help"])
    usage = capsys.readouterr().out
    for _, flag in carried(RunSettings, "flag"):
        assert f"[{flag.name}" in usage and flag.options.get("help", "")[:20] in usage, flag.name
    given = build_parser().parse_args(
        ["validate", "d", "--rtol", "0.1", "--atol", "0", "--entry", "main", "--timeout", "5", "--memory", "off"]
        + ["--exact", "--max-alloc", "2G", "--sanitize", "off"]
    )
    values = run_setting_flags(given)
    assert values == {
        "rtol": 0.1,
        "atol": 0.0,
        "entry": "main",
        "timeout_s": 5.0,
        "memory": False,
        "exact": True,
        "max_alloc": 2 << 30,
        "sanitize": False,
    }
    assert RunSettings(backend="910B").override(**values) == RunSettings(backend="910B", **values)
    assert run_setting_flags(build_parser().parse_args(["validate", "d"])) == {}  # none given: the case's values stay


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rtol", "nan"], "--rtol must be a number >= 0, got nan"),
        (["--atol", "inf"], "--atol must be a finite number, got inf"),
        (["--timeout", "-1"], "--timeout must be a number >= 0, got -1.0"),
        (["--max-alloc", "lots"], "--max-alloc: "),
    ],
)
def test_a_bad_flag_value_is_a_usage_error(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(ROOT / "examples" / "elementwise" / "passes_dump"), *argv]) == 2
    assert f"pypto-lsp validate: {message}" in capsys.readouterr().err


def _sample(schema: dict) -> object:
    """A valid value other than the default, for an editor setting of this schema."""
    if "enum" in schema:  # sanitize: true, false or "strict"
        return next(v for v in schema["enum"] if v != schema["default"])
    return {"boolean": lambda d: not d, "number": lambda d: d + 1, "string": lambda d: "2M"}[schema["type"]](schema["default"])


def test_every_editor_key_is_read_and_the_case_wins_where_it_sets_a_value(tmp_path: Path) -> None:
    editor = carried(RunSettings, "editor")
    assert editor, "no run setting has an editor key"
    raw = {e.key: _sample(dict(e.schema)) for _, e in editor}
    settings, problems = scfg.merge(scfg.Settings(), {"pypto-lsp": {**raw, "interpreter": "python3", "trace": {"server": "off"}}})
    assert problems == []
    for f, e in editor:
        assert settings.run[f.name] == f.metadata["check"](raw[e.key], e.key), e.key  # the value the check makes of it
        bad, problems = scfg.merge(settings, {e.key: [1]})  # no setting is a list
        assert bad.run[f.name] == settings.run[f.name] and len(problems) == 1 and f"'{e.key}'" in problems[0], problems
        assert f.name not in scfg.merge(settings, {e.key: None})[0].run  # null: not set any more

    dumps = tmp_path / "passes_dump"
    dumps.mkdir()
    dump = dumps / "00_frontend.py"
    dump.write_text("# pypto.program: P\n")
    (tmp_path / "pypto-lsp.toml").write_text('[[cases]]\ndumps = "passes_dump"\n')
    assert scfg.resolve(dump, settings, None).settings == replace(RunSettings(), **settings.run)  # the case keeps the defaults
    case_values = {"rtol": 0.5, "memory": False, "exact": True, "max_alloc": 1024}  # the TOML keys, by the fields' names
    (tmp_path / "pypto-lsp.toml").write_text(
        '[[cases]]\ndumps = "passes_dump"\nrtol = 0.5\nmemory = false\nexact = true\nmax_alloc = "1K"\n'
    )
    assert find_case(dump).settings == replace(RunSettings(), **case_values)
    resolved = scfg.resolve(dump, settings, None).settings
    for f, _ in editor:
        assert getattr(resolved, f.name) == case_values.get(f.name, settings.run[f.name]), f.name


def test_the_worker_requests_carry_every_setting_whole() -> None:
    s = RunSettings(0.25, 0.5, "main", 7.0, False, "910B", True, 1 << 20, False, 4)  # none at its default
    params = P.ValidateParams(file="/f.py", text="", golden=P.Golden("/i.pt", "/e.pt"), settings=s)
    wire = json.loads(json.dumps(P.to_wire(params)))
    assert set(wire["settings"]) == {f.name for f in fields(RunSettings)}
    assert P.from_wire(P.ValidateParams, wire).settings == s
    assert set(s.engine_kwargs()) == {f.name for f in fields(RunSettings)} - {"timeout_s"} | {"timeout"}
    # sanitize takes a third value, "strict": it crosses the wire as it is (a bool | str field)
    strict = replace(s, sanitize="strict")
    wire = json.loads(json.dumps(P.to_wire(P.ValidateParams(file="/f.py", text="", golden=P.Golden("/i.pt", "/e.pt"), settings=strict))))
    assert P.from_wire(P.ValidateParams, wire).settings.sanitize == "strict"
