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
    # to the worker, and into the result cache's key (the two paths differ by rounding)
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
    # an accumulator first made after the loop is no accumulator of it
    late = text.replace(
        "        acc: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.full", "        acc9: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.full"
    )
    assert not _batched(late)


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
