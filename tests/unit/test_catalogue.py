"""Tests for the op catalogue (pypto_lsp.ir.catalogue)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from pypto_lsp.ir.catalogue import (
    EXECUTED_BEYOND_REFERENCE,
    EXECUTOR_EXTRAS,
    GATHER_SCATTER_OPS,
    LANGUAGE_OPS,
    NOOP_OPS,
    OPS,
    REFERENCE_SUPPORTED,
    RESULT_RULES,
    SORT_RANDOM_MX_EXECUTED,
    UNREGISTERED_OPS,
    OpSpec,
    lookup,
)
from pypto_lsp.ir.dist_ops import DISTRIBUTED_EXECUTED

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
COVERAGE = FIXTURES.parent / "fixtures-coverage"  # the op families added last (issue 31)


# ---------------------------------------------------------------------------
# Table shape
# ---------------------------------------------------------------------------


def test_table_size() -> None:
    assert len(OPS) >= 300
    # 312 registered upstream + 4 names only the reference table knows.
    assert len(OPS) == 316
    assert UNREGISTERED_OPS <= OPS.keys()


def test_rows_are_consistent() -> None:
    for name, spec in OPS.items():
        assert isinstance(spec, OpSpec)
        assert spec.name == name
        assert not name.endswith("_"), name
        assert spec.namespace == name.rpartition(".")[0]
        assert 0 <= spec.min_args <= len(spec.params), name
        assert "attrs" not in spec.kwargs, name
        assert len(set(spec.kwargs)) == len(spec.kwargs), name
        assert spec.result is None or spec.result in RESULT_RULES, name
        assert spec.status in {"supported", "noop", "unsupported"}, name
        assert spec.doc and "\n" not in spec.doc, name


def test_result_rule_keys() -> None:
    assert set(RESULT_RULES) == {
        "same", "binary", "row_reduce", "col_reduce", "matmul", "matmul_acc", "cast", "load",
        "slice", "create", "reshape", "store", "cmp_mask", "scalar_index", "scalar_elem",
        "none", "ptr", "popped", "tuple",
    }  # fmt: skip


def test_status_sets() -> None:
    assert len(NOOP_OPS) == 16
    # The reference dispatch table has 198 names; tensor.view is special-cased on top.
    assert len(REFERENCE_SUPPORTED) == 199
    assert NOOP_OPS <= REFERENCE_SUPPORTED
    supported = {n for n, s in OPS.items() if s.status == "supported"}
    noop = {n for n, s in OPS.items() if s.status == "noop"}
    assert noop == NOOP_OPS
    assert supported == (
        (REFERENCE_SUPPORTED - NOOP_OPS)
        | EXECUTOR_EXTRAS
        | EXECUTED_BEYOND_REFERENCE
        | GATHER_SCATTER_OPS
        | LANGUAGE_OPS
        | DISTRIBUTED_EXECUTED
        | SORT_RANDOM_MX_EXECUTED
    )
    assert "tensor.view" in supported
    assert OPS["tile.matmul_mx"].status == "supported"
    assert OPS["tile.sort32"].status == "supported"
    assert OPS["pld.tile.remote_load"].status == "supported"
    # every distributed row runs, and every distributed kernel has its row
    dist_rows = {n for n in OPS if n.startswith(("pld.", "builtin.tensor.", "dist."))}
    assert dist_rows == DISTRIBUTED_EXECUTED


def test_selected_rows() -> None:
    load = OPS["tile.load"]
    assert load.params == ("tensor", "offsets", "shapes", "valid_shape")
    assert load.min_args == 4 and load.result == "load"
    assert "target_memory" in load.kwargs

    store = OPS["tile.store"]
    assert store.params == ("tile", "offsets", "output_tensor", "shapes")
    assert store.min_args == 3 and store.result == "store"

    # Printed reshuffles: value/dtype become keywords, shape stays positional.
    full = OPS["tile.full"]
    assert full.params == ("shape",) and {"dtype", "value"} <= set(full.kwargs)
    assert OPS["tensor.full"].result == "create"
    assert OPS["tile.reinterpret_view"].params == ("data",)
    assert OPS["system.syncall"].min_args == 0

    assert OPS["tensor.slice"].params[:3] == ("input", "shape", "offset")
    assert OPS["tile.matmul_acc"].min_args == 3 and len(OPS["tile.matmul_acc"].params) == 4
    assert OPS["tile.tpop_from_aic"].params == () and OPS["tile.tpop_from_aic"].result == "popped"
    assert OPS["tile.cmp"].result == "cmp_mask"
    assert OPS["tile.alloc"].result == "ptr"
    assert OPS["system.bar_v"].status == "noop"


# ---------------------------------------------------------------------------
# lookup()
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dotted", "expected"),
    [
        ("pl.tile.and_", "tile.and"),
        ("tile.and_", "tile.and"),
        ("tile.and", "tile.and"),
        ("pl.tile.or_", "tile.or"),
        ("pl.tensor.not_", "tensor.not"),
        ("pl.tensor.add", "tensor.add"),
        ("tensor.add", "tensor.add"),
        ("pl.tile.load", "tile.load"),
        ("pl.system.bar_v", "system.bar_v"),
        ("pld.tile.remote_load", "pld.tile.remote_load"),
        ("pld.tile._remote_load_with_physical_tail_padding", "pld.tile.remote_load"),
        ("pld.system.world_size", "pld.system.world_size"),
        ("pl.tensor.maximums", "tensor.maximums"),
    ],
)
def test_lookup_normalisation(dotted: str, expected: str) -> None:
    spec = lookup(dotted)
    assert spec is not None, dotted
    assert spec.name == expected


@pytest.mark.parametrize(
    "dotted",
    [
        "pl.tile.nope",
        "pl.yield_",
        "tile.add_",
        "pl.tile",
        "",
        "pl.const",
        "pld.tile.and_",
    ],
)
def test_lookup_misses(dotted: str) -> None:
    # "tile.add_" keeps its underscore: `add` is not a keyword, so it is not an IR name.
    assert lookup(dotted) is None


# ---------------------------------------------------------------------------
# Every op call in the real dumps
# ---------------------------------------------------------------------------


def _dump_files(root: Path) -> list[Path]:
    return sorted(root.glob("**/passes_dump/*.py"))


def _call_name(func: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name) and func.id in ("pl", "pld"):
        parts.append(func.id)
        if len(parts) >= 3:
            return ".".join(reversed(parts))
    return None


@functools.cache
def _scan_dumps(root: Path = FIXTURES) -> tuple[int, tuple[str, ...], frozenset[str]]:
    """Return (file count, problems, distinct call names) over every fixture dump."""
    problems: list[str] = []
    names: set[str] = set()
    files = _dump_files(root)
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _call_name(node.func)
            if name is None:
                continue
            names.add(name)
            where = f"{path.relative_to(root)}:{node.lineno}: {name}"
            spec = lookup(name)
            if spec is None:
                problems.append(f"{where}: not in catalogue")
                continue
            npos = len(node.args)
            if any(isinstance(a, ast.Starred) for a in node.args):
                problems.append(f"{where}: starred argument")
            if npos < spec.min_args or (not spec.variadic and npos > len(spec.params)):
                problems.append(f"{where}: {npos} positional args, expected {spec.min_args}..{len(spec.params)}")
            for kw in node.keywords:
                if kw.arg is None:
                    problems.append(f"{where}: **kwargs")
                elif kw.arg != "attrs" and kw.arg not in spec.kwargs:
                    problems.append(f"{where}: unexpected keyword {kw.arg!r}")
    return len(files), tuple(problems), frozenset(names)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared fixtures not available")
def test_every_dump_call_matches_catalogue() -> None:
    nfiles, problems, _ = _scan_dumps()
    assert nfiles >= 4540
    assert not problems, "\n".join(problems[:50])


@pytest.mark.skipif(not COVERAGE.is_dir(), reason="shared coverage fixtures not available")
def test_every_coverage_dump_call_matches_catalogue() -> None:
    nfiles, problems, names = _scan_dumps(COVERAGE)
    assert nfiles >= 1350
    assert not problems, "\n".join(problems[:50])
    assert {"pl.tile.mgather", "pl.tile.mscatter", "pl.tensor.paged_gather", "pl.tile.gather_compare"} <= names


@pytest.mark.skipif(not (FIXTURES / "ops.txt").is_file(), reason="shared fixtures not available")
def test_ops_txt_names_present() -> None:
    listed = []
    for line in (FIXTURES / "ops.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name = line.split()[0]
        if name.count(".") >= 2:
            listed.append(name)
    assert len(listed) >= 67
    missing = [n for n in listed if lookup(n) is None]
    assert not missing
    # Every op the real programs use must be executable (or a declared no-op).
    not_runnable = [n for n in listed if (spec := lookup(n)) is None or spec.status == "unsupported"]
    assert not not_runnable
