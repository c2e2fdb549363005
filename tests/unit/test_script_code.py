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
    script_code.run_blocks(comp.code, ns)
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


def test_a_function_never_called_is_never_compiled() -> None:
    """``other`` is in the script but the run never calls it: its block waits as a stand-in and
    ``compile`` never reads it; called later, it compiles in place, at its lines, and an alias bound
    to its stand-in before forwards to it."""
    text = program(
        "Lazy",
        fn(INCORE_DECO, "other_never_called(" + SIG + ") -> pl.Tensor[[8, 8], pl.FP32]", f"a__tile: {TILE} = {LOAD}", "return y"),
        fn(INCORE_DECO, "k(" + SIG + ") -> pl.Tensor[[8, 8], pl.FP32]", f"a__tile: {TILE} = {LOAD}", "return y"),
        fn(
            ORCH_DECO,
            "main(self, " + SIG + ") -> pl.Tensor[[8, 8], pl.FP32]",
            "y__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = self.k(x, y)",
            "return y__ssa_v1",
        ),
    )
    comp = compile_text(text, None, memory=False)
    assert comp.error is None and comp.code is not None and comp.generated is not None, comp.error
    gen = comp.generated
    lazy = [b for b in comp.code if isinstance(b, script_code.LazyBlock)]
    other = gen.functions["other_never_called"]
    assert [b.names for b in lazy if other in b.names] == [(other,)]
    block = next(b for b in lazy if other in b.names)
    ns: dict[str, object] = {"__builtins__": __builtins__, **{a: __import__(m, fromlist=["_"]) for a, m in gen.modules.items()}}
    script_code.run_blocks(comp.code, ns)
    stand_in = ns[other]
    assert ns["other_never_called"] is stand_in  # the tail's IR alias, bound before any call
    ns["main"](torch.zeros(8, 8), torch.zeros(8, 8))  # type: ignore[operator]
    assert ns[other] is stand_in and block.text not in script_code._CACHE  # never called: never compiled
    y = torch.zeros(8, 8)
    ns["other_never_called"](torch.ones(8, 8), y)  # type: ignore[operator]
    real = ns[other]
    assert real is not stand_in and block.text in script_code._CACHE
    assert real.__code__.co_filename == gen.filename  # type: ignore[attr-defined]
    assert real.__code__.co_firstlineno == block.start  # type: ignore[attr-defined]
    assert gen.source.splitlines()[block.start - 1].startswith(f"def {other}(")


def test_traced_scripts_and_blocks_that_run_statements_are_compiled_at_once() -> None:
    text = _boom(extra_kernel=True)
    traced = compile_text(text, None, memory=False, trace=True)
    assert traced.code is not None and not any(isinstance(b, script_code.LazyBlock) for b in traced.code)
    source = "x = 1\ndef f():\n    return g()\n\ndef g():\n    return x\ny = f\n"
    code = script_code.compile_script(source, "<lazy>", (1, 2, 5, 7), lazy=True)
    # the head and the tail never wait; each block of defs alone does (neither was compiled before)
    assert [type(b).__name__ for b in code] == ["code", "LazyBlock", "LazyBlock", "code"]
    ns: dict[str, object] = {}
    script_code.run_blocks(code, ns)
    assert ns["y"]() == 1  # type: ignore[operator]  # through f's stand-in, then g's
    mixed = script_code.compile_script("x = 1\ndef f():\n    return x\nz = 2\nw = 3\n", "<lazy>", (1, 2, 5), lazy=True)
    assert not any(isinstance(b, script_code.LazyBlock) for b in mixed)  # 'z = 2' must run at its place
