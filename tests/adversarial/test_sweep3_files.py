"""Issue 35 (the third hostile sweep), items 10-14: the files we write (the case writer,
``golden freeze``, the editor's ``pypto-lsp.writeGoldenCase``), each as the attack that found it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomllib

from pypto_lsp.validate.case_writer import write_case
from pypto_lsp.validate.config import ConfigError

from .conftest import cli
from .examples_case import example
from .rpc import RawServer

# ---------------------------------------------------------------------- 10. concurrent writers

_WRITER = """
import sys, time
from pathlib import Path
from pypto_lsp.validate.case_writer import write_case
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
write_case(Path(sys.argv[1]), {"dumps": "d" + sys.argv[3], "inputs": "i.pt", "expected": "e.pt"})
"""


def test_twelve_concurrent_writers_keep_twelve_entries(tmp_path: Path) -> None:
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text("# the user's\n")
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(cfg), str(go), str(i)], env=env, stderr=subprocess.PIPE, text=True)
        for i in range(12)
    ]
    time.sleep(1.5)  # every writer started and waiting: they all read at once
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
    # the fault: each read the file, appended its entry and replaced it; 4-8 of 12 were kept
    dumps = sorted(c["dumps"] for c in tomllib.loads(cfg.read_text())["cases"])
    assert dumps == sorted(f"d{i}" for i in range(12)), dumps
    assert cfg.read_text().startswith("# the user's\n")


# ---------------------------------------------------------------------- 11. symlinks in golden/


def _frozen(tmp_path: Path, link_to: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    case = example(tmp_path, "gather_rows")
    golden = case / "golden"
    golden.mkdir()
    (golden / "inputs.pt").write_bytes(b"old")
    (golden / "expected.pt").symlink_to(link_to)
    return case, cli("golden", "freeze", str(case), "--force", cache=tmp_path / "cache")


def test_golden_freeze_force_never_writes_through_a_symlinked_bundle(tmp_path: Path) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("not yours")
    case, p = _frozen(tmp_path, outside)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert outside.read_text() == "not yours"  # the fault: overwritten with the expected tensors
    link = case / "golden" / "expected.pt"
    if p.returncode == 0:  # replaced the link itself by the bundle
        assert not link.is_symlink() and link.stat().st_size > 0
    else:
        assert p.returncode == 2 and "expected.pt" in p.stderr, p.stderr[-2000:]


def test_golden_freeze_force_never_creates_where_a_dangling_link_points(tmp_path: Path) -> None:
    nowhere = tmp_path / "elsewhere" / "made.pt"
    nowhere.parent.mkdir()
    case, p = _frozen(tmp_path, nowhere)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert not nowhere.exists()  # the fault: the bundle was created where the link pointed
    assert p.returncode in (0, 2), p.stderr[-2000:]


# ---------------------------------------------------------------------- 12 and 13. modes

ENTRY = {"dumps": "passes_dump", "inputs": "i.pt", "expected": "e.pt"}


def test_a_read_only_config_is_refused_not_replaced(tmp_path: Path) -> None:
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text("# mine, read-only on purpose\n")
    cfg.chmod(0o444)
    inode = cfg.stat().st_ino
    with pytest.raises(ConfigError, match="read-only"):
        write_case(cfg, ENTRY)
    # the fault: replaced through a temporary file and a rename (even as a user without root)
    assert cfg.read_text() == "# mine, read-only on purpose\n" and cfg.stat().st_ino == inode
    assert cfg.stat().st_mode & 0o777 == 0o444
    case = example(tmp_path, "gather_rows")
    (case / "pypto-lsp.toml").chmod(0o444)
    p = cli("golden", "freeze", str(case), cache=tmp_path / "cache")
    assert p.returncode == 2 and "read-only" in p.stderr, p.stderr[-2000:]
    assert not (case / "golden" / "expected.pt").exists()  # refused before the bundle is written


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_a_new_config_gets_the_mode_of_any_new_file(tmp_path: Path, umask_022: None) -> None:
    cfg = tmp_path / "pypto-lsp.toml"
    write_case(cfg, ENTRY)
    assert cfg.stat().st_mode & 0o777 == 0o644  # the fault: 0600 whatever the umask
    os.umask(0o027)
    other = tmp_path / "sub" / "pypto-lsp.toml"
    write_case(other, ENTRY)
    assert other.stat().st_mode & 0o777 == 0o640
    cfg.chmod(0o664)  # an existing file keeps its own mode
    write_case(cfg, {**ENTRY, "dumps": "other"})
    assert cfg.stat().st_mode & 0o777 == 0o664


# ---------------------------------------------------------------------- 14. where writeGoldenCase writes

INVALID_PARAMS = -32602


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    case = example(ws)
    (case / "pypto-lsp.toml").unlink()
    return ws


def _write_golden_case(s: RawServer, id: str, dumps: Path, golden: Path) -> dict:  # type: ignore[type-arg]
    args = {"dumps": str(dumps), "inputs": str(golden / "inputs.pt"), "expected": str(golden / "expected.pt")}
    return s.request(id, "workspace/executeCommand", {"command": "pypto-lsp.writeGoldenCase", "arguments": [args]})


def _server(tmp_path: Path, ws: Path, options: dict | None) -> RawServer:  # type: ignore[type-arg]
    s = RawServer(tmp_path / "cache")
    s.initialize(ws, options)
    return s


def test_write_golden_case_writes_only_for_dump_folders_inside_the_workspace(tmp_path: Path, workspace: Path) -> None:
    golden = workspace / "elementwise" / "golden"
    outside = tmp_path / "outside"
    (outside / "passes_dump").mkdir(parents=True)
    (outside / "passes_dump" / "00_frontend.py").write_text("x = 1\n")
    empty = workspace / "empty"
    empty.mkdir()
    root_config = Path("/pypto-lsp.toml")
    root_had = root_config.exists()
    s = _server(tmp_path, workspace, None)
    try:
        for i, (dumps, config) in enumerate(
            (
                (Path("/"), Path("/pypto-lsp.toml")),  # the fault: it wrote /pypto-lsp.toml
                (outside / "passes_dump", outside / "pypto-lsp.toml"),
                (empty, workspace / "pypto-lsp.toml"),
                (workspace, tmp_path / "pypto-lsp.toml"),  # no dumps there, and its config would be outside
            )
        ):
            existed = config.exists()
            r = _write_golden_case(s, f"w{i}", dumps, golden)
            assert r.get("error", {}).get("code") == INVALID_PARAMS, (dumps, r)
            assert config.exists() == existed, config
        ok = _write_golden_case(s, "ok", workspace / "elementwise" / "passes_dump", golden)
        assert ok.get("result", {}).get("written") == "added", ok
        assert (workspace / "elementwise" / "pypto-lsp.toml").is_file()
    finally:
        s.stop()
        if not root_had:  # what the unfixed server wrote
            root_config.unlink(missing_ok=True)


def test_write_golden_case_writes_nothing_in_an_untrusted_workspace(tmp_path: Path, workspace: Path) -> None:
    golden = workspace / "elementwise" / "golden"
    s = _server(tmp_path, workspace, {"validation": False})  # what the extension sends when untrusted
    try:
        r = _write_golden_case(s, "w", workspace / "elementwise" / "passes_dump", golden)
        assert r.get("error", {}).get("code") == INVALID_PARAMS and "trusted" in r["error"]["message"], r
        assert not (workspace / "elementwise" / "pypto-lsp.toml").exists()
    finally:
        s.stop()
