"""The memory map's data (pypto_lsp.ir.memmap): strips, bars, and the red overlaps, on the
hand-made programs of test_memory (each checked against what the sanitizer finds when the
program runs), on examples/broken_memory, and on the shared fixtures when present.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pypto_lsp.ir.memmap import memory_map, memory_map_text
from pypto_lsp.ir.parser import parse_text

from .test_memory import (
    AIV,
    EXAMPLE,
    T,
    aic_program,
    c2v_program,
    hazards,
    kernel,
    line,
    loop_program,
    orch,
    program,
    run,
    tile,
    v2c_program,
    vec_program,
)

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"


def mm(text: str, findings: Any = ()) -> dict[str, Any]:
    d = memory_map_text(text, findings, filename="m.py")
    json.dumps(d)  # JSON-able
    return d


def strip(d: dict[str, Any], space: str, function: str | None = None) -> dict[str, Any]:
    (s,) = [s for s in d["strips"] if s["space"] == space and (function is None or s["function"] == function)]
    return s


def reds(d: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(s["space"], o["name"], o["other_name"]) for s in d["strips"] for o in s["overlaps"]]


def test_vec_bars_are_live_ranges_over_bytes() -> None:
    text = vec_program(1024)
    d = mm(text)
    assert d["addressed"] and d["placed"] and d["counts"] == {"strips": 1, "bars": 3, "overlaps": 0, "findings": 0}
    st = strip(d, "Vec")
    assert (st["function"], st["core"], st["capacity"]) == ("k", "AIV", 240 * 1024)
    bars = {b["name"]: b for b in st["bars"]}
    lx, ly, lz, lo = (line(text, s) for s in ("x: ", "y: ", "z: ", "o1: "))
    assert [(bars[n]["line"], bars[n]["end"], bars[n]["start"], bars[n]["stop"]) for n in "xyz"] == [
        (lx, lz, 0, 1024),
        (ly, lz, 1024, 2048),
        (lz, lo, 4096, 5120),
    ]
    assert all(b["kind"] == "tile" and b["nbytes"] == 1024 and b["dtype"] == "FP32" for b in bars.values())


@pytest.mark.parametrize(("y_off", "rng"), [(0, (0, 1024)), (512, (512, 1024))], ids=["exact", "partial"])
def test_vec_overlap_is_red_and_matches_the_sanitizer(y_off: int, rng: tuple[int, int]) -> None:
    text = vec_program(y_off)
    d = mm(text)
    (o,) = strip(d, "Vec")["overlaps"]
    assert (o["kind"], o["name"], o["other_name"], o["start"], o["stop"]) == ("overwrite", "x", "y", *rng)
    assert (o["line"], o["other_line"], o["x0"], o["x1"]) == (line(text, "x: "), line(text, "y: "), line(text, "y: "), line(text, "z: "))
    fr = run(text)
    assert [(h["name"], h["other_name"]) for h in hazards(fr)] == [("x", "y")]
    # with the run's findings: they sit in the strip of their line and space
    d2 = mm(text, fr.memory["hazards"])
    assert [(f["kind"], f["name"]) for f in strip(d2, "Vec")["findings"]] == [("overwrite", "x")]


def test_an_overlap_nobody_reads_again_is_not_red() -> None:
    assert reds(mm(vec_program(0, reread=False))) == []


@pytest.mark.parametrize(("space", "delta"), [("Mat", 0), ("Mat", 512), ("Left", 0), ("Right", 512), ("Acc", 0)])
def test_aic_overlap_red_in_its_space_only(space: str, delta: int) -> None:
    d = mm(aic_program(space, delta))
    assert {s["space"] for s in d["strips"]} == {"Mat", "Left", "Right", "Acc"}
    assert all(s["core"] == "AIC" for s in d["strips"])
    got = reds(d)
    assert len(got) == 1 and got[0][0] == space
    fr = run(aic_program(space, delta))
    assert {(h["space"], h["name"], h["other_name"]) for h in hazards(fr)} == set(got)


def test_aic_apart_has_no_red() -> None:
    d = mm(aic_program("Mat", None))  # type: ignore[arg-type]
    assert reds(d) == [] and d["counts"]["bars"] == 9


def test_loop_carried_value_red_through_its_iter_arg() -> None:
    assert reds(mm(loop_program(3072))) == []
    text = loop_program(1024)
    (o,) = strip(mm(text), "Vec")["overlaps"]
    # the carried value is cur (yielded, read as prev on the next trip); t lands on it before the read
    assert (o["name"], o["via"], o["other_name"], o["start"], o["stop"]) == ("cur", "prev", "t", 1024, 2048)
    assert [(h["name"], h["other_name"]) for h in hazards(run(text))] == [("prev", "t")]
    bars = {b["name"]: b for b in strip(mm(text), "Vec")["bars"]}
    # x0 lives on as prev until its last read in the loop; cur until the store after the loop
    assert bars["x0"]["end"] == line(text, "s: ") and bars["cur"]["end"] == line(text, "o1: ")


def test_in_place_and_reshape_alias_are_not_red() -> None:
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.muls(x, 2.0)",
        f"r: {tile('Vec', 'mem_vec_0', 0, shape='[1, 256]')} = pl.tile.reshape(y, [1, 256])",
        f"u: {tile('Vec', 'mem_vec_1', 1024, shape='[1, 256]')} = pl.tile.adds(r, 1.0)",
        f"w: {tile('Vec', 'mem_vec_1', 1024)} = pl.tile.reshape(u, [16, 16])",
        f"z: {tile('Vec', 'mem_vec_2', 2048)} = pl.tile.add(w, y)",
        f"o1: {T} = pl.tile.store(z, [0, 0], o)",
        "return o1",
    ]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)}), orch())
    d = mm(text)
    assert d["counts"]["bars"] == 6 and reds(d) == []
    # ... but reading x after y took its bytes is
    body[2:6] = [f"z: {tile('Vec', 'mem_vec_2', 2048)} = pl.tile.add(x, y)"]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)}), orch())
    assert reds(mm(text)) == [("Vec", "x", "y")]


@pytest.mark.parametrize(("y_base", "bad"), [("mem_vec_1", False), ("mem_vec_0", True)], ids=["own-base", "shared-base"])
def test_memory_reuse_level_same_base_is_red(y_base: str, bad: bool) -> None:
    body = [
        f"x: {tile('Vec', 'mem_vec_0', 0)} = pl.tile.load(a, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"y: {tile('Vec', y_base, 0)} = pl.tile.load(b, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)",
        f"z: {tile('Vec', 'mem_vec_2', 0)} = pl.tile.add(x, y)",
        f"o1: {T} = pl.tile.store(z, [0, 0], o)",
        "return o1",
    ]
    text = program(kernel(AIV, "k", body, {"mem_vec_0": ("Vec", 1024), "mem_vec_1": ("Vec", 1024), "mem_vec_2": ("Vec", 1024)}), orch())
    d = mm(text)
    assert not d["addressed"]  # virtual addresses: one region per base
    assert reds(d) == ([("Vec", "x", "y")] if bad else [])
    assert {b["name"]: b["base"] for b in strip(d, "Vec")["bars"]} == {"x": "mem_vec_0", "y": y_base, "z": "mem_vec_2"}


def test_pipe_rings_and_a_tile_in_a_slot_on_each_side() -> None:
    ok = mm(c2v_program(2048))
    vec = strip(ok, "Vec")
    kinds = sorted(b["kind"] for b in vec["bars"])
    assert "pipe" in kinds and "pop" in kinds and reds(ok) == []
    text = c2v_program(512)
    d = mm(text)
    (o,) = [o for s in d["strips"] for o in s["overlaps"]]
    assert (o["kind"], o["name"], o["line"], o["other_line"]) == ("pipe-slot", "prev", line(text, "prev: "), line(text, "reserve_buffer"))
    assert [f["kind"] for f in d["findings"]] == ["pipe-slot"]  # the static finding, without a run
    d = mm(v2c_program(0))
    assert [(s["space"], o["kind"], o["name"]) for s in d["strips"] for o in s["overlaps"]] == [("Mat", "pipe-slot", "bm")]


def test_before_init_memref_there_is_nothing_to_draw() -> None:
    d = mm((EXAMPLE / "passes_dump" / "11_after_ConvertTensorToTileOps.py").read_text(encoding="utf-8"))
    assert not d["placed"] and d["strips"] == [] and d["counts"]["bars"] == 0


def test_broken_memory_example_the_red_is_the_broken_pair() -> None:
    text = (EXAMPLE / "passes_dump" / "35_after_AllocateMemoryAddr.py").read_text(encoding="utf-8")
    d = mm(text)
    assert d["counts"] == {"strips": 1, "bars": 5, "overlaps": 1, "findings": 0}
    st = strip(d, "Vec", "exp_add_mul_incore_0")
    bars = {b["name"]: (b["start"], b["stop"]) for b in st["bars"]}
    assert bars == {
        "x_chunk__tile": (0, 16384),
        "y_chunk__tile": (32768, 49152),
        "t__tile": (32768, 49152),
        "t__tile_1": (32768, 49152),
        "prod__tile": (0, 16384),
    }
    (o,) = st["overlaps"]
    ly, lt, lt1, lp = (line(text, f" {s}: ") for s in ("y_chunk__tile", "t__tile", "t__tile_1", "prod__tile"))
    assert (o["name"], o["line"], o["other_name"], o["other_line"]) == ("y_chunk__tile", ly, "t__tile", lt)
    assert [w["name"] for w in o["writers"]] == ["t__tile", "t__tile_1"] and (o["start"], o["stop"]) == (32768, 49152)
    assert (o["x0"], o["x1"]) == (lt, lp)
    # the sanitizer's finding from a real run names the same victim, read at the end of the red
    fr = run_example(text)
    (h,) = fr.memory["hazards"]
    d2 = mm(text, fr.memory["hazards"])
    (f,) = strip(d2, "Vec")["findings"]
    assert (f["name"], f["line"], f["other_name"]) == ("y_chunk__tile", lp, "t__tile_1") and f["line"] == o["x1"]
    # its message names the first write on those bytes too: the overlap's first writer
    assert f"the first write on them was 't__tile' at line {lt} (MemRef(mem_vec_5, 32768, 16384))" in f["message"], f["message"]
    # the pass before it: the same five values, each in its own buffer, nothing red
    d0 = mm((EXAMPLE / "passes_dump" / "32_after_InitMemRef.py").read_text(encoding="utf-8"))
    assert d0["counts"]["bars"] == 5 and d0["counts"]["overlaps"] == 0 and not d0["addressed"]


def run_example(text: str) -> Any:
    from pypto_lsp.validate.engine import run_text
    from pypto_lsp.validate.golden import load_bundle

    gold = EXAMPLE.parent / "elementwise" / "golden"
    return run_text(text, load_bundle(gold / "inputs.pt"), load_bundle(gold / "expected.pt"), filename="35.py", memory=True)


def test_a_text_that_does_not_parse_has_no_strips() -> None:
    d = memory_map_text("def (", filename="bad.py")
    assert d["strips"] == [] and d["error"]


def test_memory_map_of_a_parsed_program_equals_the_text_one() -> None:
    text = vec_program(0)
    r = parse_text(text, "m.py")
    assert r.program is not None
    assert memory_map(r.program, file="m.py") == mm(text)


# ---------------------------------------------------------------------- the shared fixtures

_MEMORY_CASES = {
    "c2v_leftright_c_prev_in_pipe_slot": "pipe-slot",
    "qwen3_910b_up_acc_over_gate_acc": "overwrite",
    "softmax_row_sum_over_exp": "overwrite",
}


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared fixtures not present")
@pytest.mark.parametrize("case", sorted(_MEMORY_CASES))
def test_fixture_memory_cases_red_first_on_the_edited_file_and_line(case: str) -> None:
    verdicts = json.loads((FIXTURES / "verdicts.json").read_text())
    entry = verdicts[f"broken/{case}"]
    edits = {e["file"]: e["lines"] for e in entry["edit"]["edited_files"]}
    first_red = None
    for f in sorted((FIXTURES / "broken" / case / "passes_dump").glob("*.py")):
        d = memory_map_text(f.read_text(encoding="utf-8-sig"), filename=str(f))
        os_ = [o for s in d["strips"] for o in s["overlaps"]]
        if os_ and first_red is None:
            first_red = f.name
            assert {o["kind"] for o in os_} == {_MEMORY_CASES[case]}
            assert any(o["line"] in edits[f.name] or o["other_line"] in edits[f.name] for o in os_)
    assert first_red == entry["edit"]["first_file"]


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared fixtures not present")
@pytest.mark.parametrize("case", ["example_flash_attention", "example_mixed_matmul_bias_updown", "ops/cf_if_else", "qwen3_scope3_910b"])
def test_no_red_on_real_compiler_dumps(case: str) -> None:
    # if-branches, loop-carried accumulators through phis, view ops on iter_args: none is a hazard
    for f in sorted((FIXTURES / case / "passes_dump").glob("*.py")):
        d = memory_map_text(f.read_text(encoding="utf-8-sig"), filename=str(f))
        assert d["counts"]["overlaps"] == 0, (f.name, [o for s in d["strips"] for o in s["overlaps"]])
