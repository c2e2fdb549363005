"""Inputs lent to a run instead of cloned (pypto_lsp.validate.lend): a dump that writes into one
still computes with what it wrote, and the next run sees the input as it was."""

from __future__ import annotations

import os

import pytest
import torch

from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.report import PASS

ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"


def _program(write_input: bool) -> str:
    body = [
        "x_c: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.slice(x, [4, 8], [0, 0])",
        "d: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.adds(x_c, 1.0)",
    ]
    if write_input:  # a bug: the dump writes its input, then reads it back
        body += [
            "x: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.assemble(x, d, [0, 0])",
            "x_c2: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.slice(x, [4, 8], [0, 0])",
            "d2: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.adds(x_c2, 1.0)",
            "out: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.assemble(out, d2, [0, 0])",
        ]
    else:
        body.append("out: pl.Tensor[[4, 8], pl.FP32] = pl.tensor.assemble(out, d, [0, 0])")
    lines = [
        "# pypto.program: Lend",
        "import pypto.language as pl",
        "",
        "@pl.program",
        "class Lend:",
        f"    {ORCH}",
        "    def main(self, x: pl.Tensor[[4, 8], pl.FP32], out: pl.Out[pl.Tensor[[4, 8], pl.FP32]]) -> pl.Tensor[[4, 8], pl.FP32]:",
        *("        " + b for b in body),
        "        return out",
    ]
    return "\n".join(lines) + "\n"


def test_an_input_only_read_is_not_copied_and_a_written_one_is_restored() -> None:
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    before = x.clone()
    ins = {"x": x, "out": torch.zeros(4, 8)}
    ok = run_text(_program(False), ins, {"out": x + 1}, rtol=0, atol=0)
    assert ok.status == PASS, ok.error
    assert x._version == before._version or torch.equal(x, before)
    for _ in range(2):  # the second run sees x as it was: same verdict, same numbers
        r = run_text(_program(True), ins, {"out": x + 2, "x": x + 1}, rtol=0, atol=0)
        assert r.status == PASS, (r.error, r.tensors)  # out from the written x; x compared as the dump left it
        assert torch.equal(x, before)
    assert torch.equal(ins["out"], torch.zeros(4, 8))  # outputs are never lent


def test_a_lent_weight_is_converted_to_fp32_once_per_version() -> None:
    """Matmuls read BF16 weights as FP32: a lent input's conversion, made for a big part of it, is
    kept across runs, and a write into the input (its version moves) makes a new one."""
    from pypto_lsp.exec.values import as_f32, register_input

    w = torch.randn(256, 512).bfloat16()
    register_input(w)
    part = w[:, 64:]
    a, b = as_f32(part), as_f32(w[:, 64:])
    assert torch.equal(a, part.float()) and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    win = as_f32(w[:, 64:128])  # a window, while the whole copy lasts: a view of it too
    assert win.untyped_storage().data_ptr() == a.untyped_storage().data_ptr() and torch.equal(win, w[:, 64:128].float())
    w[0, 70] = 3.0  # in place: the version counter moves
    c = as_f32(w[:, 64:])
    assert float(c[0, 6]) == 3.0 and c.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
    other = torch.randn(256, 512).bfloat16()  # never lent: converted each time
    assert as_f32(other).untyped_storage().data_ptr() != as_f32(other).untyped_storage().data_ptr()


def test_a_window_of_a_lent_weight_is_converted_on_its_own_with_the_same_products() -> None:
    """A window of at most an eighth of its weight (a tile, one task's columns) is converted alone:
    no whole FP32 copy is made (or kept: one of an older version is dropped), and a matmul or a
    K-chunk ``bmm`` of it gives the bits the strided window of a whole copy gives."""
    from pypto_lsp.exec import values
    from pypto_lsp.exec.values import as_f32, register_input

    torch.manual_seed(3)
    w = (torch.randn(1024, 512) * 0.05).bfloat16()
    register_input(w)
    ptr = w.untyped_storage().data_ptr()
    whole = w.float()
    for cols in ((0, 64), (64, 128), (448, 512)):
        win = w[:, cols[0] : cols[1]]
        got = as_f32(win)
        assert ptr not in values._F32 and torch.equal(got, win.float())
        a = torch.randn(16, 1024)
        assert torch.equal(torch.matmul(a, got), torch.matmul(a, whole[:, cols[0] : cols[1]]))
        chunks = torch.randn(8, 16, 128)
        assert torch.equal(torch.bmm(chunks, got.reshape(8, 128, 64)), torch.bmm(chunks, whole[:, cols[0] : cols[1]].reshape(8, 128, 64)))
    as_f32(w[:, 64:])  # a big part: the whole copy
    assert ptr in values._F32
    w[0, 0] = 1.0  # a new version: the next window drops the old copy
    assert torch.equal(as_f32(w[:64, :64]), w[:64, :64].float()) and ptr not in values._F32


def test_a_big_weight_converts_on_the_machines_cores_without_raising_torchs_thread_count(monkeypatch) -> None:
    """Above 4 M elements the one conversion runs in parts side by side, the values exact. torch's
    thread count is never raised for it: the count is the process's, and a long matmul in another
    thread (the debug adapter's previous pass, a Dask worker's other file) gives other bits on two
    threads (K = 4096 here)."""
    import threading

    from pypto_lsp.exec.side_threads import set_helper_threads
    from pypto_lsp.exec.values import as_f32, register_input

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    counts: list[int] = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (counts.append(n), real(n)))
    threads_seen: set[str] = set()
    real_copy = torch.Tensor.copy_

    def copy_(self, src, *a, **kw):  # type: ignore[no-untyped-def]
        threads_seen.add(threading.current_thread().name)
        return real_copy(self, src, *a, **kw)

    monkeypatch.setattr(torch.Tensor, "copy_", copy_)
    try:
        w = torch.randn(2048, 2048 + 64).bfloat16()
        register_input(w)
        set_helper_threads(2)
        got = as_f32(w[:, 64:])
        assert counts == [] and torch.get_num_threads() == 1
        assert len(threads_seen) == 2  # two parts, side by side
        assert torch.equal(got, w[:, 64:].float())
    finally:
        monkeypatch.undo()
        set_helper_threads(min(4, os.cpu_count() or 1))
        torch.set_num_threads(before)


def test_a_written_input_is_restored_when_the_copies_table_was_emptied_meanwhile() -> None:
    """The process keeps at most 64 pristine copies and empties its table beyond: a lend of several
    inputs (or another run) may empty it between a run's lend and its settle. The loan holds its
    own copies, so a written input is still restored (it was a KeyError)."""
    from pypto_lsp.ir.parser import parse_text
    from pypto_lsp.validate import lend as lend_mod

    program = parse_text(_program(True), "lend.py").program
    assert program is not None
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    before = x.clone()
    run_tensors, loan = lend_mod.lend(program, "main", {"x": x, "out": torch.zeros(4, 8)})
    assert run_tensors["x"] is x
    others = [torch.zeros(1) for _ in range(70)]
    for t in others:  # fills the table past its bound: it is emptied on the way
        lend_mod._pristine(t)
    x.add_(1.0)  # the run writes its input
    assert loan.settle(run_tensors) == ["x"]
    assert torch.equal(x, before) and torch.equal(run_tensors["x"], before + 1)


def test_a_bundle_input_is_lent_without_a_copy_and_restored_from_its_files_bytes(tmp_path) -> None:
    """An input read from a bundle file is restored from the file's bytes kept with it: no copy is
    made when it is lent (at hidden 4096 the copies were 50 ms of a process's first run)."""
    from pypto_lsp.validate import lend as lend_mod
    from pypto_lsp.validate.golden import load_bundle

    x0 = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    torch.save({"x": x0, "out": torch.zeros(4, 8)}, tmp_path / "tensors.pt")
    ins = load_bundle(tmp_path / "tensors.pt")
    x = ins["x"]
    lend_mod._PRISTINE.clear()
    ok = run_text(_program(False), ins, {"out": x0 + 1}, rtol=0, atol=0)
    assert ok.status == PASS, ok.error
    assert id(x) not in lend_mod._PRISTINE  # lent as it is, nothing copied
    for _ in range(2):  # written by the run, restored from the file's bytes
        r = run_text(_program(True), ins, {"out": x0 + 2, "x": x0 + 1}, rtol=0, atol=0)
        assert r.status == PASS, (r.error, r.tensors)
        assert torch.equal(x, x0) and load_bundle(tmp_path / "tensors.pt")["x"] is x


def test_a_conversion_part_that_fails_fails_the_conversion(monkeypatch) -> None:
    """A part converted in a helper thread that raises (out of memory, say) raises in the caller, and
    no half-converted copy is kept for the next run."""
    import threading

    from pypto_lsp.exec import values
    from pypto_lsp.exec.side_threads import set_helper_threads
    from pypto_lsp.exec.values import as_f32, register_input

    real_copy = torch.Tensor.copy_

    def copy_(self, src, *a, **kw):  # type: ignore[no-untyped-def]
        if threading.current_thread().name == "pypto-lsp-part":
            raise MemoryError("no room for this part")
        return real_copy(self, src, *a, **kw)

    monkeypatch.setattr(torch.Tensor, "copy_", copy_)
    w = torch.randn(2048, 2048 + 64).bfloat16()
    register_input(w)
    set_helper_threads(2)
    try:
        with pytest.raises(MemoryError):
            as_f32(w[:, 64:])
        assert w.untyped_storage().data_ptr() not in values._F32
        monkeypatch.undo()
        assert torch.equal(as_f32(w[:, 64:]), w[:, 64:].float())  # converted whole the next time
    finally:
        set_helper_threads(min(4, os.cpu_count() or 1))


def test_an_input_lent_to_a_run_still_going_is_copied_for_the_next_not_lent_twice() -> None:
    """Two runs in two threads of one process (a Dask worker with several threads, the debugger's
    run of the previous pass): the first may write its input (a dump bug it reports). The second,
    lent the tensor meanwhile, read the write, took it for the values as lent, and "restored" it:
    every later run of the process saw the written input (found on a two-thread Dask worker: 39 of
    39 readers failed, run after run). Now the second gets its own copy of the values as lent."""
    from pypto_lsp.ir.parser import parse_text
    from pypto_lsp.validate import lend as lend_mod

    program = parse_text(_program(True), "lend.py").program
    assert program is not None
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    before = x.clone()
    inputs = {"x": x, "out": torch.zeros(4, 8)}
    first, loan_a = lend_mod.lend(program, "main", inputs)
    assert first["x"] is x
    x.add_(100.0)  # the first run writes its input, and is still going
    second, loan_b = lend_mod.lend(program, "main", inputs)
    assert second["x"] is not x and torch.equal(second["x"], before)  # the values as lent, its own
    assert loan_a.settle(first) == ["x"] and torch.equal(x, before)  # the first restores it
    assert loan_b.settle(second) == [] and torch.equal(x, before)  # the second leaves it so
    third, loan_c = lend_mod.lend(program, "main", inputs)  # nobody holds it: lent again
    assert third["x"] is x
    loan_c.settle(third)


def test_a_run_that_fails_before_it_starts_frees_what_it_was_lent() -> None:
    """A run whose goldens do not fit its parameters returns early: the inputs it was lent are free
    again (the next run is lent them, not given copies)."""
    from pypto_lsp.validate import lend as lend_mod

    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    bad = run_text(_program(False), {"x": x[:2], "out": torch.zeros(4, 8)}, {"out": x + 1}, rtol=0, atol=0)
    assert bad.status != PASS
    assert not [e for e in lend_mod._ACTIVE.values() if e[0]() is x]
    ok = run_text(_program(False), {"x": x, "out": torch.zeros(4, 8)}, {"out": x + 1}, rtol=0, atol=0)
    assert ok.status == PASS, ok.error
    assert not lend_mod._ACTIVE  # every run released what it held
