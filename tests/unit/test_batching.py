"""K-chunk accumulation loops run batched (pypto_lsp.exec.batching), and where they must not."""

from __future__ import annotations

import pytest
import torch

from pypto_lsp.validate.engine import compile_text, run_text
from pypto_lsp.validate.report import PASS

ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"


def _program(k: int, chunk: int, memref: str = "", extra: str = "") -> str:
    acc_t = f"pl.Tensor[[16, 32], pl.FP32{memref}]"
    body = [
        f"acc0: {acc_t} = pl.tensor.full([16, 32], dtype=pl.FP32, value=0.0)",
        f"for kb, (acc,) in pl.range({k // chunk}, init_values=(acc0,)):",
        f"    k0: pl.Scalar[pl.INDEX] = kb * {chunk}",
        f"    a_c: pl.Tensor[[16, {chunk}], pl.BF16] = pl.tensor.slice(a, [16, {chunk}], [0, k0])",
        f"    w_c: pl.Tensor[[{chunk}, 32], pl.BF16] = pl.tensor.slice(w, [{chunk}, 32], [k0, 0])",
        *([extra] if extra else []),
        f"    acc1: {acc_t} = pl.tensor.add(acc, pl.tensor.matmul(a_c, w_c, a_trans=False, b_trans=False, c_matrix_nz=False))",
        f"    acc_rv: {acc_t} = pl.yield_(acc1)",
        "y: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.assemble(y, acc_rv, [0, 0])",
        "return y",
    ]
    lines = [
        "# pypto.program: KChunk",
        "import pypto.language as pl",
        "",
        "@pl.program",
        "class KChunk:",
        f"    {ORCH}",
        f"    def main(self, a: pl.Tensor[[16, {k}], pl.BF16], w: pl.Tensor[[{k}, 32], pl.BF16], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:",
        *("        " + b for b in body),
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def tensors() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(3)
    a = torch.randn(16, 256, generator=g).bfloat16()
    w = torch.randn(256, 32, generator=g).bfloat16()
    return {"a": a, "w": w, "y": torch.zeros(16, 32)}, {"y": a.float() @ w.float()}


def _batched(text: str) -> bool:
    comp = compile_text(text)
    assert comp.generated is not None, comp.error
    return "_pl_kchunk.kchunk(" in comp.generated.source


def test_a_k_chunk_loop_runs_as_one_matmul_and_passes(tensors) -> None:
    text = _program(256, 64)
    assert _batched(text)
    ins, exp = tensors
    r = run_text(text, ins, exp, rtol=1e-5, atol=1e-4)
    assert r.status == PASS, r.error


def test_exact_keeps_the_loop(tensors) -> None:
    text = _program(256, 64)
    comp = compile_text(text, exact=True)
    assert comp.generated is not None and "_pl_kchunk.kchunk(" not in comp.generated.source
    ins, exp = tensors
    assert run_text(text, ins, exp, rtol=1e-5, atol=1e-4, exact=True).status == PASS


def test_memory_placements_in_ddr_alone_batch() -> None:
    """A GM MemRef places no tile: the memory model has nothing to keep in order (placed tiles: see
    test_memory.test_placed_tiles_keep_every_loop)."""
    text = _program(256, 64, memref=', pl.MemRef("mem_ddr_0", pl.const(0, pl.INT64), 2048)')
    assert compile_text(text).generated is not None
    assert _batched(text)


def test_any_other_op_in_the_body_keeps_the_loop() -> None:
    extra = "    s: pl.Tensor[[16, 64], pl.BF16] = pl.tensor.muls(a_c, 2.0)"
    assert not _batched(_program(256, 64, extra=extra))


def test_chunks_that_do_not_tile_the_axis_keep_the_loop() -> None:
    # windows of 64 moved by 32 overlap: not one contiguous window
    text = _program(256, 64).replace("k0: pl.Scalar[pl.INDEX] = kb * 64", "k0: pl.Scalar[pl.INDEX] = kb * 32")
    assert not _batched(text)


def test_a_window_past_the_edge_falls_back_to_the_loop_at_run_time() -> None:
    # 5 chunks of 64 over a 256-wide input: the last window is past the edge (zero-padded by the
    # loop as written); the batched call declines and the loop runs
    text = (
        _program(320, 64)
        .replace("pl.Tensor[[16, 320], pl.BF16]", "pl.Tensor[[16, 256], pl.BF16]")
        .replace("pl.Tensor[[320, 32], pl.BF16]", "pl.Tensor[[256, 32], pl.BF16]")
    )
    assert _batched(text)
    g = torch.Generator().manual_seed(4)
    a = torch.randn(16, 256, generator=g).bfloat16()
    w = torch.randn(256, 32, generator=g).bfloat16()
    exact = {}
    for on in (True, False):
        r = run_text(text, {"a": a, "w": w, "y": torch.zeros(16, 32)}, {"y": a.float() @ w.float()}, collect_stats=True, exact=on)
        exact[on] = (r.status, r.tensors["y"].max_abs_diff if r.tensors else r.error)
    assert exact[True] == exact[False]


def test_exact_is_a_run_setting(tensors) -> None:
    """``exact`` per run (what the worker passes), never a process default: a run without it batches."""
    text = _program(256, 64)
    plain = compile_text(text, exact=True)
    assert plain.generated is not None and "_pl_kchunk.kchunk(" not in plain.generated.source
    ins, exp = tensors
    assert run_text(text, ins, exp, rtol=1e-5, atol=1e-4, exact=True).status == PASS
    assert _batched(text)  # the exact run left nothing behind
    batched = compile_text(text, exact=False)
    assert batched.generated is not None and "_pl_kchunk.kchunk(" in batched.generated.source


def test_exact_from_the_case_the_editor_setting_and_the_worker(tmp_path) -> None:
    from pypto_lsp.server import config as scfg
    from pypto_lsp.validate.config import ConfigError, RunSettings, find_case
    from pypto_lsp.validate.folders import ResultCache
    from pypto_lsp.worker import protocol as P

    (tmp_path / "passes_dump").mkdir()
    dump = tmp_path / "passes_dump" / "00_frontend.py"
    dump.write_text("# pypto.program: P\n")
    cfg = tmp_path / "pypto-lsp.toml"
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\nexact = true\n')
    assert find_case(dump).settings.exact is True
    assert scfg.resolve(dump, scfg.Settings(), None).settings.exact is True  # the case's key
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\n')
    assert scfg.resolve(dump, scfg.Settings(), None).settings.exact is False
    settings, problems = scfg.merge(scfg.Settings(), {"pypto-lsp": {"exact": True}})
    assert problems == [] and settings.exact is True
    assert scfg.resolve(dump, settings, None).settings.exact is True  # the editor setting
    assert scfg.resolve(dump, settings, None).run_settings().exact is True  # what the worker gets
    assert scfg.merge(scfg.Settings(), {"exact": "yes"})[1] == ["'exact' must be true or false, got 'yes'"]
    cfg.write_text('[[cases]]\ndumps = "passes_dump"\nexact = 1\n')
    with pytest.raises(ConfigError, match="'exact' must be true or false"):
        find_case(dump)
    # to the worker, and into the result cache's key (kept apart, though the two paths give the same bits)
    params = P.ValidateParams(file="f.py", text="x", golden=P.Golden("i.pt", "e.pt"), settings=RunSettings(0.1, 0.1, exact=True))
    assert P.from_wire(P.ValidateParams, P.to_wire(params)).settings.exact is True
    assert RunSettings(exact=True).engine_kwargs()["exact"] is True  # and from there to run_text
    folder = P.ValidateFolderParams(files=["f.py"], golden=P.Golden("i.pt", "e.pt"), settings=RunSettings(exact=True))
    assert P.from_wire(P.ValidateFolderParams, P.to_wire(folder)).settings.exact is True
    cache = ResultCache(enabled=False)
    assert cache.key("t", "b", RunSettings(0.1, 0.1, exact=True)) != cache.key("t", "b", RunSettings(0.1, 0.1, exact=False))


def _pre_ssa(text: str) -> str:
    """The same loop as printed before ConvertToSSA: the body rebinds its accumulator."""
    text = text.replace("for kb, (acc,) in pl.range(4, init_values=(acc0,)):", "for kb in pl.range(4):")
    text = text.replace("acc0: ", "acc: ").replace("acc1: pl.Tensor", "acc: pl.Tensor")
    text = "\n".join(ln for ln in text.splitlines() if "pl.yield_" not in ln) + "\n"
    return text.replace("assemble(y, acc_rv,", "assemble(y, acc,")


def test_a_pre_ssa_accumulation_batches_too(tensors) -> None:
    text = _pre_ssa(_program(256, 64))
    assert "pl.yield_" not in text and "acc: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.add(acc," in text
    assert _batched(text)
    ins, exp = tensors
    assert run_text(text, ins, exp, rtol=1e-5, atol=1e-4).status == PASS
    # an accumulator first made in the loop is no accumulator of it. Such a program reads it above
    # its assignment, which the checker refuses (it never runs); the planner, asked all the same,
    # plans no batch for it
    late = text.replace(
        "        acc: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.full", "        acc9: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.full"
    )
    comp = compile_text(late)
    assert comp.generated is None and comp.error is not None and comp.error.kind == "static:used-before-assigned", comp.error
    from pypto_lsp.analysis.lowering import Options, lower_program

    assert comp.program is not None
    assert "KChunk" not in lower_program(comp.program, Options(), None).strategies()
    assert "KChunk" in lower_program(compile_text(text).program, Options(), None).strategies()  # type: ignore[arg-type]


def test_the_reads_after_a_loop_are_walked_once_per_function_while_a_program_is_lowered() -> None:
    """``used_after`` asks, for each candidate loop, whether anything after it reads what the loop
    made; while one program is lowered each function's reads are collected once, not once per loop,
    and the answers are the ones a fresh walk gives."""
    from pypto_lsp.analysis.batching_plan import reads_kept, statement_reads, used_after
    from pypto_lsp.ir.model import For, walk_stmts
    from pypto_lsp.ir.parser import parse_text

    program = parse_text(_program(256, 64), "k.py").program
    assert program is not None
    fn = program.functions[0]
    loop = next(s for s in walk_stmts(fn.body) if isinstance(s, For))
    fresh = (used_after(loop, fn, {"acc_rv"}), used_after(loop, fn, {"k0", "a_c"}), used_after(loop, fn, {"y"}))
    assert fresh == (True, False, True)  # acc_rv is the loop's own yield target: the assemble reads it
    assert statement_reads(fn) is not statement_reads(fn)  # outside a lowering: walked each time
    with reads_kept():
        first = statement_reads(fn)
        assert statement_reads(fn) is first
        assert (used_after(loop, fn, {"acc_rv"}), used_after(loop, fn, {"k0", "a_c"}), used_after(loop, fn, {"y"})) == fresh
    assert statement_reads(fn) is not first  # the cache ends with the lowering


def _both_paths(text: str, ins: dict[str, torch.Tensor], shape: tuple[int, int] = (16, 32)) -> tuple[torch.Tensor, torch.Tensor]:
    """The output ``y`` (of ``shape``) of the batched run and of the run with every loop as written."""
    assert _batched(text)
    out = []
    for exact in (False, True):
        kept: dict[str, torch.Tensor] = {}
        r = run_text(text, ins, {"y": torch.zeros(*shape)}, rtol=1e9, atol=1e9, exact=exact, keep=kept)
        assert r.status == PASS, r.error
        out.append(kept["y"])
    return out[0], out[1]


def _chunky(k: int, chunk: int, rows: int = 16, cols: int = 32, seed: int = 7) -> dict[str, torch.Tensor]:
    """Inputs whose chunk products differ by orders of magnitude: the order their sums are taken
    in shows in the last bits of the accumulator."""
    g = torch.Generator().manual_seed(seed)
    scale = (10.0 ** (torch.rand(k // chunk, generator=g) * 8 - 4)).repeat_interleave(chunk)
    a = (torch.randn(rows, k, generator=g) * scale).bfloat16()
    w = torch.randn(k, cols, generator=g).bfloat16()
    return {"a": a, "w": w, "y": torch.zeros(16, 32)}


def test_a_batched_accumulation_adds_its_chunks_in_the_loops_order() -> None:
    """32 chunk products of very different sizes: the batched call adds them one by one in the
    loop's order, so its accumulator has the loop's bits (one FP32 matmul over the whole axis,
    or a sum of the products, rounds otherwise)."""
    text = _program(2048, 64)
    batched, exact = _both_paths(text, _chunky(2048, 64))
    assert torch.equal(batched, exact)


def test_a_product_the_ir_narrows_to_bf16_is_rounded_in_the_batch_too() -> None:
    """``t: pl.Tensor[[16, 32], pl.BF16] = pl.tensor.matmul(...)`` (the compiler's type before the
    cross-core split): the loop rounds each chunk's product to BF16 before adding it in FP32, and
    so does the batched call."""
    named = "    t_c: pl.Tensor[[16, 32], pl.BF16] = pl.tensor.matmul(a_c, w_c, a_trans=False, b_trans=False, c_matrix_nz=False)"
    text = _program(512, 64, extra=named).replace(
        "pl.tensor.add(acc, pl.tensor.matmul(a_c, w_c, a_trans=False, b_trans=False, c_matrix_nz=False))", "pl.tensor.add(acc, t_c)"
    )
    batched, exact = _both_paths(text, _chunky(512, 64, seed=8))
    assert torch.equal(batched, exact)
    assert not torch.equal(exact, _both_paths(_program(512, 64), _chunky(512, 64, seed=8))[1])  # the rounding shows


@pytest.mark.parametrize(("rows", "cols"), [(1, 32), (16, 1)])
def test_a_vector_product_batches_bit_for_bit(rows: int, cols: int) -> None:
    """One row or one column: ``matmul`` takes BLAS's matrix-vector path there, which sums in
    another order than a batched product; those chunks are multiplied one by one."""
    text = _program(1024, 64).replace("[16, ", f"[{rows}, ").replace(", 32]", f", {cols}]")
    ins = _chunky(1024, 64, rows=rows, cols=cols, seed=9)
    ins["y"] = torch.zeros(rows, cols)
    batched, exact = _both_paths(text, ins, (rows, cols))
    assert torch.equal(batched, exact)


def test_add_in_order_and_chunk_products_are_the_loops() -> None:
    """The two helpers against the loop they stand for: adds left to right in the accumulator's
    dtype (FP32, BF16, FP16; terms from 1e-4 to 1e4), and each chunk's own matmul."""
    from pypto_lsp.exec.batching import add_in_order, chunk_products

    g = torch.Generator().manual_seed(11)
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        for n, shape in ((2, (3,)), (33, (16, 64)), (7, (1, 5)), (64, (2, 3, 4)), (5, (16, 4096))):
            terms = (torch.randn(n, *shape, generator=g) * 10.0 ** (torch.rand(n, *shape, generator=g) * 8 - 4)).to(dt)
            init = torch.randn(*shape, generator=g).to(dt)
            acc = init
            for t in terms:
                acc = acc + t
            got = add_in_order(init, terms)
            assert got.dtype == dt and torch.equal(got, acc), (dt, n, shape)
            assert torch.equal(init, init.clone())  # the accumulator given is not written
    for m, c, p, chunks in ((1, 16, 16, 2), (16, 64, 1, 4), (16, 128, 64, 8), (3, 130, 65, 3), (1, 64, 1, 5)):
        lhs = torch.randn(m, c * chunks, generator=g)
        rhs = torch.randn(c * chunks, p, generator=g)
        want = torch.stack([torch.matmul(lhs[:, i * c : (i + 1) * c], rhs[i * c : (i + 1) * c]) for i in range(chunks)])
        assert torch.equal(chunk_products(lhs, rhs, chunks), want), (m, c, p, chunks)


def test_a_torch_that_adds_in_another_order_is_found_and_the_loops_adds_run(monkeypatch) -> None:
    """The order ``index_add_`` adds in is torch's implementation, not its contract: a torch whose
    ``index_add_`` sums the slices first (as ``Tensor.sum`` does) is found by the one check a process
    makes, and the accumulators get the loop's adds one by one."""
    from pypto_lsp.exec import batching

    def summing(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        for k in index.unique().tolist():
            self[k] += source[index == k].sum(0)
        return self

    monkeypatch.setattr(batching, "_IN_ORDER", [])
    monkeypatch.setattr(torch.Tensor, "index_add_", summing)
    assert batching._index_add_in_order() is False
    g = torch.Generator().manual_seed(13)
    terms = torch.randn(40, 16, 64, generator=g) * 10.0 ** (torch.rand(40, 16, 64, generator=g) * 8 - 4)
    init = torch.randn(16, 64, generator=g)
    acc = init
    for t in terms:
        acc = acc + t
    assert not torch.equal(summing(init.clone().unsqueeze(0), 0, torch.zeros(40, dtype=torch.long), terms)[0], acc)
    assert torch.equal(batching.add_in_order(init, terms), acc)
    both = batching.add_each_in_order([init, init + 1], torch.stack([terms, terms], 1).reshape(80, 16, 64))
    assert torch.equal(both[0], acc)


def test_a_blas_whose_batched_product_differs_is_found_on_the_first_call(monkeypatch) -> None:
    """``bmm`` giving each chunk's own ``matmul`` bit for bit is BLAS's behaviour here, not a promise:
    the first call of a shape compares the two, and a shape where they differ is multiplied chunk
    by chunk from then on."""
    from pypto_lsp.exec import batching

    real_bmm = torch.bmm
    monkeypatch.setattr(batching, "_BMM_EXACT", {})
    monkeypatch.setattr(torch, "bmm", lambda a, b: real_bmm(a, b) * (1 + 2**-20))  # another BLAS: other last bits
    g = torch.Generator().manual_seed(14)
    lhs, rhs = torch.randn(16, 256, generator=g), torch.randn(256, 32, generator=g)
    want = torch.stack([torch.matmul(lhs[:, i * 64 : (i + 1) * 64], rhs[i * 64 : (i + 1) * 64]) for i in range(4)])
    for _ in range(2):
        assert torch.equal(batching.chunk_products(lhs, rhs, 4), want)
    assert list(batching._BMM_EXACT.values()) == [False]
    monkeypatch.setattr(torch, "bmm", real_bmm)
    batching._BMM_EXACT.clear()
    assert torch.equal(batching.chunk_products(lhs, rhs, 4), want) and list(batching._BMM_EXACT.values()) == [True]
