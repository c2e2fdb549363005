"""The one writer of ``[[cases]]`` (validate/case_writer.py): appends, updates in place keeping
the user's lines, refuses (file unchanged) what would not read back."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from pypto_lsp.validate.case_writer import config_for, golden_entry, write_case
from pypto_lsp.validate.config import ConfigError, find_case

ENTRY = {"dumps": "passes_dump", "inputs": "golden/inputs.pt", "expected": "golden/expected.pt"}


def test_a_new_file_gets_one_case(tmp_path: Path) -> None:
    cfg = tmp_path / "pypto-lsp.toml"
    assert write_case(cfg, ENTRY, update=True) == "added"
    assert cfg.read_text() == '[[cases]]\ndumps = "passes_dump"\ninputs = "golden/inputs.pt"\nexpected = "golden/expected.pt"\n'


def test_configuring_again_updates_the_case_in_place_and_keeps_the_users_lines(tmp_path: Path) -> None:
    cfg = tmp_path / "pypto-lsp.toml"
    text = (
        "# my goldens\n"
        "rtol = 1e-3\n\n"
        "[[cases]]\n"
        "dumps = 'other'\n"
        "inputs = 'a.pt'\n"
        "expected = 'b.pt'\n\n"
        "[[cases]]  # the model\n"
        "dumps = './passes_dump/'\n"
        "atol = 0.5   # loose on purpose\n"
        "inputs = 'old/in.pt'\n"
        "\n"
        "[cases.generate]\n"
        "x = {low = 0, high = 1}\n"
    )
    cfg.write_text(text)
    assert write_case(cfg, ENTRY, update=True) == "updated"
    out = cfg.read_text()
    # only the keys written changed; the missing 'expected' went in after the others
    assert out == text.replace("inputs = 'old/in.pt'\n", 'inputs = "golden/inputs.pt"\nexpected = "golden/expected.pt"\n').replace(
        "dumps = './passes_dump/'", 'dumps = "passes_dump"'
    )
    data = tomllib.loads(out)
    assert data["cases"][0] == {"dumps": "other", "inputs": "a.pt", "expected": "b.pt"}
    assert data["cases"][1]["atol"] == 0.5 and data["cases"][1]["generate"] == {"x": {"low": 0, "high": 1}}
    dumps = tmp_path / "passes_dump"
    dumps.mkdir()
    (dumps / "00_frontend.py").write_text("# pypto.program: p\n")
    c = find_case(dumps / "00_frontend.py")
    assert c.inputs == tmp_path / "golden/inputs.pt" and c.expected == tmp_path / "golden/expected.pt"


def test_crlf_files_stay_crlf(tmp_path: Path) -> None:
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_bytes(b"[[cases]]\r\ndumps = 'passes_dump'\r\ninputs = 'x.pt'\r\n")
    write_case(cfg, ENTRY, update=True)
    raw = cfg.read_bytes()
    assert b"\n" not in raw.replace(b"\r\n", b"") and b'inputs = "golden/inputs.pt"\r\n' in raw
    write_case(cfg, {**ENTRY, "dumps": "elsewhere"}, update=True)
    raw = cfg.read_bytes()
    assert b"\n" not in raw.replace(b"\r\n", b"") and tomllib.loads(raw.decode())["cases"][1]["dumps"] == "elsewhere"


def test_without_update_a_second_case_is_appended(tmp_path: Path) -> None:
    # golden freeze after a generate-only case: both stay, find_case ranks the one with goldens first
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\n[cases.generate]\nx = {low = 0, high = 1}\n')
    assert write_case(cfg, ENTRY) == "added"
    assert [sorted(c) for c in tomllib.loads(cfg.read_text())["cases"]] == [["dumps", "generate"], ["dumps", "expected", "inputs"]]


@pytest.mark.parametrize(
    "text",
    [
        "cases = [{dumps = 'passes_dump'}]\n",  # an inline array: cannot be extended or updated line by line
        "[[cases]]\ndumps = 'passes_dump'\ninputs = [\n  'a.pt'\n]\n",  # a value across lines
        "x = [\n",  # does not parse
    ],
)
def test_what_would_not_read_back_is_refused_and_the_file_unchanged(tmp_path: Path, text: str) -> None:
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError):
        write_case(cfg, ENTRY, update=True)
    assert cfg.read_text() == text
    # no temporary file left (the writers' lock file stays: removing it would race another writer)
    assert [p.name for p in tmp_path.iterdir() if p.name != ".pypto-lsp.toml.lock"] == ["pypto-lsp.toml"]


def test_a_pyproject_gets_it_under_tool_pypto_lsp(tmp_path: Path) -> None:
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[project]\nname = "m"\n\n[[tool.pypto-lsp.cases]]\ndumps = "passes_dump"\ninputs = "x.pt"\n')
    assert write_case(cfg, ENTRY, update=True) == "updated"
    data = tomllib.loads(cfg.read_text())
    assert data["project"] == {"name": "m"} and data["tool"]["pypto-lsp"]["cases"] == [ENTRY]


def test_where_a_new_case_goes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    dumps = ws / "build" / "qwen3" / "passes_dump"
    dumps.mkdir(parents=True)
    assert config_for(dumps, ws) == ws / "build" / "qwen3" / "pypto-lsp.toml"  # none yet: beside the dumps
    (ws / "pypto-lsp.toml").write_text("")
    assert config_for(dumps, ws) == ws / "pypto-lsp.toml"  # the nearest existing one up to the workspace
    (ws / "build" / "pypto-lsp.toml").write_text("")
    assert config_for(dumps, ws) == ws / "build" / "pypto-lsp.toml"
    (tmp_path / "pypto-lsp.toml").write_text("")  # above the workspace: not ours to write
    other = tmp_path / "elsewhere" / "passes_dump"
    other.mkdir(parents=True)
    assert config_for(other, ws) == tmp_path / "elsewhere" / "pypto-lsp.toml"
    assert config_for(other, None) == tmp_path / "elsewhere" / "pypto-lsp.toml"


def test_the_paths_as_written(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    cfg = ws / "run" / "pypto-lsp.toml"
    got = golden_entry(cfg, ws / "run" / "passes_dump", ws / "golden" / "in.pt", tmp_path / "data" / "out.pt", ws)
    assert got == {"dumps": "passes_dump", "inputs": "../golden/in.pt", "expected": (tmp_path / "data" / "out.pt").as_posix()}
    assert golden_entry(cfg, ws / "run", ws / "run" / "g" / "in.pt", tmp_path / "data" / "out.pt", None)["expected"] == "../../data/out.pt"
