"""The allocation budget's plumbing: the catalogue's temporaries, the guard, the editor's setting and
the worker request (the reproducers are in tests/adversarial/test_alloc_budget_runtime.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_lsp.exec.kernels import KERNELS
from pypto_lsp.ir import alloc_budget
from pypto_lsp.ir.catalogue import OPS
from pypto_lsp.server.config import Settings, merge, resolve
from pypto_lsp.validate.config import RunSettings
from pypto_lsp.worker import protocol as P


def test_only_ops_our_executor_runs_declare_temporaries() -> None:
    declared = {name: spec.temp_bytes for name, spec in OPS.items() if spec.temp_bytes}
    assert {"tensor.matmul", "tile.matmul", "tile.cast", "tile.row_expand_expdif"} <= set(declared)
    for name, n in declared.items():
        assert n > 0 and name in KERNELS, name


def test_the_guard_raises_before_an_allocation_over_the_budget() -> None:
    guard = alloc_budget.Guard(alloc_budget.budget(1 << 20))  # a run's max_alloc (what the runner hands the script)
    site = (4 + 8, "c: pl.tensor.matmul", "FP32", 8)
    guard.check((256, 256), site)  # 768 KiB with the temporaries: fits
    with pytest.raises(alloc_budget.AllocBudgetError) as exc:
        guard.check((512, 256), site)
    assert exc.value.kind == "alloc-budget" and exc.value.bytes == 512 * 256 * 12 and exc.value.budget == 1 << 20
    assert "[512, 256] FP32 with 8 B/element of kernel temporaries" in str(exc.value)
    guard.check((-5, -5), site)  # not sizes: left to the op
    guard.check((None, 4), site)
    alloc_budget.check((512, 256), site)  # the standalone script's guard: the default budget, far larger


def test_the_editor_setting_and_the_toml_case(tmp_path: Path) -> None:
    s, problems = merge(Settings(), {"pypto-lsp": {"maxAlloc": "2M"}})
    assert s.max_alloc == 2 << 20 and not problems
    kept, problems = merge(s, {"maxAlloc": "lots"})
    assert kept.max_alloc == 2 << 20 and problems and "'maxAlloc'" in problems[0]
    assert merge(s, {"maxAlloc": None})[0].max_alloc is None
    dumps = tmp_path / "passes_dump"
    dumps.mkdir()
    (dumps / "00_frontend.py").write_text("# pypto.program: P\n")
    for name in ("inputs.pt", "expected.pt"):
        (tmp_path / name).write_bytes(b"")
    toml = '[[cases]]\ndumps = "passes_dump"\ninputs = "inputs.pt"\nexpected = "expected.pt"\n'
    (tmp_path / "pypto-lsp.toml").write_text(toml)
    before = resolve(dumps / "00_frontend.py", s, tmp_path)
    assert before.settings.max_alloc == 2 << 20  # the setting
    (tmp_path / "pypto-lsp.toml").write_text(toml + 'max_alloc = "1K"\n')
    after = resolve(dumps / "00_frontend.py", s, tmp_path)
    assert after.settings.max_alloc == 1024  # the case wins
    assert after.key() != before.key()  # results under another budget are not reused


def test_the_worker_requests_carry_it() -> None:
    g = P.Golden("/i.pt", "/e.pt")
    v = P.ValidateParams(file="/f.py", text="", golden=g, settings=RunSettings(max_alloc=4096))
    assert P.from_wire(P.ValidateParams, P.to_wire(v)).settings.max_alloc == 4096
    wire = P.to_wire(v)
    wire["settings"]["max_alloc"] = None
    assert P.from_wire(P.ValidateParams, wire).settings.max_alloc is None
    f = P.ValidateFolderParams(files=["/f.py"], golden=g, settings=RunSettings(max_alloc=1 << 30))
    assert P.from_wire(P.ValidateFolderParams, P.to_wire(f)).settings.max_alloc == 1 << 30


def test_allocations_are_those_of_each_program_when_statements_are_shared_between_dumps() -> None:
    """The dumps of a folder share the statement objects of their unchanged lines (ir.line_reuse) and
    allocations() sizes each statement once: every program still gets its own list, equal to a
    fresh sizing of a parse that shares nothing."""
    from pypto_lsp.ir import alloc_static, line_reuse
    from pypto_lsp.ir.parser import parse_text

    files = sorted((Path(__file__).resolve().parents[2] / "examples").glob("**/passes_dump/*.py"))
    assert files
    line_reuse.forget()
    alloc_static._by_stmt.clear()
    from pypto_lsp.ir.model import walk_stmts

    shared = 0
    for f in files:
        text = f.read_text(encoding="utf-8")
        program = parse_text(text).program
        fresh = parse_text(text, printer_forms=False).program  # no shortcut: objects of its own
        assert program is not None and fresh is not None
        stmts = [s for fn in program.functions for s in walk_stmts(fn.body)]
        shared += sum(1 for s in stmts if alloc_static._by_stmt.get(id(s), (None,))[0] is s)  # sized for a dump before
        assert list(alloc_static.allocations(program)) == list(alloc_static.allocations(fresh))
    assert shared > 100  # statements sized once for several programs


def test_kernels_that_size_their_result_from_an_operand_ask_the_run_budget_first() -> None:
    """A window copied out past its source, a random tile, a paged gather's rows: their sizes are
    operand values no type states, so the kernel asks the run's budget (exec.context) before it
    allocates. Each call here asks for far more than the 1 MiB budget; it is refused at once."""
    import torch

    from pypto_lsp.exec import context
    from pypto_lsp.exec.kernels.base import copy_window

    context.set_alloc_guard(alloc_budget.Guard(1 << 20))
    try:
        with pytest.raises(alloc_budget.AllocBudgetError, match=r"8\.0 GiB .*\[1, 2147483648\] float32"):
            copy_window(torch.zeros(4, 4), [0, 0], [1, 2**31], what="x")
        with pytest.raises(alloc_budget.AllocBudgetError, match="random's tile"):
            KERNELS["tile.random"](1, 2, 0, 0, 0, 0, [4096, 4096])  # 128 MiB
        small = copy_window(torch.ones(4, 4), [2, 2], [4, 4])  # under the budget: made, zero past the end
        assert small.sum().item() == 4
    finally:
        context.set_alloc_guard(None)
