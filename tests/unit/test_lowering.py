"""Lowering (analysis/lowering.py) decides, per function and loop, what the script does; the code
generator only prints it: a strategy it is handed is what runs, and none is chosen anywhere else."""

from __future__ import annotations

from pathlib import Path

from pypto_lsp.analysis.lowering import AsWritten, KChunk, Lowering, Options, PipePop, PipePush, Sweep, lower_program
from pypto_lsp.exec.codegen import generate
from pypto_lsp.ir.memory import plan_program
from pypto_lsp.ir.model import For, Program, walk_stmts
from pypto_lsp.ir.parser import parse_text

from . import test_batching, test_pipebatch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _program(text: str) -> Program:
    prog = parse_text(text, "<t>").program
    assert prog is not None
    return prog


def _kinds(low: Lowering) -> dict[str, int]:
    return low.strategies()


def test_each_strategy_is_chosen_where_it_applies_and_only_when_the_run_allows() -> None:
    kchunk = _program(test_batching._program(256, 64))
    pipes = _program(test_pipebatch._program())
    sweep = _program((EXAMPLES / "elementwise" / "passes_dump" / "11_after_ConvertTensorToTileOps.py").read_text())
    assert _kinds(lower_program(kchunk, Options(), None)) == {"KChunk": 1}
    assert _kinds(lower_program(pipes, Options(), None)) == {"PipePush": 1, "PipePop": 1}
    assert _kinds(lower_program(sweep, Options(), None)) == {"Sweep": 1}
    for opts in (Options(trace=True), Options(exact=True)):  # localisation and exact: every loop as written
        for p in (kchunk, pipes, sweep):
            assert _kinds(lower_program(p, opts, None)) == {}
    assert _kinds(lower_program(pipes, Options(check_shapes=False), None)) == {}
    # the instrumentation is the plan's too
    low = lower_program(pipes, Options(trace=True, sanitize=True), None)
    assert low.options.trace and low.options.sanitize and all(f.memory is None for f in low.functions.values())


def test_placed_tiles_keep_k_chunks_as_written_but_sweep() -> None:
    placed = _program((EXAMPLES / "elementwise" / "passes_dump" / "32_after_InitMemRef.py").read_text())
    mem = plan_program(placed)
    low = lower_program(placed, Options(), mem)
    assert low.memory is mem and _kinds(low) == {"Sweep": 1}
    assert any(f.memory is not None and f.same_path for f in low.functions.values())
    assert lower_program(placed, Options(), None).memory is None  # the memory model off


def test_the_generator_prints_the_strategy_it_is_handed() -> None:
    text = test_batching._program(256, 64)
    prog = _program(text)
    low = lower_program(prog, Options(), None)
    assert "_pl_kchunk.kchunk(" in generate(prog, lowering=low).source
    # the same program, its loop now as written: no batched call printed, and nothing re-decides it
    (loop,) = [s for s in walk_stmts(prog.functions[0].body) if isinstance(s, For)]
    assert isinstance(low.functions["main"].loop(loop), KChunk)
    low.functions["main"].loops.clear()
    assert isinstance(low.functions["main"].loop(loop), AsWritten)
    src = generate(prog, lowering=low).source
    assert "_pl_kchunk" not in src and "    for kb in range(0, 4, 1):\n" in src, src


def test_pipe_strategies_name_their_end() -> None:
    low = lower_program(_program(test_pipebatch._program()), Options(), None)
    ends = {type(st) for f in low.functions.values() for st in f.loops.values()}
    assert ends == {PipePush, PipePop} and not ends & {Sweep, KChunk}
