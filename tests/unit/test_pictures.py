"""The pictures' data: error maps (|Δ| per element, tiles, lanes, store lines) and the pass chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from pypto_lsp.formats.html_report import report_data
from pypto_lsp.formats.passchart import pass_chart
from pypto_lsp.validate.errormap import decode_cells, error_map, error_maps, view2d_shape
from pypto_lsp.validate.golden import load_bundle
from pypto_lsp.validate.library import validate_passes

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
MIXED_22 = EX / "mixed_matmul" / "passes_dump" / "22_after_ExpandMixedKernel.py"
STORE_LINE = "        t__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(acc__tile_Vec, 2.0)\n"


def _lane_broken_text() -> str:
    """mixed_matmul's ExpandMixedKernel dump with a bug on AIV lane 1 only (it adds 1000 * subblock_idx)."""
    text = MIXED_22.read_text()
    assert STORE_LINE in text and "pl.tile.store(t__tile, [0 + subblock_idx" in text
    bug = "        t__tile_1: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.adds(t__tile, subblock_idx * 1000)\n"
    return text.replace(STORE_LINE, STORE_LINE + bug).replace(
        "pl.tile.store(t__tile, [0 + subblock", "pl.tile.store(t__tile_1, [0 + subblock"
    )


def _bad_rows(m: dict) -> set[int]:
    c = decode_cells(m)
    return {r for r, b in zip(c["r"], c["bad"]) if b}


@pytest.fixture(scope="module")
def mixed_golden() -> tuple[dict, dict]:
    return load_bundle(EX / "mixed_matmul" / "golden" / "inputs.pt"), load_bundle(EX / "mixed_matmul" / "golden" / "expected.pt")


def test_one_wrong_lane_highlights_exactly_its_half(mixed_golden: tuple[dict, dict]) -> None:
    ins, exp = mixed_golden
    text = _lane_broken_text()
    res = error_maps(text, ins, exp, filename="22_lane_bug.py", rtol=5e-2, atol=5e-2)
    assert res["error"] is None
    (m,) = res["maps"]
    assert m["tensor"] == "c" and m["view"] == [32, 64] and m["bin"] == [1, 1] and not m["passed"]
    # the store ran once per lane: two tiles, and the two halves of the split
    assert sorted((t["lane"], t["r0"], t["r1"], t["c0"], t["c1"]) for t in m["tiles"]) == [(0, 0, 16, 0, 64), (1, 16, 32, 0, 64)]
    halves = {h["lane"]: h for h in m["lanes"]}
    assert set(halves) == {0, 1} and all(h["lanes"] == 2 and h["role"] == "aiv" for h in halves.values())
    # the highlighted region (cells over tolerance) is exactly lane 1's half: every cell of it, nothing else
    c = decode_cells(m)
    bad = {(r, col) for r, col, b in zip(c["r"], c["c"], c["bad"]) if b}
    h1 = halves[1]
    assert bad == {(r, col) for r in range(h1["r0"], h1["r1"]) for col in range(h1["c0"], h1["c1"])}
    assert m["bad_elements"] == 16 * 64
    # every element names the store line that wrote it (line of the tile.store in the edited text)
    store_line = next(i for i, line in enumerate(text.splitlines(), 1) if "pl.tile.store(" in line)
    assert [s["line"] for s in m["stores"]] == [store_line] and m["stores"][0]["calls"] == 2
    assert set(c["s"]) == {0} and m["unwritten_elements"] == 0


def test_the_unbroken_pass_has_no_highlight(mixed_golden: tuple[dict, dict]) -> None:
    ins, exp = mixed_golden
    (m,) = error_maps(MIXED_22.read_text(), ins, exp, filename=str(MIXED_22), rtol=5e-2, atol=5e-2)["maps"]
    assert m["passed"] and _bad_rows(m) == set() and len(m["tiles"]) == 2 and len(m["lanes"]) == 2
    # only_failing leaves it out
    assert error_maps(MIXED_22.read_text(), ins, exp, rtol=5e-2, atol=5e-2, only_failing=True)["maps"] == []


def test_broken_example_second_chunk_is_wrong() -> None:
    ins = load_bundle(EX / "elementwise" / "golden" / "inputs.pt")
    exp = load_bundle(EX / "elementwise" / "golden" / "expected.pt")
    f = EX / "broken_elementwise" / "passes_dump" / "11_after_ConvertTensorToTileOps.py"
    (m,) = error_maps(f.read_text(), ins, exp, filename=str(f), rtol=5e-2, atol=5e-2)["maps"]
    assert [(t["r0"], t["r1"]) for t in m["tiles"]] == [(0, 32), (32, 64)] and m["lanes"] == []
    assert _bad_rows(m) and min(_bad_rows(m)) == 32  # the first chunk is right, the second is not
    assert m["stores"][0]["line"] == 14 and m["stores"][0]["op"] == "tile.store"


def test_big_tensor_is_binned_and_keeps_the_worst_element() -> None:
    exp = torch.zeros(512, 4096)
    act = exp.clone()
    act[100:132, 1000:1100] = 0.5  # over atol 0.05
    act[7, 9] = 0.01  # within tolerance
    act[130, 1050] = 3.0  # the worst element
    m = error_map("y", act, exp, rtol=0.0, atol=0.05)
    assert m["grid"] == [256, 512] and m["bin"] == [2, 8] and m["cells"]["count"] == 256 * 512
    # typed arrays in base64: 15 bytes a cell (fp32 values), not number text
    assert len(json.dumps(m)) < 256 * 512 * 15 * 4 // 3 + 10_000
    c = decode_cells(m)
    assert len(c["d"]) == 256 * 512
    bad = {(r, col) for r, col, b in zip(c["r"], c["c"], c["bad"]) if b}
    assert bad == {(r, col) for r in range(100, 132, 2) for col in range(1000, 1100, 8)}
    k = max(range(len(c["d"])), key=lambda i: c["d"][i])
    assert (c["i"][k], c["j"][k], c["d"][k], c["a"][k], c["e"][k]) == (130, 1050, 3.0, 3.0, 0.0)
    assert m["bad_elements"] == 32 * 100 and m["max_abs_diff"] == 3.0


def test_higher_ranks_merge_leading_dims_and_nan_is_bad() -> None:
    assert view2d_shape((2, 3, 5)) == (6, 5) and view2d_shape((7,)) == (1, 7) and view2d_shape(()) == (1, 1)
    exp = torch.ones(2, 3, 5)
    act = exp.clone()
    act[1, 2, 4] = float("nan")
    m = error_map("z", act, exp, rtol=0.0, atol=0.1)
    assert m["view"] == [6, 5] and m["bad_elements"] == 1
    c = decode_cells(m)
    i = c["bad"].index(1)
    assert (c["i"][i], c["j"][i], c["d"][i], c["a"][i], c["e"][i]) == (5, 4, None, None, 1.0)


def test_pass_chart_of_the_broken_example() -> None:
    report = validate_passes(EX / "broken_elementwise" / "passes_dump")
    files = [f.to_json() for f in report.files]
    files[1]["memory"] = {"checked": True, "hazards": [{"kind": "overlap", "message": "tile a and b overlap in UB"}]}
    chart = pass_chart(files)
    assert [p["label"] for p in chart["passes"]] == [
        "00_frontend",
        "04 ConvertToSSA",
        "09 OutlineIncoreScopes",
        "11 ConvertTensorToTileOps",
        "32 InitMemRef",
    ]
    assert chart["first_divergent_index"] == 3 and [p["first_divergent"] for p in chart["passes"]] == [False, False, False, True, False]
    assert chart["tensors"] == ["out"] and len(chart["points"]) == 5 and chart["atol"] == 5e-2
    assert chart["passes"][1]["memory"] == {"checked": True, "hazards": 1, "first": "tile a and b overlap in UB"}
    # the memory model reports on every file: checked from the first placement (32 InitMemRef) on
    assert [p["memory"] for i, p in enumerate(chart["passes"]) if i != 1] == [
        {"checked": False, "hazards": 0, "first": None},
        {"checked": False, "hazards": 0, "first": None},
        {"checked": False, "hazards": 0, "first": None},
        {"checked": True, "hazards": 0, "first": None},
    ]
    assert chart["counts"] == {"pass": 3, "fail": 2, "error": 0, "ran": 0}


def test_pass_chart_unchanged_and_errors(tmp_path: Path) -> None:
    a = tmp_path / "01_after_A.py"
    b = tmp_path / "02_after_B.py"
    a.write_text("x = 1\n")
    b.write_text("# a comment\nx = 1\n")
    files = [
        {"file": str(a), "status": "pass", "tensors": {"o": {"max_abs_diff": 0.0, "pass": True}}},
        {"file": str(b), "status": "error", "tensors": {}, "error": {"kind": "tpop", "message": "deadlock", "line": 2}},
    ]
    chart = pass_chart(files)
    assert [p["unchanged"] for p in chart["passes"]] == [False, True]
    assert chart["first_divergent"] == str(b) and chart["passes"][1]["error"] == {"kind": "tpop", "message": "deadlock", "line": 2}


def test_report_data_maps_only_the_failing_tensors_of_the_first_divergent_pass() -> None:
    folder = EX / "broken_elementwise" / "passes_dump"
    report = validate_passes(folder)
    ins = load_bundle(EX / "elementwise" / "golden" / "inputs.pt")
    exp = load_bundle(EX / "elementwise" / "golden" / "expected.pt")
    data = report_data(report, ins, exp)
    assert [m["tensor"] for m in data["maps"]] == ["out"]
    assert data["maps"][0]["file"].endswith("11_after_ConvertTensorToTileOps.py")
    assert data["chart"]["first_divergent"] == data["maps"][0]["file"]


WRITES_DUMP = """# pypto.program: Writes
import pypto.language as pl

@pl.program
class Writes:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def writes(self, x__ssa_v0: pl.Tensor[[4, 8], pl.FP32], idx__ssa_v0: pl.Tensor[[3, 1], pl.INT32], out__ssa_v0: pl.Out[pl.Tensor[[8, 8], pl.FP32]]) -> pl.Tensor[[8, 8], pl.FP32]:
        rows__ssa_v0: pl.Tensor[[3, 8], pl.FP32] = pl.tensor.slice(x__ssa_v0, [3, 8], [0, 0])
        out__ssa_v1: pl.Tensor[[8, 8], pl.FP32] = pl.tensor.scatter_update(out__ssa_v0, idx__ssa_v0, rows__ssa_v0, dim=-2)
        out__ssa_v2: pl.Tensor[[8, 8], pl.FP32] = pl.tensor.write(out__ssa_v1, [7, 5], 42.0)
        return out__ssa_v2
"""


def test_tensor_write_and_scatter_update_are_recorded_writers() -> None:
    """The store overlay knows element writes and row scatters, not only tile.store/assemble."""
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    idx = torch.tensor([[1], [2], [6]], dtype=torch.int32)
    ins = {"x": x, "idx": idx, "out": torch.zeros(8, 8)}
    exp = torch.zeros(8, 8)
    exp[[1, 2, 6]] = x[:3]
    exp[7, 5] = 41.0  # the write of 42.0 is the one wrong element
    (m,) = error_maps(WRITES_DUMP, ins, {"out": exp}, rtol=0.0, atol=0.5)["maps"]
    lines = WRITES_DUMP.splitlines()
    scatter_line = next(i for i, line in enumerate(lines, 1) if "pl.tensor.scatter_update(" in line)
    write_line = next(i for i, line in enumerate(lines, 1) if "pl.tensor.write(" in line)
    assert [(s["op"], s["line"], s["calls"]) for s in m["stores"]] == [
        ("tensor.scatter_update", scatter_line, 1),
        ("tensor.write", write_line, 1),
    ]
    # one box per run of consecutive rows (1-2 and 6), one element for the write
    assert sorted((t["store"], t["r0"], t["r1"], t["c0"], t["c1"]) for t in m["tiles"]) == [
        (0, 1, 3, 0, 8),
        (0, 6, 7, 0, 8),
        (1, 7, 8, 5, 6),
    ]
    c = decode_cells(m)
    owner = {(i, j): s for i, j, s in zip(c["i"], c["j"], c["s"], strict=True)}
    assert {k for k, s in owner.items() if s == 0} == {(r, col) for r in (1, 2, 6) for col in range(8)}
    assert {k for k, s in owner.items() if s == 1} == {(7, 5)}
    assert m["unwritten_elements"] == 64 - 25 and m["bad_elements"] == 1
    k = c["bad"].index(1)
    assert (c["i"][k], c["j"][k], c["a"][k], c["e"][k], c["s"][k]) == (7, 5, 42.0, 41.0, 1)


def test_infinities_equal_are_zero_and_against_a_finite_value_are_over() -> None:
    e = torch.tensor([[1.0, float("inf"), 2.0, float("-inf")]])
    a = torch.tensor([[1.0, float("inf"), float("nan"), 0.0]])
    m = error_map("t", a, e, rtol=0.0, atol=0.1)
    c = decode_cells(m)
    # equal infinities: |Δ| 0, within; NaN: over; 0 against -inf: an infinite |Δ|, over (rtol * inf is NaN)
    assert c["d"][:3] == [0.0, 0.0, None] and c["d"][3] is not None and c["d"][3] > 1e300
    assert c["bad"] == [0, 0, 1, 1] and m["bad_elements"] == 2


BLOCK_SCATTER_DUMP = """# pypto.program: BlockScatter
import pypto.language as pl

@pl.program
class BlockScatter:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def put(self, cache__ssa_v0: pl.Tensor[[2, 4, 1, 8], pl.FP32], idx__ssa_v0: pl.Tensor[[1, 3], pl.INT32], new__ssa_v0: pl.Tensor[[1, 3, 1, 8], pl.FP32]) -> pl.Tensor[[2, 4, 1, 8], pl.FP32]:
        cache__ssa_v1: pl.Tensor[[2, 4, 1, 8], pl.FP32] = pl.tensor.scatter_update(cache__ssa_v0, idx__ssa_v0, new__ssa_v0, dim=-2)
        return cache__ssa_v1
"""


def test_a_4d_scatter_update_writes_and_maps_block_rows() -> None:
    """A paged cache [blocks, block_size, 1, d]: index k names row k of the blocks * block_size
    rows (PyPTO's linear layout), and the store overlay boxes those rows, not dim -2's one slot."""
    new = torch.arange(24, dtype=torch.float32).reshape(1, 3, 1, 8) + 1
    ins = {"cache": torch.zeros(2, 4, 1, 8), "idx": torch.tensor([[5, 6, 1]], dtype=torch.int32), "new": new}
    exp = torch.zeros(8, 8)
    exp[[5, 6, 1]] = new.reshape(3, 8)
    exp[6, 3] += 1.0  # one wrong element, in row 6
    (m,) = error_maps(BLOCK_SCATTER_DUMP, ins, {"cache": exp.reshape(2, 4, 1, 8)}, rtol=0.0, atol=0.5)["maps"]
    assert (m["bad_elements"], m["unwritten_elements"], m["max_abs_diff"]) == (1, 40, 1.0)
    assert [(s["op"], s["calls"]) for s in m["stores"]] == [("tensor.scatter_update", 1)]
    assert sorted((t["r0"], t["r1"], t["c0"], t["c1"]) for t in m["tiles"]) == [(1, 2, 0, 8), (5, 7, 0, 8)]
