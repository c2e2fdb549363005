"""Items 4, 5 and 6: pass order by numeric prefix, a timeout that ends with exit 1 (no abort),
and an allocation budget checked before anything is allocated."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pypto_lsp.ir.parser import parse_text
from pypto_lsp.ir.passdiff import previous_dump
from pypto_lsp.validate.config import discover_dumps

from .conftest import CASE, cli, make_case, needs_fixtures, report, statuses

pytestmark = needs_fixtures

# ---------------------------------------------------------------------- 4. order

NAMES = ["00_frontend.py", "2_after_A.py", "89_after_Y.py", "100_after_B.py", "1001_after_X.py"]


def test_discover_and_previous_dump_sort_numerically(tmp_path: Path) -> None:
    case = make_case(tmp_path, names=NAMES[::-1])
    files = discover_dumps(case / "passes_dump")
    assert [f.name for f in files] == NAMES
    assert previous_dump(case / "passes_dump" / "1001_after_X.py") == case / "passes_dump" / "100_after_B.py"
    assert previous_dump(case / "passes_dump" / "100_after_B.py") == case / "passes_dump" / "89_after_Y.py"
    assert previous_dump(case / "passes_dump" / "00_frontend.py") is None
    from pypto_lsp.ir.passdiff import dump_order_key

    assert sorted(["b.py", "10_x.py", "9_x.py"], key=dump_order_key) == ["9_x.py", "10_x.py", "b.py"]


def test_previous_dump_sees_a_file_added_later(tmp_path: Path) -> None:
    case = make_case(tmp_path, names=["1_after_A.py", "3_after_C.py"])
    d = case / "passes_dump"
    assert previous_dump(d / "3_after_C.py") == d / "1_after_A.py"
    (d / "2_after_B.py").write_text((d / "1_after_A.py").read_text())
    os.utime(d, ns=(d.stat().st_atime_ns, d.stat().st_mtime_ns + 1_000_000))
    assert previous_dump(d / "3_after_C.py") == d / "2_after_B.py"


def test_cli_first_divergent_is_the_numerically_first(tmp_path: Path) -> None:
    # the bug starts at 89_after_Y: as text, 1001_after_X would come first and be reported
    case = make_case(tmp_path, names=NAMES, bug_from=2)
    p = cli("validate", str(case), "--json", "--no-localize", "--no-cache", "--jobs", "1")
    rep = report(p)
    assert [Path(f["file"]).name for f in rep["files"]] == NAMES
    assert Path(rep["first_divergent"]).name == "89_after_Y.py", rep["first_divergent"]
    assert p.returncode == 1


def test_check_lists_folders_in_numeric_order(tmp_path: Path) -> None:
    case = make_case(tmp_path, names=NAMES[::-1])
    p = cli("check", str(case), "--json")
    import json

    files = [Path(f["file"]).name for f in json.loads(p.stdout)["files"]]
    assert files == NAMES


# ---------------------------------------------------------------------- 5. timeout


def endless(tmp_path: Path) -> Path:
    case = make_case(tmp_path, 1)
    f = case / "passes_dump" / "00_frontend.py"
    f.write_text(f.read_text().replace("pl.range(4)", "pl.range(4000000000)"))
    return case


def test_timeout_exits_1_with_the_json_intact(tmp_path: Path) -> None:
    case = endless(tmp_path)
    for _ in range(2):
        p = cli("validate", str(case), "--json", "--no-cache", "--timeout", "3")
        assert "terminate called" not in p.stderr, p.stderr[-2000:]
        assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
        rep = report(p)
        assert rep["files"][0]["error"]["kind"] == "TimeoutError"
        assert p.stdout.endswith("}\n")


def test_a_timed_out_run_is_stopped_in_process(tmp_path: Path) -> None:
    from pypto_lsp.validate import engine
    from pypto_lsp.validate.golden import load_bundle

    case = endless(tmp_path)
    text = (case / "passes_dump" / "00_frontend.py").read_text()
    fr = engine.run_text(text, load_bundle(case / "tensors.pt"), load_bundle(case / "expected.pt"), timeout=1)
    assert fr.error is not None and fr.error.kind == "TimeoutError"
    assert engine.abandoned_runs() == 0


# ---------------------------------------------------------------------- 6. budget

BIG = "        big: pl.Tensor[[100000, 100000], pl.FP32] = pl.tensor.create([100000, 100000], dtype=pl.FP32)\n"


def big_case(tmp_path: Path) -> tuple[Path, int]:
    case = make_case(tmp_path, 2)
    f = case / "passes_dump" / "01_after_InlineFunctions.py"
    lines = f.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("return"))
    f.write_text("".join([*lines[:at], BIG, *lines[at:]]))
    return case, at + 1


def test_a_40gb_tensor_is_an_error_on_its_line_before_allocating(tmp_path: Path) -> None:
    case, line = big_case(tmp_path)
    code = (
        "import json, resource, sys\n"
        "from pypto_lsp.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "sys.stderr.write('MAXRSS %d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
        "sys.exit(rc)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, "validate", str(case), "--json", "--no-cache", "--no-localize", "--max-alloc", "1G"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    rep = report(p)
    assert statuses(rep) == {"00_frontend.py": "pass", "01_after_InlineFunctions.py": "error"}
    err = rep["files"][1]["error"]
    assert err["kind"] == "alloc-budget" and err["line"] == line, err
    assert "37.3 GiB" in err["message"] and "[100000, 100000]" in err["message"]
    maxrss_kb = int(p.stderr.rsplit("MAXRSS ", 1)[1].split()[0])
    assert maxrss_kb < 2 * 1024 * 1024, maxrss_kb  # nothing near 40 GB was touched
    assert p.returncode == 1


def test_the_default_budget_is_a_fraction_of_memory_and_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto_lsp.ir import alloc_static as budget

    mem = budget.machine_memory()
    monkeypatch.delenv(budget.ENV, raising=False)
    assert mem is None or budget.budget() == mem // 4
    monkeypatch.setenv(budget.ENV, "512M")
    assert budget.budget() == 512 << 20
    assert budget.parse_size("4G") == 4 << 30 and budget.parse_size("100") == 100
    with pytest.raises(ValueError):
        budget.parse_size("lots")
    # a small budget stops an ordinary dump too: every allocation is sized
    prog = parse_text((CASE / "passes_dump" / "00_frontend.py").read_text()).program
    assert prog is not None
    small = budget.over_budget(prog, 1000)
    assert small is not None and small.bytes == 128 * 128 * 4 and small.span.line == 17
    assert budget.over_budget(prog, 1 << 20) is None


def test_budget_errors_are_not_cached(tmp_path: Path) -> None:
    case, _ = big_case(tmp_path)
    cache = tmp_path / "cache"
    p = cli("validate", str(case), "--json", "--no-localize", "--max-alloc", "1G", cache=cache)
    assert statuses(report(p))["01_after_InlineFunctions.py"] == "error"
    # the config key works too, and a bad one is a usage error
    (case / "pypto-lsp.toml").write_text(
        '[[cases]]\ndumps = "passes_dump"\ninputs = "tensors.pt"\nexpected = "expected.pt"\nmax_alloc = "x"\n'
    )
    bad = cli("validate", str(case), "--json", "--no-localize", cache=cache)
    assert bad.returncode == 2 and "max_alloc" in bad.stderr
