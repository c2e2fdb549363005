"""What a pass changed, with memory-address noise normalised away."""

from __future__ import annotations

from pathlib import Path

from pypto_lsp.ir.passdiff import changed_blocks, pass_name, previous_dump

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
