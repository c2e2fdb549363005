"""Memory plans the runner builds itself (``GeneratedCode.built``) are the plans the script's text spells.

The standalone script (``pypto-lsp codegen``) keeps every ``_pl_kN = _pl_mem.Plan(...)`` line; the
script as it runs in-process has them blank and gets the objects from ``exec.memory.build``. Both
must be the same plans, site by site, on every dump that places tiles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pypto_lsp.exec.memory as memory
from pypto_lsp.validate.engine import compile_text

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"


def _state(plan: Any) -> dict[str, Any]:
    # ``key`` (what a proof kept across runs is filed under) only the runner's plans carry: the
    # standalone script runs once, and its text would otherwise change with every line it prints
    out = {k: v for k, v in vars(plan).items() if k not in ("sites", "key")}
    out["sites"] = [{k: getattr(s, k) for k in type(s).__slots__} if hasattr(type(s), "__slots__") else vars(s) for s in plan.sites]
    return out


def _dumps() -> list[Path]:
    files = sorted(ROOT.glob("examples/**/passes_dump/*.py")) + sorted(FIXTURES.glob("**/passes_dump/*.py"))
    return [f for f in files if "pl.MemRef(" in f.read_text(encoding="utf-8")]


def test_every_built_plan_is_the_plan_its_text_spells() -> None:
    files = _dumps()
    assert files
    plans = 0
    for f in files:
        comp = compile_text(f.read_text(encoding="utf-8"), str(f), memory=True, sanitize=True)
        gen = comp.generated
        if gen is None or not gen.built:
            continue
        lines = {ln.split(" = ", 1)[0]: ln for ln in gen.source.splitlines() if ln.startswith("_pl_k")}
        for name, (kind, keywords) in gen.built.items():
            assert name in lines
            assert not any(ln.startswith(f"{name} = ") for ln in gen.executable.splitlines()), (
                f"{f.name}: {name} still spelt out as it runs"
            )
            ns: dict[str, Any] = {"_pl_mem": memory}
            exec(compile(lines[name], "<plan>", "exec"), ns)  # our own generated line, never dump text
            built = memory.build(kind, keywords)
            assert _state(ns[name]) == _state(built), f"{f.name}: {name}"
            assert (built.key is not None) == built.same_path, f"{f.name}: {name}"
            plans += 1
    assert plans > 50


def test_a_built_constant_of_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        memory.build("table", {})
