"""``exec.script_code``: a generated script compiled block by block, a block seen before reused at
its new place, with the lines and file name a whole-script ``compile`` would give."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pypto_lsp.exec import script_code
from pypto_lsp.exec.codegen import generate
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.engine import compile_text
from pypto_lsp.validate.run_errors import locate

from .test_codegen import INCORE_DECO, ORCH_DECO, fn, line_of, program

EXAMPLE_DUMPS = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*/passes_dump/*.py"))
SIG = "x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]"
TILE = "pl.Tile[[8, 8], pl.FP32, pl.Mem.Vec]"
LOAD = "pl.tile.load(x, [0, 0], [8, 8], [8, 8], target_memory=pl.Mem.Vec)"


def _boom(extra_kernel: bool) -> str:
    """``k`` fails on its reshape (64 elements as 7x7, its rows from a scalar: only the run meets it); with ``extra_kernel`` a second kernel using an op
    ``k`` does not (one more line in the script's head: ``k``'s block moves down, its text unchanged)."""
    k = fn(
        INCORE_DECO,
        "k(" + SIG + ") -> pl.Tensor[[8, 8], pl.FP32]",
        f"a__tile: {TILE} = {LOAD}",
        "n: pl.Scalar[pl.INDEX] = pl.tensor.dim(x, 0)",
        "b__tile: pl.Tile[[7, 7], pl.FP32, pl.Mem.Vec] = pl.tile.reshape(a__tile, [n - 1, 7])",
        f"c__tile: {TILE} = pl.tile.mul(a__tile, a__tile)",
        "return y",
    )
    extra = fn(
        INCORE_DECO,
        "other(" + SIG + ") -> pl.Tensor[[8, 8], pl.FP32]",
        f"a__tile: {TILE} = {LOAD}",
        f"s__tile: {TILE} = pl.tile.exp(a__tile)",
        "return y",
    )
    main = fn(
        ORCH_DECO,
        "main(self, " + SIG + ") -> pl.Tensor[[8, 8], pl.FP32]",
        "y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = self.k(x, y)",
        "return y__ssa_v1",
    )
    return program("Boom", *([extra] if extra_kernel else []), k, main)


def _fails_at(text: str) -> tuple[int, int]:
    """(IR line, generated line of ``k``'s def) where running ``text`` fails."""
    comp = compile_text(text, None, memory=False)
    assert comp.error is None and comp.code is not None and comp.generated is not None, comp.error
    ns: dict[str, object] = {"__builtins__": __builtins__, **{a: __import__(m, fromlist=["_"]) for a, m in comp.generated.modules.items()}}
    for block in comp.code:
        exec(block, ns)
    with pytest.raises(RuntimeError) as info:
        ns["main"](torch.zeros(8, 8), torch.zeros(8, 8))  # type: ignore[operator]
    span = locate(info.value, comp.generated)
    assert span is not None
    k = ns[comp.generated.functions["k"]]
    assert k.__code__.co_filename == comp.generated.filename  # type: ignore[attr-defined]
    return span.line, k.__code__.co_firstlineno  # type: ignore[attr-defined]


def test_a_block_seen_before_is_reused_at_its_new_lines() -> None:
    first, second = _boom(extra_kernel=False), _boom(extra_kernel=True)
    line, def_line = _fails_at(first)
    assert line == line_of(first, "pl.tile.reshape(a__tile, [n - 1, 7])")
    cached = set(script_code._CACHE)
    line2, def_line2 = _fails_at(second)
    # k's block came from the cache: the second script added only the blocks it changed
    assert len(set(script_code._CACHE) - cached) < len(compile_text(second, None, memory=False).code or ())
    assert def_line2 > def_line  # the same code, moved down with its block
    assert line2 == line_of(second, "pl.tile.reshape(a__tile, [n - 1, 7])")  # and still located on the IR line


@pytest.mark.parametrize("dump", EXAMPLE_DUMPS[::4], ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_the_blocks_are_the_head_each_function_and_the_tail(dump: Path) -> None:
    prog = parse_text(dump.read_text()).program
    assert prog is not None
    gen = generate(prog, filename="<blocks>")
    lines = gen.source.splitlines()
    assert gen.blocks[0] == 1 and list(gen.blocks) == sorted(set(gen.blocks))
    assert lines[gen.blocks[-1] - 1].startswith("# IR names")
    ends = [*gen.blocks[1:], len(lines) + 1]
    functions = [lines[a - 1 : b - 1] for a, b in zip(gen.blocks[1:-1], ends[1:-1], strict=True)]
    assert len(functions) == len(prog.functions)
    for block in functions:  # a function's block: top-level statements, its def among them
        assert block[0][:1] not in (" ", "\t"), block[0]
        assert any(ln.startswith("def ") for ln in block), block[:3]


def test_blocks_that_are_no_statements_fall_back_to_the_whole_script() -> None:
    source = "x = (1 +\n     2)\ndef f():\n    return 1 / 0\n"
    code = script_code.compile_script(source, "<split>", (1, 2, 3))  # line 2 continues line 1's statement
    assert len(code) == 1
    ns: dict[str, object] = {}
    exec(code[0], ns)
    assert ns["x"] == 3
    assert ns["f"].__code__.co_firstlineno == 3  # type: ignore[attr-defined]
