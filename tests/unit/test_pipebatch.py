"""Loops on both ends of a cross-core pipe run batched (pypto_lsp.exec.pipebatch), and where they must not."""

from __future__ import annotations

from typing import Any

import torch

from pypto_lsp.validate.engine import compile_text, run_text
from pypto_lsp.validate.report import PASS

AIC = "@pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)"
AIV = "@pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)"
GROUP = "@pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)"
ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"
A = "pl.Tensor[[16, 64], pl.BF16]"
B = "pl.Tensor[[64, 32], pl.BF16]"
OUT = "pl.Tensor[[16, 32], pl.FP32]"
SIG = f"a: {A}, b: {B}, o: pl.Out[{OUT}]"
ACC = "pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec]"


def _program(aic_extra: str = "", aiv_extra: str = "") -> str:
    aic = [
        AIC,
        f"def g_aic({SIG}) -> {OUT}:",
        "    for kb in pl.range(4):",
        "        k0: pl.Scalar[pl.INDEX] = kb * 16",
        "        ac: pl.Tile[[16, 16], pl.BF16, pl.Mem.Mat] = pl.tile.load(a, [0, k0], [16, 16], [16, 16], target_memory=pl.Mem.Mat)",
        "        bc: pl.Tile[[16, 32], pl.BF16, pl.Mem.Mat] = pl.tile.load(b, [k0, 0], [16, 32], [16, 32], target_memory=pl.Mem.Mat)",
        "        al: pl.Tile[[16, 16], pl.BF16, pl.Mem.Left] = pl.tile.move(ac, target_memory=pl.Mem.Left)",
        "        br: pl.Tile[[16, 32], pl.BF16, pl.Mem.Right] = pl.tile.move(bc, target_memory=pl.Mem.Right)",
        "        t: pl.Tile[[16, 32], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(al, br)",
        "        pl.tile.tpush_to_aiv(t, split=0)",
        *([aic_extra] if aic_extra else []),
        "    return o",
    ]
    aiv = [
        AIV,
        f"def g_aiv({SIG}) -> {OUT}:",
        f"    acc0: {ACC} = pl.tile.full([16, 32], dtype=pl.FP32, value=0.0)",
        "    for kb, (acc,) in pl.range(4, init_values=(acc0,)):",
        f"        p: {ACC} = pl.tile.tpop_from_aic(split=0)",
        f"        acc2: {ACC} = pl.tile.add(acc, p)",
        "        pl.system.tfree_to_aic(p, split=0)",
        *([aiv_extra] if aiv_extra else []),
        "        acc_rv = pl.yield_(acc2)",
        f"    o1: {OUT} = pl.tile.store(acc_rv, [0, 0], o)",
        "    return o1",
    ]
    group = [GROUP, f"def g({SIG}) -> {OUT}:", "    self.g_aic(a, b, o)", "    self.g_aiv(a, b, o)", "    return o"]
    orch = [ORCH, f"def main(self, {SIG}) -> {OUT}:", f"    r: {OUT} = self.g(a, b, o)", "    return r"]
    text = "# pypto.program: P\nimport pypto.language as pl\n\n@pl.program\nclass P:\n"
    for f in (aic, aiv, group, orch):
        text += "".join("    " + ln + "\n" for ln in f)
    return text


def _run(text: str, exact: bool) -> tuple[str, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    a = torch.randn(16, 64, generator=g).bfloat16()
    b = torch.randn(64, 32, generator=g).bfloat16()
    keep: dict[str, torch.Tensor] = {}
    r = run_text(
        text, {"a": a, "b": b, "o": torch.zeros(16, 32)}, {"o": a.float() @ b.float()}, rtol=1e-5, atol=1e-4, exact=exact, keep=keep
    )
    assert r.status == PASS, r.error
    return r.status, keep["o"]


def _source(text: str, exact: bool = False) -> str:
    comp = compile_text(text, exact=exact)
    assert comp.generated is not None, comp.error
    return comp.generated.source


def test_both_ends_batch_and_give_the_loops_numbers_bit_for_bit() -> None:
    text = _program()
    src = _source(text)
    assert "_pl_pipebatch.push_loop(" in src and "_pl_pipebatch.pop_accumulate(" in src
    assert "_pl_pipebatch." not in _source(text, exact=True)
    _, batched = _run(text, exact=False)
    _, exact = _run(text, exact=True)
    assert torch.equal(batched, exact)


def test_another_op_in_a_body_keeps_that_loop() -> None:
    src = _source(_program(aic_extra="        z: pl.Tile[[16, 32], pl.FP32, pl.Mem.Acc] = pl.tile.muls(t, 2.0)"))
    assert "_pl_pipebatch.push_loop(" not in src and "_pl_pipebatch.pop_accumulate(" in src
    src = _source(_program(aiv_extra=f"        q: {ACC} = pl.tile.muls(acc2, 1.0)"))
    assert "_pl_pipebatch.push_loop(" in src and "_pl_pipebatch.pop_accumulate(" not in src
    _run(_program(aiv_extra=f"        q: {ACC} = pl.tile.muls(acc2, 1.0)"), exact=False)


def test_a_window_past_the_edge_runs_the_loop_as_written() -> None:
    # five chunks of 16 over a 64-wide input: the batched call declines before any push
    text = _program().replace("pl.range(4)", "pl.range(5)").replace("pl.range(4, init_values", "pl.range(5, init_values")
    src = _source(text)
    assert "_pl_pipebatch.push_loop(" in src
    g = torch.Generator().manual_seed(5)
    a = torch.randn(16, 64, generator=g).bfloat16()
    b = torch.randn(64, 32, generator=g).bfloat16()
    outs = {}
    for exact in (True, False):
        keep: dict[str, torch.Tensor] = {}
        r = run_text(
            text, {"a": a, "b": b, "o": torch.zeros(16, 32)}, {"o": a.float() @ b.float()}, rtol=1e-5, atol=1e-4, exact=exact, keep=keep
        )
        outs[exact] = (r.status, keep.get("o"))
    assert outs[True][0] == outs[False][0]
    assert outs[True][1] is not None and outs[False][1] is not None and torch.equal(outs[True][1], outs[False][1])


def test_the_popped_products_are_added_in_the_loops_order() -> None:
    """Chunk products of very different sizes: the AIV end adds them one by one in the loop's
    order (a sum of the popped tiles first would round otherwise), so both paths agree bit for bit."""
    text = _program().replace("pl.range(4", "pl.range(32").replace("[[16, 64], pl.BF16]", "[[16, 512], pl.BF16]")
    text = text.replace("[[64, 32], pl.BF16]", "[[512, 32], pl.BF16]")
    assert "_pl_pipebatch.pop_accumulate(" in _source(text)
    g = torch.Generator()
    out = []
    for seed in range(3):
        g.manual_seed(seed)
        scale = (10.0 ** (torch.rand(32, generator=g) * 8 - 4)).repeat_interleave(16)
        a = (torch.randn(16, 512, generator=g) * scale).bfloat16()
        b = torch.randn(512, 32, generator=g).bfloat16()
        got = []
        for exact in (False, True):
            keep: dict[str, torch.Tensor] = {}
            r = run_text(
                text, {"a": a, "b": b, "o": torch.zeros(16, 32)}, {"o": torch.zeros(16, 32)}, rtol=1e9, atol=1e9, exact=exact, keep=keep
            )
            assert r.status == PASS, r.error
            got.append(keep["o"])
        out.append(torch.equal(got[0], got[1]))
    assert all(out), out


# ---------------------------------------------------------------------- products across a loop's tasks


def test_a_tasks_stripe_of_the_products_across_tasks_is_its_own_products_bit_for_bit() -> None:
    """``push_loop(across=...)``: a loop of 8 tasks, task ``i`` multiplying the same left window by
    the 64 columns ``[64 i, 64 i + 64)`` of a weight in 4 K chunks: every task's products (all four
    chunks, or the middle two a peeled loop batches) come from the one wider product made at the first
    task, each the products the loop makes for it (``chunk_products`` of its own windows)."""
    from pypto_lsp.exec import context, pipebatch
    from pypto_lsp.exec.batching import chunk_products, chunk_window

    g = torch.Generator().manual_seed(5)
    a = (torch.randn(16, 256, generator=g) * 3).bfloat16()
    w = (torch.randn(256, 512, generator=g) / 7).bfloat16()
    stripe = (64, 0, 8, 4)

    def products(task: int, first: int, chunks: int, col: int | None = None) -> tuple[torch.Tensor | None, torch.Tensor]:
        col = 64 * task if col is None else col
        lhs = chunk_window(a, (0, 64 * first), (16, 64), 1, chunks)
        rhs = chunk_window(w, (64 * first, col), (64, 64), 0, chunks)
        got = pipebatch._across_tasks(lhs, rhs, (a, (0, 0), (16, 64)), (w, (0, col), (64, 64)), first, chunks, stripe)
        return got, chunk_products(lhs.float(), rhs.float(), chunks)

    context.reset()
    pipebatch._STRIPES_EXACT.clear()
    for task, first, chunks in [(0, 1, 2), (3, 0, 4), (7, 1, 2), (1, 0, 4)]:
        got, own = products(task, first, chunks)
        assert got is not None and torch.equal(got, own), task
        # after the first task a view of the products the run keeps (push_loop copies it for its pushes)
        kept = [v[2].untyped_storage().data_ptr() for v in context.run_memo().values()]
        assert (got.untyped_storage().data_ptr() in kept) == (task != 0)
    assert list(pipebatch._STRIPES_EXACT.values()) == [True]  # the first task compared its stripe and the last
    assert len(context.run_memo()) == 1  # made once for the four tasks, peeled or not
    a[0, 0] = 1.0  # a write to the left operand: its version moves, the products are made again
    got, own = products(2, 0, 4)
    assert got is not None and torch.equal(got, own) and len(context.run_memo()) == 2
    # a column that is no task's stripe, or a layout found to differ: made as the loop makes them
    assert products(0, 0, 4, col=32)[0] is None
    layout = next(iter(pipebatch._STRIPES_EXACT))
    pipebatch._STRIPES_EXACT[layout] = False
    assert products(2, 0, 4)[0] is None
    pipebatch._STRIPES_EXACT.clear()
    context.reset()
    assert context.run_memo() == {}


def test_products_across_tasks_made_in_parts_side_by_side_are_each_tasks_own(monkeypatch: Any) -> None:
    """A big weight's products across tasks are made in parts of whole stripes, one helper thread
    each (exec.side_threads): every task's stripe is still its own products bit for bit, each part
    ran in its own thread, and a part that fails raises in the run's thread with nothing kept."""
    import threading

    import pytest

    from pypto_lsp.exec import context, pipebatch, side_threads
    from pypto_lsp.exec.batching import chunk_products, chunk_window

    g = torch.Generator().manual_seed(11)
    a = (torch.randn(16, 256, generator=g) * 3).bfloat16()
    w = (torch.randn(256, 512, generator=g) / 7).bfloat16()
    stripe = (64, 0, 8, 4)
    threads: set[str] = set()
    real = torch.matmul

    def matmul(*args: Any, **kw: Any) -> Any:
        threads.add(threading.current_thread().name)
        return real(*args, **kw)

    def products(task: int) -> tuple[torch.Tensor | None, torch.Tensor]:
        lhs = chunk_window(a, (0, 0), (16, 64), 1, 4)
        rhs = chunk_window(w, (0, 64 * task), (64, 64), 0, 4)
        got = pipebatch._across_tasks(lhs, rhs, (a, (0, 0), (16, 64)), (w, (0, 64 * task), (64, 64)), 0, 4, stripe)
        return got, chunk_products(lhs.float(), rhs.float(), 4)

    monkeypatch.setattr(side_threads, "WORTH_SPLITTING", 0)  # this small weight counts as big
    monkeypatch.setattr(torch, "matmul", matmul)
    before = side_threads.helper_threads()
    side_threads.set_helper_threads(3)  # parts of 3, 3 and 2 stripes
    try:
        context.reset()
        pipebatch._STRIPES_EXACT.clear()
        for task in (0, 2, 3, 5, 6, 7, 1, 4):
            got, own = products(task)
            assert got is not None and torch.equal(got, own), task
        assert len(context.run_memo()) == 1
        assert len([n for n in threads if n == "pypto-lsp-part"]) == 1 and len(threads) == 2  # the run's thread and helpers
        # a part that fails: raised in the run's thread, no products kept for later tasks
        context.reset()

        def failing(*args: Any, **kw: Any) -> Any:
            if threading.current_thread().name == "pypto-lsp-part":
                raise MemoryError("no room for this part")
            return real(*args, **kw)

        monkeypatch.setattr(torch, "matmul", failing)
        with pytest.raises(MemoryError):
            products(0)
        assert context.run_memo() == {}
    finally:
        side_threads.set_helper_threads(before)
        pipebatch._STRIPES_EXACT.clear()
        context.reset()


def test_the_across_stripe_reaches_the_generated_push_loop() -> None:
    """The lowering passes a push loop ``across`` only where the task plan says its weight's columns
    step through the tasks of a loop that could run as one batch (hidden 4096's MLP and o-projection)."""
    from pathlib import Path

    dump = (
        Path(__file__).resolve().parents[3]
        / "shared"
        / "fixtures"
        / "qwen3_scope3_910b"
        / "passes_dump"
        / "46_after_MaterializeRuntimeScopes.py"
    )
    if not dump.is_file():
        import pytest

        pytest.skip("needs ../shared/fixtures (qwen3_scope3_910b)")
    src = compile_text(dump.read_text(), memory=True).generated.source
    assert src.count("across=((64, 0, 16, 4), (64, 0, 16, 4))") == 1  # the MLP's gate and up products: 16 tasks of 64 columns
    assert src.count("across=((64, 0, 8, 4),)") == 1  # the output projection's: 8 tasks
    assert "across=" not in compile_text(dump.read_text(), memory=True, exact=True).generated.source
