"""The memory model's proofs that outlive a run (``exec.memory.Session.frame``, ``Session.proofs``).

A kernel every call of which takes the same path, one call of which met no hazard, is proven for
the rest of the run, and for every later run of the process that runs the same code on the same
placements (``Plan.key``, made by ``exec.codegen_text.code_key``): the next dump of a folder that left
the kernel as it was, the same file validated again on save. These tests run real programs twice
in one process and count the calls followed in the arenas (``Frame``s made).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch

from pypto_lsp.exec import memory
from pypto_lsp.exec.codegen_text import code_key
from pypto_lsp.validate.engine import compile_text, run_text
from pypto_lsp.validate.report import FAIL, PASS

from .test_memory import AIV, _counting, calls_program, hazards, kernel, line, orch, program, tile

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"


def _frames(monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[Any, torch.Tensor, int]:
    """One run of a ``calls_program`` text, what it wrote and the calls followed in the arenas,
    keeping whatever earlier runs proved."""
    torch.manual_seed(0)
    a, b = torch.randn(16, 128), torch.randn(16, 128)
    keep: dict[str, torch.Tensor] = {}
    ins = {"a": a, "b": b, "o": torch.zeros(16, 128)}
    fr, made = _counting(
        monkeypatch, memory.Frame, "__init__", lambda: run_text(text, ins, {"o": a + b}, filename="m.py", keep=keep), forget=False
    )
    return fr, keep["o"], made


def test_a_clean_kernel_is_proven_for_the_runs_after_its_own() -> None:
    memory.forget_proofs()
    with pytest.MonkeyPatch.context() as mp:
        first, out1, frames1 = _frames(mp, calls_program(1024))
        again, out2, frames2 = _frames(mp, calls_program(1024))
    assert frames1 == 1 and frames2 == 0  # the first run's first call proved the kernel
    assert first.status == again.status == PASS and first.memory == again.memory == {"checked": True, "hazards": []}  # type: ignore[attr-defined]
    assert torch.equal(out1, out2)


def test_a_kernel_with_a_hazard_is_followed_on_every_run() -> None:
    memory.forget_proofs()
    text = calls_program(0)  # y on x's bytes: every call reads y overwritten
    want = [("overwrite", line(text, "pl.tile.add(x, y)"))]
    with pytest.MonkeyPatch.context() as mp:
        runs = [_frames(mp, text) for _ in range(2)]
    for fr, _out, frames in runs:
        assert frames == 8 and fr.status == FAIL
        assert [(h["kind"], h["line"]) for h in hazards(fr)] == want


def test_a_proof_is_for_its_placements_only() -> None:
    """The same code with y moved onto x's bytes: a clean run of the first proves nothing of the second."""
    memory.forget_proofs()
    clean, hazard = calls_program(1024), calls_program(0)
    with pytest.MonkeyPatch.context() as mp:
        assert _frames(mp, clean)[2] == 1
        fr, _out, frames = _frames(mp, hazard)
    assert frames == 8 and [h["kind"] for h in hazards(fr)] == ["overwrite"]


def once_program(y_off: int) -> str:
    """A kernel the orchestration calls once: z = x + y on placed tiles (``y_off`` 0: y on x's bytes)."""
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', 'mem_vec_1', y_off)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"z: {tile('Vec', 'mem_vec_2', 2048)} = pl.tile.add(x, y)",
        "o1: pl.Tensor[[16, 16], pl.FP32] = pl.tile.store(z, [0, 0], o)",
        "return o1",
    ]
    allocs = {f"mem_vec_{i}": ("Vec", 1024) for i in range(3)}
    return program(kernel(AIV, "k", body, allocs), orch())


@pytest.mark.parametrize("y_off, proven", [(1024, True), (0, False)])
def test_a_kernel_called_once_is_proven_when_its_run_ends_clean(monkeypatch: pytest.MonkeyPatch, y_off: int, proven: bool) -> None:
    memory.forget_proofs()
    torch.manual_seed(0)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    results = []
    for _ in range(2):
        ins = {"a": a, "b": b, "o": torch.zeros(16, 16)}
        run = partial(run_text, once_program(y_off), ins, {"o": a + b}, filename="m.py")
        fr, made = _counting(monkeypatch, memory.Frame, "__init__", run, forget=False)
        results.append((fr.status, made, [h["kind"] for h in hazards(fr)]))
    if proven:
        assert results == [(PASS, 1, []), (PASS, 0, [])]
    else:
        assert results == [(FAIL, 1, ["overwrite"])] * 2


def _plan(key: str | None) -> memory.Plan:
    return memory.build("plan", {"function": "k", "core": "AIV", "sites": (), "same_path": True, "key": key})


def test_a_run_that_did_not_end_proves_nothing_of_its_last_calls() -> None:
    """``Session.proofs`` is called only when a run raised nothing (``MemoryObserver.finished``);
    until then a kernel called once is no proof, and a plan without a key is never kept."""
    memory.forget_proofs()
    for key in ("k1", None):
        s = memory.Session()
        assert isinstance(s.frame(_plan(key)), memory.Frame)
        assert isinstance(memory.Session().frame(_plan(key)), memory.Frame)  # no proofs() yet
        s.proofs()
        assert isinstance(memory.Session().frame(_plan(key)), memory.Frame if key is None else memory.Unplaced)


def test_a_hazard_after_the_last_call_began_proves_nothing() -> None:
    memory.forget_proofs()
    s = memory.Session()
    s.frame(_plan("k2"))
    s.report("overwrite", 3, "y", None, "Vec", "AIV0", (0, 16), "overwritten")
    s.proofs()
    assert isinstance(memory.Session().frame(_plan("k2")), memory.Frame)


def test_the_key_spells_out_the_constants_a_function_names() -> None:
    """``_pl_kN`` is numbered per script: the same function naming the same constant under another
    number has the same key; the same name for another constant (nested ones too) does not."""
    lines = [("    _pl_m = _pl_mem_session.frame(_pl_k1)", None), ("    x = f(_pl_k0)", None)]
    first = code_key(lines, {"A(1)": "_pl_k0", "P(_pl_k0)": "_pl_k1"})
    renumbered = [("    _pl_m = _pl_mem_session.frame(_pl_k7)", None), ("    x = f(_pl_k3)", None)]
    assert code_key(renumbered, {"B()": "_pl_k0", "A(1)": "_pl_k3", "P(_pl_k3)": "_pl_k7"}) == first
    assert code_key(lines, {"A(2)": "_pl_k0", "P(_pl_k0)": "_pl_k1"}) != first  # a nested constant differs
    assert code_key(lines, {"A(1)": "_pl_k0", "Q(_pl_k0)": "_pl_k1"}) != first
    assert code_key(lines[:1], {"A(1)": "_pl_k0", "P(_pl_k0)": "_pl_k1"}) != first
    # a name that only contains one (an IR name ``x_pl_k0``, ``_pl_k0x``) is not a constant
    inside = [("    x_pl_k0 = _pl_k0x + _pl_k0", None)]
    assert code_key(inside, {"A(1)": "_pl_k0"}) == code_key([("    x_pl_k0 = _pl_k0x + (A(1))", None)], {})


def test_a_kernel_the_next_dump_leaves_as_it_was_keeps_its_key() -> None:
    """Two programs whose kernel is printed alike while the script's constants are numbered apart
    (a kernel before it in one only, its lines the same): one key for that kernel."""
    body_k = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        "o1: pl.Tensor[[16, 16], pl.FP32] = pl.tile.store(x, [0, 0], o)",
        "return o1",
    ]
    other = [
        f"w: {tile('Vec', 'mem_vec_0', 0, shape='[8, 16]')} = pl.tile.load(a, [0, 0], [8, 16], [8, 16], target_memory=pl.Mem.Vec)",
        "o1: pl.Tensor[[16, 16], pl.FP32] = pl.tile.store(w, [0, 0], o)",
        "return o1",
    ]
    allocs = {"mem_vec_0": ("Vec", 1024)}
    # the orchestration first, k last: k's lines are the same in both, the constants before it are not
    one = program(orch(), kernel(AIV, "j", body_k, allocs), kernel(AIV, "k", body_k, allocs))
    two = program(orch(), kernel(AIV, "j", other, allocs), kernel(AIV, "k", body_k, allocs))
    keys = []
    for text in (one, two):
        gen = compile_text(text, "m.py", memory=True, sanitize=True).generated
        assert gen is not None
        by_fn = {kw["function"]: (name, kw["key"]) for name, (_kind, kw) in gen.built.items()}
        keys.append(by_fn)
    assert keys[0]["k"][0] != keys[1]["k"][0]  # numbered apart
    assert keys[0]["k"][1] == keys[1]["k"][1]
    assert keys[0]["j"][1] != keys[1]["j"][1]


def test_a_proven_call_peels_its_loops_as_a_followed_call_does() -> None:
    """A proven first call (``Proven``) runs values only but yields the same iterations one by one
    and the same batched middle as a ``Frame`` of the plan: pushes and pops keep their pace."""
    ring = {"kind": "p", "name": "t", "line": 3, "space": "Vec", "start": 0, "nbytes": 64, "dtype": "FP32", "shape": (4, 4)}
    sites = ({**ring, "memref": "pipe 'r'", "operands": (), "scratch": (), "view_op": False, "pipe": (0, 64, 2)},)
    plan = memory.build("plan", {"function": "k", "core": "AIV", "sites": sites, "same_path": True, "key": "k3"})
    for n in (1, 3, 4, 9):
        s = memory.Session()
        followed = list(memory.Frame(plan, s, "AIV0").peeled(s, n, (0,)))
        proven = list(memory.Proven(plan).peeled(s, n, (0,)))
        assert proven == followed, n
    assert list(memory.Proven(plan).peeled(memory.Session(), 9, (0,))) == [0, 1, 2, range(3, 8), 8]


BROKEN = FIXTURES / "broken" / "qwen3_910b_up_acc_over_gate_acc" / "passes_dump" / "35_after_AllocateMemoryAddr.py"
GOOD = FIXTURES / "qwen3_scope3_910b"


@pytest.mark.skipif(not BROKEN.exists() or not (GOOD / "tensors.pt").exists(), reason="no shared fixtures")
def test_findings_come_in_one_order_whatever_ran_before() -> None:
    """The hand-broken qwen3 dump (up_acc placed over gate_acc: overwrites on both AIV lanes) after
    the good dump of the same pass, whose cube kernel it shares, proven: the same findings in the
    same order as in a process that ran nothing before (the proven cube still pushes at its pace)."""
    from pypto_lsp.validate.golden import load_bundle

    inputs = {k: v for k, v in load_bundle(GOOD / "tensors.pt").items() if isinstance(v, torch.Tensor)}
    expected = load_bundle(GOOD / "expected.pt")

    def run(path: Path) -> Any:
        ins = {k: v.clone() for k, v in inputs.items()}
        return run_text(path.read_text(encoding="utf-8"), ins, expected, filename=path.name)

    memory.forget_proofs()
    alone = run(BROKEN)
    run(GOOD / "passes_dump" / BROKEN.name)
    after = run(BROKEN)
    assert alone.status == after.status == FAIL
    assert len(hazards(alone)) > 2 and hazards(after) == hazards(alone)
