"""Item 1: every step from the dump's bytes to the cache key is linear in the input.

A long run of spaces inside a call once made the trailing-whitespace normalisation behind the
cache key backtrack (150 KB: 61 s; 5 MB: past 120 s) before any timeout applied. The figures
are in ``benchmarks/bench_reliability.py``; here, the results are right and a 2 MB input finishes
under a bound hundreds of times what linear work needs (the quadratic pattern needed hours)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from pypto_lsp.validate.config import RunSettings
from pypto_lsp.validate.folders import ResultCache, normalise

from .conftest import CASE, needs_fixtures

pytestmark = needs_fixtures


def spaced(n: int) -> str:
    src = (CASE / "passes_dump" / "00_frontend.py").read_text()
    return src.replace("pl.tile.add(tile_a, tile_b)", "pl.tile.add(tile_a," + " " * n + "tile_b)")


def test_normalise_keeps_inner_spaces_and_drops_trailing_ones() -> None:
    text = "a = 1   \nb = 2\t \n    # comment\nc = f(x,     y)  \n"
    assert normalise(text) == "a = 1\nb = 2\nc = f(x,     y)\n"


def test_normalise_drops_alloc_lines_and_memrefs_as_before() -> None:
    text = (
        "    mem_0: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 0, 65536)   \n"
        "    x: pl.Tile[[8, 8], pl.FP32, pl.MemRef(mem_0, 0, 256)] = f(y)\n"
        "    z: pl.Ptr = pl.tile.alloc(\n"
    )
    assert normalise(text) == "    x: pl.Tile[[8, 8], pl.FP32] = f(y)\n    z: pl.Ptr = pl.tile.alloc(\n"


def test_whitespace_runs_give_one_key_per_text() -> None:
    cache = ResultCache(enabled=False)
    a, b = spaced(150_000), spaced(150_001)
    assert cache.key(a, "g", RunSettings(0.05, 0.05)) != cache.key(b, "g", RunSettings(0.05, 0.05))
    assert cache.key(a, "g", RunSettings(0.05, 0.05)) == cache.key(a + "   ", "g", RunSettings(0.05, 0.05))


def test_two_megabytes_of_spaces_parse_and_normalise() -> None:
    # in a child process with a generous bound: the backtracking pattern took hours at this size
    code = textwrap.dedent(
        f"""
        from pathlib import Path
        from pypto_lsp.ir.parser import parse_text
        from pypto_lsp.validate.config import RunSettings
        from pypto_lsp.validate.folders import ResultCache
        src = Path({str(CASE / "passes_dump" / "00_frontend.py")!r}).read_text()
        text = src.replace("pl.tile.add(tile_a, tile_b)", "pl.tile.add(tile_a," + " " * 2_000_000 + "tile_b)")
        res = parse_text(text, "ws.py")
        assert res.program is not None and not res.errors, res.errors[:1]
        ResultCache(enabled=False).key(text, "g", RunSettings(0.05, 0.05))
        print("ok")
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]


def test_pass_marks_strip_in_linear_time() -> None:
    # ClassifyIterArgCarry's and StampTfreeSplit's marks leave the key (validate.folders._inert_marks_out):
    # a header with 200 000 marks and no closing brace, 20 000 headers with another key among the
    # marks, a tfree after 2 M spaces with another keyword, in a child with a bound (a backtracking
    # pattern would take hours)
    code = textwrap.dedent(
        """
        from pypto_lsp.validate.folders import normalise
        mark = '"iter_arg_rebind_1": True, '
        one = "for i, (x,) in pl.range(4, init_values=(y,), attrs={" + mark * 200_000 + '"iter_arg_rebind_2": False):'
        many = ("for i, (x,) in pl.range(4, init_values=(y,), attrs={" + mark * 10 + '"q": 1}):' + chr(10)) * 20_000
        ok = "for i, (x,) in pl.range(4, init_values=(y,), attrs={" + mark * 3 + '"iter_arg_rebind_2": False}):'
        assert normalise(one) == one  # no closing brace: not a mark, kept
        assert normalise(many) == many  # another key among the marks: kept
        assert normalise(ok) == "for i, (x,) in pl.range(4, init_values=(y,)):"
        spaces = " " * 2_000_000 + "pl.system.tfree_to_aic(t, split=" + "1" * 200_000 + ", id=2)"
        assert normalise(spaces) == spaces  # StampTfreeSplit's stamp is only split=N alone
        assert normalise("    pl.system.tfree_to_aiv(t, split=1)") == "    pl.system.tfree_to_aiv(t)"
        print("ok")
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]
