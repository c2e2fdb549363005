"""The op catalogue held against PyPTO's registry (pypto_lsp/ir/op_registry.json) and our kernels.

Every op PyPTO registers has a catalogue row; an op executes (catalogue status) exactly when a
kernel is registered for it; and every registered op executes, ``test.*`` aside (issue 31).
Regenerating the data file needs the pypto source (``tools/gen_op_registry.py --repo``); that one
check is skipped where no copy of it is at hand.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pypto_lsp import cli
from pypto_lsp.exec.kernels import KERNELS
from pypto_lsp.ir.catalogue import OPS, UNREGISTERED_OPS
from pypto_lsp.ir.op_registry import listing_json, load_registry

ROOT = Path(__file__).resolve().parents[2]
PYPTO_MIRROR = Path("/work/.mirror/hw-native-sys+pypto/repo")
FIXTURES_COMMIT = "e2d0f78ae6d709c0d6ee345a48db2c3d621a4b09"


def _executes(name: str) -> bool:
    return OPS[name].status in ("supported", "noop")


def test_registry_data_is_the_fixtures_commit() -> None:
    reg = load_registry()
    assert reg.commit == FIXTURES_COMMIT
    assert len(reg.ops) == 312
    assert reg.ops["tile.gather"] == "src/ir/op/tile_ops/gather.cpp"
    assert all(path.startswith("src/") and path.endswith(".cpp") for path in reg.ops.values())


@pytest.mark.skipif(not PYPTO_MIRROR.is_dir() or shutil.which("git") is None, reason="no pypto mirror")
def test_registry_data_matches_the_pypto_source() -> None:
    """The data file is what the generator reads from the pypto source at its commit."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_op_registry.py"), "--repo", str(PYPTO_MIRROR), "--check"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_registered_op_has_a_row() -> None:
    reg = load_registry()
    assert sorted(set(reg.ops) - OPS.keys()) == []
    # the only rows beyond the registry: names the reference codegen's table has
    assert OPS.keys() - reg.ops.keys() == UNREGISTERED_OPS


def test_status_says_executes_exactly_when_a_kernel_is_registered() -> None:
    without_kernel = sorted(n for n in OPS if _executes(n) and n not in KERNELS)
    assert without_kernel == [], "status says it runs, but no kernel"
    unlisted = sorted(n for n in OPS if not _executes(n) and n in KERNELS)
    assert unlisted == [], "a kernel runs it, but its catalogue status says unsupported"


def test_every_registered_op_executes() -> None:
    """test.* aside: the ops of PyPTO's own unit tests."""
    reg = load_registry()
    missing = sorted(n for n in reg.ops if not n.startswith("test.") and not _executes(n))
    assert missing == [], "registered ops without a kernel"


def test_ops_json_lists_every_row() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["ops", "--json"]) == 0
    data = json.loads(buf.getvalue())
    assert data == listing_json()
    assert data["registry"] == {"source": "hw-native-sys/pypto", "commit": FIXTURES_COMMIT, "ops": 312}
    rows = {r["name"]: r for r in data["ops"]}
    assert rows.keys() == OPS.keys()
    assert data["counts"]["rows"] == len(OPS)
    assert data["counts"]["executes"] == sum(r["executes"] for r in rows.values())
    gather = rows["tile.gather"]
    assert gather["executes"] is True and gather["defined_in"] == "src/ir/op/tile_ops/gather.cpp" and gather["doc"]
    assert rows["tensor.maximums"]["defined_in"] == "python/pypto/debug/torch_codegen.py"
    assert rows["tensor.maximums"]["registered"] is False
    assert all(r["doc"] and "\n" not in r["doc"] for r in rows.values())
    not_run = {n for n, r in rows.items() if r["registered"] and not r["executes"]}
    assert sorted(not_run) == data["counts"]["registered_not_executed"]
    assert {n for n in not_run if not n.startswith("test.")} == set()
    # what each operand and keyword takes, as the registration says it (test_operand_kinds.py)
    assert rows["tile.load"]["operands"] == {"tensor": "tensor", "offsets": "tuple", "shapes": "tuple", "valid_shape": "tuple"}
    assert rows["tile.load"]["keywords"] == {"target_memory": "memory_space", "clamp": "bool"}


def test_ops_text_and_no_torch() -> None:
    """``pypto-lsp ops`` reads the catalogue as data: torch is never imported."""
    code = (
        "import sys, io, contextlib\n"
        "from pypto_lsp import cli\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    code = cli.main(['ops'])\n"
        "print(code, 'torch' in sys.modules, buf.getvalue().splitlines()[-1])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    status, torch_loaded, last = out.stdout.strip().split(" ", 2)
    assert status == "0" and torch_loaded == "False"
    assert last.startswith(f"{len(OPS)} ops, ") and "PyPTO registers 312 at e2d0f78ae6d7" in last


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_generator_reads_register_op_calls_at_a_commit(tmp_path: Path) -> None:
    """tools/gen_op_registry.py on a small repository: .cpp registrations under src/ only, at the commit asked."""
    repo = tmp_path / "pypto"
    (repo / "src" / "ir" / "op").mkdir(parents=True)
    (repo / "docs").mkdir()

    def git(*args: str) -> str:
        env = {
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
        }
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout.strip()

    git("init", "-q")
    (repo / "src" / "ir" / "op" / "a.cpp").write_text('REGISTER_OP("tile.a")\n    .set_op_category("TileOp");\nREGISTER_OP("tensor.a")\n')
    (repo / "docs" / "ops.md").write_text('REGISTER_OP("doc.only")\n')
    git("add", "-A")
    git("commit", "-qm", "one")
    first = git("rev-parse", "HEAD")
    (repo / "src" / "ir" / "op" / "b.cpp").write_text('REGISTER_OP("tile.b")\n')
    git("add", "-A")
    git("commit", "-qm", "two")
    out = tmp_path / "reg.json"
    gen = [sys.executable, str(ROOT / "tools" / "gen_op_registry.py"), "--repo", str(repo), "--out", str(out)]
    subprocess.run([*gen, "--commit", first], check=True, capture_output=True)
    data = json.loads(out.read_text())
    assert data["commit"] == first
    assert data["ops"] == {"tensor.a": "src/ir/op/a.cpp", "tile.a": "src/ir/op/a.cpp"}
    assert subprocess.run([*gen, "--commit", first, "--check"], capture_output=True).returncode == 0
    assert subprocess.run([*gen, "--commit", "HEAD", "--check"], capture_output=True).returncode == 1  # tile.b since
