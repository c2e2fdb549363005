"""Issue 35 (the third hostile sweep), items 16, 18 and 19: ``memmap``'s bounds and messages,
``check``'s word on what runs (the executor's), ``core_num`` checked statically."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import cli
from .examples_case import example

FRONTEND = Path(__file__).resolve().parents[2] / "examples" / "elementwise" / "passes_dump" / "00_frontend.py"
PLACED = FRONTEND.parent / "32_after_InitMemRef.py"


def no_traceback(p: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr[-3000:]


# ---------------------------------------------------------------------- 16. memmap


def test_memmap_never_reads_a_file_past_the_dump_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    with big.open("wb") as fh:
        fh.truncate(1 << 30)  # sparse: no disk; read whole it costs 2 GB (bytes + text), as in the issue
    code = (
        "import resource, sys\n"
        "from pypto_lsp.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "sys.stderr.write('MAXRSS %d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
        "sys.exit(rc)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, "memmap", str(big)], capture_output=True, text=True, timeout=300)
    no_traceback(p)
    assert p.returncode == 2 and "8 MiB" in p.stderr, p.stderr[-2000:]
    maxrss_mb = int(p.stderr.rsplit("MAXRSS ", 1)[1].split()[0]) / 1024
    # the fault: the whole file read (2.1 GB RSS). ru_maxrss keeps what the forking pytest process held
    # before the exec (a few hundred MB once torch is loaded): the bound is well above that, well below 2 GB
    assert maxrss_mb < 1024, maxrss_mb


def test_memmap_refuses_a_fifo_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    p = cli("memmap", str(fifo), timeout=60)
    no_traceback(p)
    assert p.returncode == 2 and "regular file" in p.stderr, p.stderr[-2000:]


@pytest.mark.parametrize("where", ["folder", "unwritable", "file in a file"])
def test_memmap_html_that_cannot_be_written_is_a_message_and_exit_2(tmp_path: Path, where: str) -> None:
    html = {
        "folder": tmp_path,
        "unwritable": Path("/proc/version"),  # not writable even as root
        "file in a file": FRONTEND / "x.html",  # a missing folder whose parent is a file
    }[where]
    p = cli("memmap", str(PLACED), "--html", str(html))
    no_traceback(p)  # the fault: a traceback and exit 1
    assert p.returncode == 2 and "--html" in p.stderr, p.stderr[-2000:]


def test_memmap_html_into_missing_folders_makes_them_as_validate_report_does(tmp_path: Path) -> None:
    html = tmp_path / "new" / "deeper" / "map.html"
    p = cli("memmap", str(PLACED), "--html", str(html))
    no_traceback(p)  # the fault: FileNotFoundError
    assert p.returncode == 0 and html.is_file(), p.stderr[-2000:]


def test_memmap_unknown_backend_is_a_message_and_exit_2() -> None:
    p = cli("memmap", str(PLACED), "--backend", "bogus")
    no_traceback(p)
    assert p.returncode == 2 and "unknown backend 'bogus'" in p.stderr, p.stderr[-2000:]


# ---------------------------------------------------------------------- 18. check's support status is the executor's


def test_the_static_support_status_is_the_executors() -> None:
    """Every op with a kernel is "supported" (or a no-op) for the checker and hover, and none
    without one: the catalogue's status and the kernel registry say the same."""
    from pypto_lsp.exec.kernels import KERNELS, NOOPS
    from pypto_lsp.ir.catalogue import OPS

    runs = (set(KERNELS) | set(NOOPS)) & set(OPS)
    said = {name for name, spec in OPS.items() if spec.status != "unsupported"}
    assert not runs - said, (
        f"ops with a kernel that check calls not executable (name them in a status set of ir/catalogue.py): {sorted(runs - said)}"
    )
    assert not said - runs, f"ops check calls executable without a kernel: {sorted(said - runs)}"


def test_check_does_not_warn_that_task_dummy_cannot_run_while_validate_runs_it(tmp_path: Path) -> None:
    case = example(tmp_path)
    dumps = case / "passes_dump"
    for f in dumps.iterdir():
        if f.name != "00_frontend.py":
            f.unlink()
    f = dumps / "00_frontend.py"
    lines = f.read_text().split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.strip() == "return out")
    lines.insert(at, "        f1: pl.Scalar[pl.TASK_ID] = pl.system.task_dummy(deps=[])")
    f.write_text("\n".join(lines))
    checked = cli("check", str(f), "--json")
    diags = json.loads(checked.stdout)["files"][0]["diagnostics"]
    assert not [d for d in diags if "cannot execute" in d["message"]], diags  # the fault: a warning on line 18
    ran = cli("validate", str(case), "--json", "--no-localize", cache=tmp_path / "cache")
    assert json.loads(ran.stdout)["files"][0]["status"] == "pass", ran.stdout[-2000:]


# ---------------------------------------------------------------------- 19. core_num

SPMD = """# pypto.program: SpmdCall
import pypto.language as pl

@pl.program
class SpmdCall:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def blk(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        bid: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()
        t0: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [bid * 16, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
        c1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(t0, [bid * 16, 0], c)
        return c1
    @pl.function(type=pl.FunctionType.Spmd)
    def blk_spmd(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        c1: pl.Tensor[[64, 64], pl.FP32] = self.blk(a, c)
        return c1
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        c1: pl.Tensor[[64, 64], pl.FP32] = self.blk_spmd(a, c, attrs={"core_num": CORES})
        return c1
"""

SPMD_WITH = """# pypto.program: SpmdWith
import pypto.language as pl

@pl.program
class SpmdWith:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.spmd(CORES, name_hint="blk_spmd"):
            bid: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()
            t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [bid * 16, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
            pl.tile.store(pl.tile.neg(t), [bid * 16, 0], c)
        return c
"""


@pytest.mark.parametrize("template", [SPMD, SPMD_WITH], ids=["attrs", "with pl.spmd"])
@pytest.mark.parametrize("cores", ["0", "-1", "'x'"])
def test_a_bad_core_num_is_a_static_error_naming_it(tmp_path: Path, template: str, cores: str) -> None:
    f = tmp_path / "00_frontend.py"
    f.write_text(template.replace("CORES", cores))
    line = next(i for i, ln in enumerate(template.split("\n"), 1) if "CORES" in ln)
    p = cli("check", str(f), "--json")
    no_traceback(p)
    diags = json.loads(p.stdout)["files"][0]["diagnostics"]
    named = [d for d in diags if d["severity"] == "error" and "core_num" in d["message"]]
    # the fault: check passed; the run said "got NoneType" or raised ValueError
    assert named and named[0]["line"] == line, diags
    assert p.returncode == 1


@pytest.mark.parametrize("template", [SPMD, SPMD_WITH], ids=["attrs", "with pl.spmd"])
def test_a_good_core_num_checks_clean(tmp_path: Path, template: str) -> None:
    f = tmp_path / "00_frontend.py"
    f.write_text(template.replace("CORES", "4"))
    p = cli("check", str(f), "--json")
    assert p.returncode == 0 and not json.loads(p.stdout)["files"][0]["diagnostics"], p.stdout[-2000:]
