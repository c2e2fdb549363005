"""What a pass changed, with memory-address noise normalised away."""

from __future__ import annotations

from pathlib import Path

from pypto_lsp.ir.passdiff import changed_blocks, dump_order_key, ir_unchanged, pass_name, previous_dump

BEFORE = """# pypto.program: P
import pypto.language as pl
    t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 64], [16, 64])
    u: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)
    y: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(u, [0, 0], y0)
"""

# addresses added (as InitMemRef/AllocateMemoryAddr do), a comment, and one real change (the offset)
AFTER = """# pypto.program: P
import pypto.language as pl
    mem_vec_0: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 4096)
    # a comment the pass added
    t: pl.Tile[[16, 64], pl.FP32, pl.MemRef(mem_vec_0, pl.const(0, pl.INT64), 4096), pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 64], [16, 64])
    u: pl.Tile[[16, 64], pl.FP32, pl.MemRef(mem_vec_0, pl.const(0, pl.INT64), 4096), pl.Mem.Vec] = pl.tile.exp(t)
    y: pl.Tensor[[16, 64], pl.FP32, pl.MemRef("mem_ddr_0", pl.const(0, pl.INT64), 4096)] = pl.tile.store(u, [8, 0], y0)
"""


def test_only_the_real_change_is_reported() -> None:
    assert changed_blocks(BEFORE, AFTER) == [(7, 7)]


def test_nothing_changed() -> None:
    assert changed_blocks(BEFORE, BEFORE) == []


def test_a_rewrite_of_everything_says_nothing() -> None:
    before = "\n".join(f"a{i} = {i}" for i in range(200))
    after = "\n".join(f"b{i} = {i}" if i % 2 else f"a{i} = {i}" for i in range(200))
    assert changed_blocks(before, after, limit=40) == []


def test_pass_names_and_previous_dump(tmp_path: Path) -> None:
    for name in ("00_frontend.py", "04_after_ConvertToSSA.py", "11_after_ConvertTensorToTileOps.py", "notes.txt"):
        (tmp_path / name).write_text("")
    assert pass_name(tmp_path / "11_after_ConvertTensorToTileOps.py") == "ConvertTensorToTileOps"
    assert pass_name(tmp_path / "00_frontend.py") == "00_frontend"
    assert previous_dump(tmp_path / "11_after_ConvertTensorToTileOps.py") == tmp_path / "04_after_ConvertToSSA.py"
    assert previous_dump(tmp_path / "00_frontend.py") is None


def test_ir_unchanged_ignores_comments_addresses_and_allocs_only() -> None:
    addresses_only = AFTER.replace("[8, 0], y0", "[0, 0], y0")
    assert ir_unchanged(BEFORE, addresses_only)
    assert ir_unchanged(BEFORE, BEFORE + "\n# trailing comment\n\n")
    assert not ir_unchanged(BEFORE, AFTER)  # the offset changed
    assert not ir_unchanged(None, BEFORE) and not ir_unchanged(BEFORE, None)


def test_the_pass_chart_says_unchanged_exactly_where_ir_unchanged_does() -> None:
    """The chart, the report and the editor's tree (which asks the server's pass chart) share one
    definition; examples/ has address-only passes (InitMemRef, AllocateMemoryAddr) where a
    comments-only comparison said 'changed'."""
    from pypto_lsp.formats.passchart import pass_chart

    examples = Path(__file__).resolve().parents[2] / "examples"
    seen_true = 0
    for folder in sorted(examples.glob("*/passes_dump")):
        files = sorted(folder.glob("*.py"), key=lambda p: dump_order_key(p.name))
        chart = pass_chart([{"file": str(f), "status": "unknown", "tensors": {}} for f in files])
        texts = [f.read_text(encoding="utf-8") for f in files]
        expected = [False] + [ir_unchanged(a, b) for a, b in zip(texts, texts[1:])]
        assert [p["unchanged"] for p in chart["passes"]] == expected, folder
        seen_true += sum(expected)
    memory = examples / "broken_memory" / "passes_dump"
    addr = memory / "35_after_AllocateMemoryAddr.py"
    assert ir_unchanged(previous_dump(addr).read_text(encoding="utf-8"), addr.read_text(encoding="utf-8"))  # type: ignore[union-attr]
    assert seen_true >= 3
