"""The device's sanitizer on hand-written dumps: races between tasks (the runtime's tags), inside a
task (SPMD blocks), uninitialised tensors and tiles, windows out of bounds, pipe protocol.

Expected numbers are plain torch; every finding is checked for its kind and line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pypto_lsp.ir.check import check_program
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.ir.tasks import task_sites
from pypto_lsp.validate.engine import run_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

T = "pl.Tensor[[16, 16], pl.FP32]"
TILE = "pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec]"

HEAD = """# pypto.program: san
import pypto.language as pl

@pl.program
class san:
"""

# lines 6-11: k_scale(x, out): out = 2 * x; lines 12-17: k_add1(x, out): out = x + 1
KERNELS = f"""    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def k_scale(x: {T}, out: pl.Out[{T}]) -> {T}:
        t: {TILE} = pl.tile.load(x, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)
        u: {TILE} = pl.tile.muls(t, 2.0)
        s: {T} = pl.tile.store(u, [0, 0], out)
        return out
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def k_add1(x: {T}, out: pl.Out[{T}]) -> {T}:
        t: {TILE} = pl.tile.load(x, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)
        u: {TILE} = pl.tile.adds(t, 1.0)
        s: {T} = pl.tile.store(u, [0, 0], out)
        return out
"""


def orch(body: str) -> str:
    return (
        HEAD
        + KERNELS
        + f"""    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: {T}, c: pl.Out[{T}]) -> {T}:
"""
        + body
    )


# line 20: the buffer; 21: the producer; 22: the consumer (reads mid)
PIPELINE = """        mid: {T} = pl.tensor.create([16, 16], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        mid1: {T} = self.k_scale(a, mid, attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing]}})
        c1: {T} = self.k_add1(mid1, c, attrs={{"arg_directions": [pl.adir.{tag}, pl.adir.output_existing]}})
        return c1
"""


def run(text: str, a: torch.Tensor, **kw):
    expected = {"c": 2 * a + 1}
    return run_text(text, {"a": a.clone(), "c": torch.zeros(16, 16)}, expected, filename="<san>", **kw)


def hazards(r, kind: str | None = None) -> list[dict]:
    return [h for h in (r.memory or {}).get("hazards", []) if kind is None or h["kind"] == kind]


A = torch.arange(256, dtype=torch.float32).reshape(16, 16) / 16


def test_task_sites_read_the_directions():
    text = orch(PIPELINE.format(T=T, tag="no_dep"))
    sites = task_sites(parse_text(text).program)
    assert [(s.line, s.callee, s.directions, s.returns) for s in sites] == [
        (21, "k_scale", ("input", "output_existing"), (1,)),
        (22, "k_add1", ("no_dep", "output_existing"), (1,)),
    ]


def test_input_orders_the_reader_after_its_writer():
    r = run(orch(PIPELINE.format(T=T, tag="input")), A)
    assert r.status == "pass" and hazards(r) == []
    assert r.tasks is not None and r.tasks["edges"] == [{"from": 0, "to": 1}] and r.tasks["races"] == []


def test_no_dep_reader_is_a_raw_race_on_its_line_with_the_other_order_run():
    r = run(orch(PIPELINE.format(T=T, tag="no_dep")), A)
    assert r.status == "fail"  # the numbers agree in program order: the finding fails the file
    assert r.tensors["c"].passed
    (h,) = hazards(r, "race")
    assert (h["line"], h["other_line"], h["race"], h["tensor"]) == (22, 21, "RAW", "mid")
    assert "k_add1" in h["message"] and "k_scale" in h["message"] and "pl.adir.input" in h["message"]
    # run the other way round, k_add1 reads the buffer before k_scale writes it: c = 0 + 1
    want = float((2 * A + 1 - 1).abs().max())
    assert h["other_order"]["max_abs_diff"]["c"] == pytest.approx(want)
    assert f"max |Δ| {want:.4g}" in h["message"]
    assert r.tasks["races"] == [{"from": 0, "to": 1, "kind": "RAW"}] and r.tasks["edges"] == []


def test_sanitize_off_sees_nothing():
    r = run(orch(PIPELINE.format(T=T, tag="no_dep")), A, sanitize=False)
    assert r.status == "pass" and hazards(r) == [] and r.tasks is None


def test_a_write_after_a_read_is_never_ordered_by_the_runtime():
    # k_add1 reads a (input), then k_scale writes a (output_existing): no tag orders a write after a read
    body = f"""        ones: {T} = pl.tensor.create([16, 16], dtype=pl.FP32, layout=pl.TensorLayout.ND, init_value=1.0)
        c1: {T} = self.k_add1(a, c, attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing]}})
        a1: {T} = self.k_scale(ones, a, attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing]}})
        return c1
"""
    text = orch(body)
    r = run_text(text, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": A + 1}, filename="<san>")
    (h,) = hazards(r, "race")
    assert (h["line"], h["other_line"], h["race"]) == (22, 21, "WAR")
    # the other order: k_scale first, k_add1 reads 2 instead of a
    assert h["other_order"]["max_abs_diff"]["c"] == pytest.approx(float((A + 1 - 3).abs().max()))


def test_inout_chain_orders_writers():
    body = f"""        c1: {T} = self.k_scale(a, c, attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing]}})
        c2: {T} = self.k_add1(c1, c1, attrs={{"arg_directions": [pl.adir.input, pl.adir.inout]}})
        return c2
"""
    r = run(orch(body), A)
    assert r.status == "pass" and hazards(r) == []


def test_uninitialised_tensor_read_is_found_at_its_creation():
    # nothing writes mid before k_add1 loads it (the producer is gone)
    body = f"""        mid: {T} = pl.tensor.create([16, 16], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        c1: {T} = self.k_add1(mid, c, attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing]}})
        return c1
"""
    r = run(orch(body), A)
    (h,) = hazards(r, "uninitialised")
    assert (h["line"], h["other_line"]) == (20, 14)  # created at 20, read by the tile.load at 14
    assert r.status == "fail"
    # with init_value it is written
    body2 = body.replace("layout=pl.TensorLayout.ND)", "layout=pl.TensorLayout.ND, init_value=0.0)", 1)
    assert hazards(run(orch(body2), A), "uninitialised") == []


# the paged-attention accumulator: created without init_value, an "init" kernel that writes nothing, an
# update kernel that loads it and, on the first block, stores the new values without using what it loaded
PAGED = f"""    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def k_init(acc: pl.Out[{T}]) -> {T}:
        return acc
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def k_update(x: {T}, acc: pl.InOut[{T}]) -> {T}:
        old: {TILE} = pl.tile.load(acc, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)
        t: {TILE} = pl.tile.load(x, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)
        s: {T} = pl.tile.store(t, [0, 0], acc)
        return acc
"""
# lines 18-26: PAGED (the loads at 23, 24); 27-28: main; 29: acc; 30: init; 31: update; 32: the consumer (c = 2 * acc)
PAGED_MAIN = f"""    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: {T}, c: pl.Out[{T}]) -> {T}:
        acc: {T} = pl.tensor.create([16, 16], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        acc1: {T} = self.k_init(acc, attrs={{"arg_directions": [pl.adir.output_existing]}})
        acc2: {T} = self.k_update(a, acc1, attrs={{"arg_directions": [pl.adir.input, pl.adir.inout]}})
        c1: {T} = self.k_scale(acc2, c, attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing]}})
        return c1
"""


def test_an_uninitialised_read_whose_value_is_never_used_is_no_finding():
    text = HEAD + KERNELS + PAGED + PAGED_MAIN
    r = run_text(text, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": 2 * A}, filename="<san>")
    assert r.error is None and r.status == "pass", r.error
    assert hazards(r) == []


def test_strict_lists_the_read_that_goes_nowhere_as_information_and_still_passes():
    text = HEAD + KERNELS + PAGED + PAGED_MAIN
    r = run_text(text, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": 2 * A}, filename="<san>", sanitize="strict")
    assert r.error is None and r.status == "pass", r.error  # information fails nothing
    (h,) = hazards(r)
    assert (h["kind"], h["line"], h["name"], h["other_line"]) == ("undefined-read", 29, "acc", 23)
    assert "256 of its elements" in h["message"] and "strict" in h["message"]
    # where the value does reach the output, strict adds nothing to the one uninitialised finding
    used = PAGED.replace(
        "        s: " + T + " = pl.tile.store(t, [0, 0], acc)\n",
        "        u: " + TILE + " = pl.tile.add(old, t)\n        s: " + T + " = pl.tile.store(u, [0, 0], acc)\n",
    )
    r2 = run_text(
        HEAD + KERNELS + used + PAGED_MAIN, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": 2 * A}, filename="<san>", sanitize="strict"
    )
    assert [h["kind"] for h in hazards(r2)] == ["uninitialised"]
    # the editor shows it as information, with the read as related information
    from pypto_lsp.server.memory import memory_diagnostics

    (d,) = memory_diagnostics(r, text.splitlines(), "file:///x.py", "utf-16", include_static=True)
    assert d.severity == 3 and d.code == "sanitizer-undefined-read"
    assert d.related_information and d.related_information[0].location.range.start.line + 1 == 23


def test_an_uninitialised_value_that_reaches_the_output_is_found_at_its_creation_with_its_path():
    # the update uses what it loaded (line 25: old + t; the loads move to 23, 24), so acc's undefined elements reach c
    used = PAGED.replace(
        "        s: " + T + " = pl.tile.store(t, [0, 0], acc)\n",
        "        u: " + TILE + " = pl.tile.add(old, t)\n        s: " + T + " = pl.tile.store(u, [0, 0], acc)\n",
    )
    text = HEAD + KERNELS + used + PAGED_MAIN
    r = run_text(text, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": 2 * A}, filename="<san>")
    (h,) = hazards(r, "uninitialised")
    assert (h["line"], h["name"], h["other_line"]) == (30, "acc", 23)  # created at 30, first read by the load at 23
    assert 23 in h["related"] and 25 in h["related"]  # the load, the add: the path to the output
    assert "reaches the output 'c'" in h["message"] and "[0:16, 0:16]" in h["message"]
    assert r.status == "fail"
    # the path travels: SARIF relatedLocations and the editor's related information, first read first
    from pypto_lsp.formats.ci_formats import sarif_log
    from pypto_lsp.server.memory import memory_diagnostics
    from pypto_lsp.validate.report import Report, related_lines

    assert related_lines(h)[0] == 23 and 25 in related_lines(h)
    r.file = "/tmp/x/29_after_Paged.py"
    (res,) = [x for x in sarif_log([("/tmp/x", Report([r]), {})], "/tmp/x")["runs"][0]["results"] if "uninitialised" in x["ruleId"]]
    assert [loc["physicalLocation"]["region"]["startLine"] for loc in res["relatedLocations"]] == related_lines(h)
    (d,) = memory_diagnostics(r, text.splitlines(), "file:///x.py", "utf-16", include_static=True)
    assert d.related_information is not None
    assert [ri.location.range.start.line + 1 for ri in d.related_information] == related_lines(h)


def test_tensor_level_ops_carry_undefined_values_to_the_returned_value():
    # example_flash_attention's 00_frontend: mi = tensor.create (no init_value); tensor.maximum(mi, x) returned
    body = f"""        mi: pl.Tensor[[16, 1], pl.FP32] = pl.tensor.create([16, 1], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        rm: pl.Tensor[[16, 1], pl.FP32] = pl.tensor.row_max(a)
        m: pl.Tensor[[16, 1], pl.FP32] = pl.tensor.maximum(mi, rm)
        d: {T} = pl.tensor.sub(a, m)
        e: {T} = pl.tensor.exp(d)
        return e
"""
    text = orch(body)
    r = run_text(text, {"a": A.clone(), "c": torch.zeros(16, 16)}, {}, filename="<san>")
    (h,) = hazards(r, "uninitialised")
    assert (h["line"], h["name"], h["other_line"]) == (20, "mi", 22)
    assert h["related"][:3] == [22, 23, 24] and "returned value" in h["message"]
    # what is read but goes nowhere is no finding
    quiet = body.replace("        d: " + T + " = pl.tensor.sub(a, m)\n", "        d: " + T + " = pl.tensor.sub(a, rm)\n")
    assert hazards(run_text(orch(quiet), {"a": A.clone(), "c": torch.zeros(16, 16)}, {}, filename="<san>")) == []


def test_uninitialised_tile_is_found_from_the_ir():
    # mirrors the lost zero fill of broken/qwen3_910b_sq_sum_uninitialised: an accumulator from tile.create
    kern = KERNELS.replace(
        "        u: " + TILE + " = pl.tile.adds(t, 1.0)\n",
        "        z: " + TILE + " = pl.tile.create([16, 16], dtype=pl.FP32, target_memory=pl.Mem.Vec)\n"
        "        u: " + TILE + " = pl.tile.add(z, t)\n",
    )
    text = (HEAD + kern + orch(PIPELINE.format(T=T, tag="input")).split(KERNELS, 1)[1]).replace("2.0", "2.0", 1)
    r = run_text(text, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": 2 * A}, filename="<san>")
    (h,) = hazards(r, "uninitialised")
    assert (h["line"], h["other_line"], h["name"]) == (15, 16, "z")
    assert r.status == "fail" and r.tensors["c"].passed
    # the fill restored: nothing
    fixed = text.replace(
        "pl.tile.create([16, 16], dtype=pl.FP32, target_memory=pl.Mem.Vec)", "pl.tile.full([16, 16], dtype=pl.FP32, value=0.0)"
    )
    assert hazards(run_text(fixed, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": 2 * A}, filename="<san>")) == []


def test_scratch_operands_and_empty_valid_regions_are_no_reads():
    kern = KERNELS.replace(
        "        u: " + TILE + " = pl.tile.adds(t, 1.0)\n",
        "        tmp: " + TILE + " = pl.tile.create([16, 16], dtype=pl.FP32, target_memory=pl.Mem.Vec)\n"
        "        rs: pl.Tile[[16, 1], pl.FP32, pl.Mem.Vec] = pl.tile.row_sum(t, tmp)\n"
        "        idle: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[0, 0])] = "
        "pl.tile.create([16, 16], dtype=pl.FP32, target_memory=pl.Mem.Vec)\n"
        "        w: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[0, 0])] = pl.tile.adds(idle, 1.0)\n"
        "        u: " + TILE + " = pl.tile.adds(t, 1.0)\n",
    )
    from pypto_lsp.ir.initcheck import uninitialised_tiles

    text = HEAD + kern + orch(PIPELINE.format(T=T, tag="input")).split(KERNELS, 1)[1]
    assert uninitialised_tiles(parse_text(text).program) == []


OOB_HEAD = (
    HEAD
    + """    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def k(x: pl.Tensor[[20, 16], pl.FP32], out: pl.Out[pl.Tensor[[20, 16], pl.FP32]]) -> pl.Tensor[[20, 16], pl.FP32]:
"""
)
OOB_TAIL = """        return out
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: pl.Tensor[[20, 16], pl.FP32], c: pl.Out[pl.Tensor[[20, 16], pl.FP32]]) -> pl.Tensor[[20, 16], pl.FP32]:
        c1: pl.Tensor[[20, 16], pl.FP32] = self.k(a, c, attrs={"arg_directions": [pl.adir.input, pl.adir.output_existing]})
        return c1
"""


def _oob(body: str):
    a = torch.arange(320, dtype=torch.float32).reshape(20, 16)
    text = OOB_HEAD + body + OOB_TAIL
    return run_text(text, {"a": a, "c": torch.zeros(20, 16)}, {"c": a + 1}, filename="<oob>")


def test_a_load_whose_valid_region_stops_at_the_end_is_in_bounds():
    body = """        t0: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)
        u0: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.adds(t0, 1.0)
        s0: pl.Tensor[[20, 16], pl.FP32] = pl.tile.store(u0, [0, 0], out)
        t1: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[4, 16])] = pl.tile.load(x, [16, 0], [16, 16], [4, 16], target_memory=pl.Mem.Vec)
        u1: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[4, 16])] = pl.tile.adds(t1, 1.0)
        s1: pl.Tensor[[20, 16], pl.FP32] = pl.tile.store(u1, [16, 0], out)
"""
    r = _oob(body)
    assert r.status == "pass", r.memory
    assert hazards(r) == []


def test_a_store_past_the_end_is_a_finding_on_its_line():
    body = """        t0: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)
        u0: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.adds(t0, 1.0)
        s0: pl.Tensor[[20, 16], pl.FP32] = pl.tile.store(u0, [0, 0], out)
        t1: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[4, 16])] = pl.tile.load(x, [16, 0], [16, 16], [4, 16], target_memory=pl.Mem.Vec)
        u1: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.adds(t1, 1.0)
        s1: pl.Tensor[[20, 16], pl.FP32] = pl.tile.store(u1, [16, 0], out)
"""
    r = _oob(body)
    (h,) = hazards(r, "out-of-bounds")
    assert h["line"] == 13 and "tile.store" in h["message"] and "[16, 32)" in h["message"]
    assert r.status == "fail"


def test_a_load_past_the_end_is_a_finding_on_its_line():
    body = """        t0: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [8, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)
        u0: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.adds(t0, 1.0)
        s0: pl.Tensor[[20, 16], pl.FP32] = pl.tile.store(u0, [0, 0], out)
"""
    (h,) = hazards(_oob(body), "out-of-bounds")
    assert h["line"] == 8 and "tile.load" in h["message"]


SPMD = f"""    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: {T}, c: pl.Out[{T}]) -> {T}:
        c1: {T} = self.k_add1(a, c, attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing], "core_num": 2}})
        return c1
"""


def test_spmd_blocks_writing_the_same_elements_race_inside_their_task():
    r = run_text(HEAD + KERNELS + SPMD, {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": A + 1}, filename="<spmd>")
    (h,) = hazards(r, "race")
    assert h["line"] == 20 and "SPMD blocks 0 and 1" in h["message"]


# -- pipe protocol: copies of examples/mixed_matmul file 22


def _mixed() -> tuple[str, dict, dict]:
    from pypto_lsp.validate.golden import load_bundle

    d = EXAMPLES / "mixed_matmul"
    text = (d / "passes_dump" / "22_after_ExpandMixedKernel.py").read_text()
    return text, load_bundle(d / "golden" / "inputs.pt"), load_bundle(d / "golden" / "expected.pt")


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        ("slot_num=2", "slot_num=0", "slot_num=0"),
        ("slot_num=2", "slot_num=-1", "slot_num=-1"),
        ("slot_num=2", f"slot_num={2**63 - 1}", "beyond any ring"),
        ("slot_size=8192", "slot_size=0", "slot_size=0"),
        ("slot_num=2", "slot_num=4", "do not fit in the reserved buffer"),
    ],
)
def test_a_ring_the_npu_cannot_set_up_is_an_error_on_its_line(old, new, what):
    text, inputs, expected = _mixed()
    bad = text.replace(old, new)
    diags = [d for d in check_program(parse_text(bad).program) if d.code == "pipe-protocol"]
    lines = {d.span.line for d in diags}
    assert lines and lines <= {10, 22} and all(what in d.message for d in diags), [(d.span.line, d.message) for d in diags]
    r = run_text(bad, inputs, expected, filename="<pipe>")
    assert r.status == "error" and r.error.kind == "static:pipe-protocol" and r.error.line in (10, 22)


def test_pushes_beyond_the_ring_with_one_pop_deadlock_at_the_first_push_without_a_slot():
    text, inputs, expected = _mixed()
    assert run_text(text, inputs, expected, filename="<pipe>").status == "pass"
    lines = text.split("\n")
    push = next(i for i, ln in enumerate(lines) if "tpush_to_aiv" in ln)
    five = "\n".join(lines[:push] + [lines[push]] * 5 + lines[push + 1 :])
    assert check_program(parse_text(five).program) == []  # nothing static to see
    r = run_text(five, inputs, expected, filename="<pipe>")
    # two slots, one pop (and its tfree): pushes 1-3 find a slot, the 4th waits forever
    assert r.status == "error" and r.error.kind == "cross-core:deadlock"
    assert r.error.line == push + 1 + 3
    assert "no free slot" in r.error.message and "2 of 2 slots" in r.error.message
    # with the sanitizer off the FIFO is unbounded, as before
    assert run_text(five, inputs, expected, filename="<pipe>", sanitize=False).status != "error"


# -- MANUAL scopes: only deps=[...] order tasks (docs/en/dev/language/02-manual_dependencies.md)

MANUAL = """        mid: {T} = pl.tensor.create([16, 16], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        with pl.scope(mode=pl.ScopeMode.MANUAL):
            mid1, t1 = pl.submit(self.k_scale, a, mid, attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing]}})
{fence}            c1, t2 = pl.submit(self.k_add1, mid1, c, {deps}attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing]}})
        return c1
"""


def _manual(deps: str, fence: str = "") -> list[dict]:
    text = orch(MANUAL.format(T=T, deps=deps, fence=fence))
    r = run(text, A)
    assert r.error is None, r.error
    assert r.tensors["c"].passed
    return hazards(r, "race")


def test_in_a_manual_scope_the_tags_order_nothing():
    (h,) = _manual("")  # input / output_existing are no edges inside MANUAL
    assert (h["line"], h["other_line"], h["race"]) == (23, 22, "RAW")


def test_in_a_manual_scope_deps_order_the_tasks():
    assert _manual("deps=[t1], ") == []


def test_a_phase_fence_task_dummy_orders_through_its_deps():
    fence = "            f1: pl.Scalar[pl.TASK_ID] = pl.system.task_dummy(deps=[t1])\n"
    assert _manual("deps=[f1], ", fence) == []
    assert len(_manual("deps=[], ", fence)) == 1


def test_a_manual_dep_tensor_is_never_looked_up():
    body = PIPELINE.format(T=T, tag="input").replace("layout=pl.TensorLayout.ND)", "layout=pl.TensorLayout.ND, manual_dep=True)", 1)
    (h,) = hazards(run(orch(body), A), "race")
    assert (h["line"], h["other_line"]) == (22, 21)


def many_tasks(n: int, tag: str) -> str:
    """An orchestration loop submitting ``n`` tasks that all write ``c`` (issue 34's repro)."""
    return (
        HEAD
        + KERNELS
        + f"""    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: {T}, c: pl.Out[{T}]) -> {T}:
        for i, (acc,) in pl.range({n}, init_values=(c,)):
            c1: {T} = self.k_scale(a, acc, attrs={{"arg_directions": [pl.adir.input, pl.adir.{tag}]}})
            c2: {T} = pl.yield_(c1)
        return c2
"""
    )


@pytest.mark.parametrize("tag", ["output_existing", "inout"])
def test_2400_tasks_on_one_buffer_finish_or_stop_with_a_timeout_error(tag: str):
    # output_existing: every task races with the others (one finding per pair of call sites); inout: a chain
    r = run_text(many_tasks(2400, tag), {"a": A.clone(), "c": torch.zeros(16, 16)}, {"c": 2 * A}, filename="<san>", timeout=3.0)
    if r.error is not None:
        assert "timeout" in r.error.message or "within" in r.error.message, r.error.message
        return
    races = hazards(r, "race")
    assert len(races) == (1 if tag == "output_existing" else 0)
    if races:
        assert races[0]["race"] == "WAW" and races[0]["line"] == 21  # the call in the loop


def test_tasks_in_program_order_are_ordered_without_a_bit_per_earlier_task():
    """A dump before DeriveCallDirections orders every task after all earlier ones. That was kept as
    every earlier task's id (a set) and bit: quadratic, a fuzzed loop of 8000 tasks took 1.7 GB and
    ran 5 s; now a task keeps the floor below which everything happens before it."""
    from pypto_lsp.exec.sanitizer import Sanitizer
    from pypto_lsp.ir.tasks import TaskSite

    san = Sanitizer([TaskSite(0, 5, "k", "main", None, (), None)], "<gen>", lambda n: n)
    for _ in range(3000):
        san.task(0, (), lambda: None)
    ts = san.tasks
    assert all(t.floor == t.index and t.reach == 0 and t.deps <= {t.index - 1} for t in ts)
    assert ts[2999].after(ts[0]) and ts[1500].after(ts[1499]) and not ts[0].after(ts[2999]) and not ts[7].after(ts[7])


def test_happens_before_joins_floors_and_bits():
    from pypto_lsp.exec.sanitizer import _Task
    from pypto_lsp.ir.tasks import TaskSite

    site = TaskSite(0, 5, "k", "main", (), (), None)
    t0, t1, t2, t3, t4 = (_Task(i, site) for i in range(5))
    t2.join([t1])  # after t1 only: t0 may run at the same time
    assert (t2.floor, t2.reach) == (0, 0b10) and t2.after(t1) and not t2.after(t0)
    t3.join([t2, t0])  # t0, t1, t2 all before: no bits left
    assert (t3.floor, t3.reach) == (3, 0) and all(t3.after(t) for t in (t0, t1, t2))
    t4.join([t2])
    assert t4.after(t1) and t4.after(t2) and not t4.after(t0) and not t4.after(t3)


def test_the_race_analysis_stops_at_the_deadline():
    import time

    from pypto_lsp.exec.sanitizer import Sanitizer

    sites = task_sites(parse_text(many_tasks(3, "inout")).program)
    san = Sanitizer(sites, "<gen>", lambda n: None)
    a, c = A.clone(), torch.zeros(16, 16)
    for _ in range(100):
        san.task(0, (a, c), lambda x, y: y)
    assert san.races(time.monotonic() + 60) == []
    with pytest.raises(TimeoutError, match="race analysis"):
        san.races(time.monotonic() - 1)


@pytest.mark.parametrize(
    ("old", "new", "line", "what"),
    [
        ("size=16384", f"size={1024 * 1024}", 21, "cannot exist on the core: its Vec holds"),  # 1 MiB buffer
        ("size=16384", f"size={2**62}", 21, "cannot exist on the core"),
        ("size=16384", f"size={1024 * 1024}", 10, "do not fit in the reserved buffer"),  # with 512 KiB slots
    ],
)
def test_a_pipe_buffer_larger_than_its_core_is_an_error_on_its_line(old, new, line, what):
    text, _inputs, _expected = _mixed()
    bad = text.replace(old, new)
    if line == 10:  # the 1 MiB buffer with 512 KiB slots: the buffer cannot exist, and 2 slots do not fit in it either
        bad = bad.replace("slot_size=8192", f"slot_size={512 * 1024}").replace(f"size={1024 * 1024}", f"size={1024 * 1024 - 1}")
    diags = [d for d in check_program(parse_text(bad).program) if d.code == "pipe-protocol"]
    assert any(d.span.line == 21 and "cannot exist on the core" in d.message for d in diags)
    assert any(d.span.line == line and what in d.message for d in diags), [(d.span.line, d.message) for d in diags]


@pytest.mark.parametrize(
    ("deps", "fence", "what"),
    [
        ("deps=[-1], ", "", "-1 is a literal"),
        ("deps=['t1'], ", "", "'t1' is a literal"),
        ("deps=[mid], ", "", "'mid' is a tensor"),
        ("deps=[t2], ", "", "'t2' is the id of this very task"),
        ("deps=[t1], ", "            f1: pl.Scalar[pl.TASK_ID] = pl.system.task_dummy(deps=[f1])\n", "'f1' is the id of this very task"),
    ],
)
def test_deps_that_name_no_earlier_task_are_static_errors_on_their_line(deps, fence, what):
    text = orch(MANUAL.format(T=T, deps=deps, fence=fence))
    (d,) = [d for d in check_program(parse_text(text).program) if d.code == "task-deps"]
    assert d.span.line == 23  # the submit (or the task_dummy before it)
    assert what in d.message
    r = run(text, A)
    assert r.status == "error" and r.error.kind == "static:task-deps" and r.error.line == d.span.line
    assert _manual("deps=[t1], ") == []  # a task id of an earlier task: no diagnostic, no race


def test_a_window_leaving_a_view_but_inside_its_buffer_is_in_bounds():
    # issue 34: a kernel typed [16, 16] called with tensor.slice(a, [16, 8], [0, 0]) of a [16, 16] buffer; its
    # tile.load of 16 columns leaves the view, not the buffer (pl.load's valid-region cut says what is read)
    body = f"""        s: pl.Tensor[[16, 8], pl.FP32] = pl.tensor.slice(a, [16, 8], [0, 0])
        c1: {T} = self.k_scale(s, c, attrs={{"arg_directions": [pl.adir.input, pl.adir.output_existing]}})
        return c1
"""
    r = run_text(orch(body), {"a": A.clone(), "c": torch.zeros(16, 16)}, {}, filename="<san>")
    assert r.error is None, r.error
    assert hazards(r, "out-of-bounds") == []
    # past the buffer itself (the view at column 8 of the 16): out of bounds, naming clamp
    past = body.replace("pl.tensor.slice(a, [16, 8], [0, 0])", "pl.tensor.slice(a, [16, 8], [0, 8])")
    (h,) = hazards(run_text(orch(past), {"a": A.clone(), "c": torch.zeros(16, 16)}, {}, filename="<san>"), "out-of-bounds")
    assert h["line"] == 8 and "clamp=True" in h["message"]


# -- definedness rules, kernel by kernel (the registry's kernels, wrapped as a run wraps them)


def _definedness():
    from pypto_lsp.exec.definedness import Definedness

    found: list[tuple[str, int]] = []
    d = Definedness(lambda: 7, lambda e, where, sh, line: found.append((where, int(sh.sum()))))
    return d, found


def test_rules_by_kernel_family_reduce_over_their_axes_and_matmul_over_k():
    from pypto_lsp.exec.kernels import KERNELS

    d, _found = _definedness()
    x = torch.zeros(4, 8)
    d.create(x, 1, "x")
    d.clear(x[1:])  # only row 0 undefined
    rows = d.wrap("tile.row_sum", KERNELS["tile.row_sum"])(x, torch.zeros(4, 8))
    assert d.shadow(rows).reshape(-1).tolist() == [True, False, False, False]  # any over the reduced axis
    y = d.wrap("tile.matmul", KERNELS["tile.matmul"])(x, torch.ones(8, 3))
    assert d.shadow(y)[:, 0].tolist() == [True, False, False, False]  # row 0 of lhs: row 0 of the product
    z = d.wrap("tile.adds", KERNELS["tile.adds"])(x, 1.0)
    assert int(d.shadow(z).sum()) == 8  # elementwise
    t = d.wrap("tile.load", KERNELS["tile.load"])(x, [1, 0], [2, 8], [2, 8])
    assert d.shadow(t) is None  # the window moved like the data: rows 1-2 are defined


def test_a_scatter_defines_what_it_writes_and_keeps_the_rest():
    from pypto_lsp.exec.kernels import KERNELS

    d, found = _definedness()
    out = torch.zeros(2, 4)
    d.create(out, 1, "out")
    scatter = d.wrap("tile.mscatter", KERNELS["tile.mscatter"])
    scatter(torch.ones(1, 4), torch.arange(4, dtype=torch.int32).reshape(1, 4), out)
    assert d.shadow(out)[0].tolist() == [False] * 4 and d.shadow(out)[1].all()
    scatter(torch.ones(1, 4), torch.arange(4, 8, dtype=torch.int32).reshape(1, 4), out)
    assert d.shadow(out) is None and not d.sink(out, "the output") and found == []


def test_strict_from_the_flag_and_the_case_key(tmp_path: Path) -> None:
    """``validate --sanitize strict`` and ``sanitize = "strict"`` in pypto-lsp.toml list the read that goes
    nowhere (the file still passes); the default does not; a bad value names the key."""
    import json
    import subprocess
    import sys

    case = tmp_path / "paged"
    (case / "passes_dump").mkdir(parents=True)
    (case / "passes_dump" / "00_frontend.py").write_text(HEAD + KERNELS + PAGED + PAGED_MAIN)
    torch.save({"a": A.clone(), "c": torch.zeros(16, 16)}, case / "inputs.pt")
    torch.save({"c": 2 * A}, case / "expected.pt")

    def kinds(*extra: str) -> tuple[int, str, list[str]]:
        cmd = [sys.executable, "-m", "pypto_lsp", "validate", str(case / "passes_dump"), "--json", "--no-cache", "--no-localize"]
        p = subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        if p.returncode == 2:
            return 2, p.stderr, []
        (f,) = json.loads(p.stdout)["files"]
        return p.returncode, f["status"], [h["kind"] for h in (f.get("memory") or {}).get("hazards", [])]

    goldens = ("--inputs", str(case / "inputs.pt"), "--expected", str(case / "expected.pt"))
    assert kinds(*goldens) == (0, "pass", [])
    assert kinds(*goldens, "--sanitize", "strict") == (0, "pass", ["undefined-read"])
    (case / "pypto-lsp.toml").write_text(
        '[[cases]]\ndumps = "passes_dump"\ninputs = "inputs.pt"\nexpected = "expected.pt"\nsanitize = "strict"\n'
    )
    assert kinds() == (0, "pass", ["undefined-read"])
    assert kinds("--sanitize", "on") == (0, "pass", [])  # the flag wins over the case
    (case / "pypto-lsp.toml").write_text('[[cases]]\ndumps = "passes_dump"\nsanitize = "loud"\n')
    code, err, _ = kinds()
    assert code == 2 and "'sanitize' must be true, false or \"strict\"" in err, err


def test_windows_side_by_side_are_kept_as_one_box_and_others_apart():
    from pypto_lsp.exec.boxes import Box, joined

    a, b = Box((0, 0), (16, 64)), Box((0, 64), (16, 128))
    assert joined(a, b) == Box((0, 0), (16, 128)) and joined(b, a) == Box((0, 0), (16, 128))
    assert joined(a, a) == a
    assert joined(a, Box((0, 65), (16, 128))) is None  # a gap between them
    assert joined(a, Box((0, 32), (16, 96))) == Box((0, 0), (16, 96))  # overlapping along the one dimension
    assert joined(Box((0, 0), (16, 3968)), Box((0, 256), (16, 4096))) == Box((0, 0), (16, 4096))
    assert joined(a, Box((16, 64), (32, 128))) is None  # diagonal: the union is no box
    assert joined(a, Box((0, 64), (8, 128))) is None  # other rows
    assert joined(Box((0,), (4,), True), Box((4,), (8,), True)) == Box((0,), (8,), True)
    assert joined(Box((0,), (4,), True), Box((0, 4), (1, 8))) is None
