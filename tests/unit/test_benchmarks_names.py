"""Every name a benchmark imports from pypto_lsp exists (benchmarks are run by hand, not by CI, so a
renamed function would otherwise be found only by the next person measuring: bench_engine imported
the engine's private builtins table after it had moved to exec.runtime)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = sorted((Path(__file__).resolve().parents[2] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("path", BENCH, ids=[p.name for p in BENCH])
def test_the_names_a_benchmark_imports_exist(path: Path) -> None:
    missing = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pypto_lsp")):
            continue
        mod = importlib.import_module(node.module)
        for alias in node.names:
            if hasattr(mod, alias.name):
                continue
            try:
                importlib.import_module(f"{node.module}.{alias.name}")
            except ImportError:
                missing.append(f"line {node.lineno}: {node.module}.{alias.name}")
    assert not missing, missing
