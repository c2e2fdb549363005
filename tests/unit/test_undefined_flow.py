"""How undefined values flow to where they matter (exec/definedness.py, exec/uninitialised.py): through
pipes and their lanes, batched pipe loops and sweeps, and along chains of buffers whose values are
written into one another; the findings name the buffer whose values reach the output, the same with
the memory model on or off and batched or ``--exact``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from pypto_lsp.validate.engine import run_text

from .test_sanitizer import EXAMPLES, HEAD, KERNELS, A, T, hazards, run


def test_an_undefined_value_is_followed_through_a_pipe_and_its_lanes() -> None:
    """examples/mixed_matmul with an uninitialised `a`: the cube loads it, multiplies, pushes the
    product split between the two AIV lanes (tpush_to_aiv split=1), each lane pops its half, scales
    it and stores it into the output. The undefined elements cross the pipe (the queued clone, each
    lane's part), so the finding is raised, with the push on its path (before, the pipe dropped them)."""
    from pypto_lsp.validate.golden import load_bundle

    ex = EXAMPLES / "mixed_matmul"
    text = (ex / "passes_dump" / "24_after_SplitVectorKernel.py").read_text()
    call = "        c__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.mm_scale(a__ssa_v0, b__ssa_v0, c__ssa_v0, gm_pipe_buffer_0)"
    assert call in text
    lines = text.splitlines()
    push = next(i for i, ln in enumerate(lines) if "tpush_to_aiv" in ln) + 1
    store = next(i for i, ln in enumerate(lines) if "pl.tile.store(t__tile" in ln) + 1
    broken = text.replace(
        call,
        "        u: pl.Tensor[[32, 64], pl.BF16] = pl.tensor.create([32, 64], dtype=pl.BF16, layout=pl.TensorLayout.ND)\n"
        + call.replace("self.mm_scale(a__ssa_v0,", "self.mm_scale(u,"),
    )
    ins = load_bundle(ex / "golden" / "inputs.pt")
    for memory in (True, False):
        r = run_text(broken, ins, {}, filename="<pipe>", memory=memory)
        (h,) = hazards(r, "uninitialised")
        assert h["name"] == "u" and push in h["related"] and store in h["related"], h
        assert "the output 'c'" in h["message"] and "[0:32, 0:64]" in h["message"], h["message"]  # both lanes' halves
    # the example as it is: nothing undefined, nothing found
    assert hazards(run_text(text, ins, {}, filename="<pipe>")) == []


# a cube loop pushing a [32, 32] product per column block of b, a vector loop popping each, scaling it
# and storing it into its block of c: both loops are sweeps (exec.sweep), the vector one popping first
SWEPT_PIPE = """# pypto.program: LoopMatmul
import pypto.language as pl

@pl.program
class LoopMatmul:
    @pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)
    def mm_aic(a: pl.Tensor[[32, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16], c: pl.Out[pl.Tensor[[32, 64], pl.FP32]], __gm_pipe_buffer: pl.Out[pl.Tensor[[1], pl.FP32]]):
        buf_import: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name='mm_c2v_slot_buffer', peer_func='mm_aiv')
        pl.system.aic_initialize_pipe(buf_import, pl.const(0, pl.INT32), dir_mask=1, slot_size=4096, slot_num=2)
        a_mat: pl.Tile[[32, 64], pl.BF16, pl.Mem.Mat] = pl.tile.load(a, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)
        a_left: pl.Tile[[32, 64], pl.BF16, pl.Mem.Left] = pl.tile.move(a_mat, target_memory=pl.Mem.Left)
        for j in pl.range(2):
            j0: pl.Scalar[pl.INDEX] = j * 32
            b_mat: pl.Tile[[64, 32], pl.BF16, pl.Mem.Mat] = pl.tile.load(b, [0, j0], [64, 32], [64, 32], target_memory=pl.Mem.Mat)
            b_right: pl.Tile[[64, 32], pl.BF16, pl.Mem.Right] = pl.tile.move(b_mat, target_memory=pl.Mem.Right)
            acc: pl.Tile[[32, 32], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a_left, b_right)
            pl.tile.tpush_to_aiv(acc, split=0)
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def mm_aiv(a: pl.Tensor[[32, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16], c: pl.Out[pl.Tensor[[32, 64], pl.FP32]], __gm_pipe_buffer: pl.Out[pl.Tensor[[1], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        buf: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='mm_c2v_slot_buffer', size=8192, base=-1)
        pl.system.aiv_initialize_pipe(buf, pl.const(0, pl.INT32), dir_mask=1, slot_size=4096, slot_num=2)
        for j, (c_iter,) in pl.range(2, init_values=(c,)):
            j0: pl.Scalar[pl.INDEX] = j * 32
            acc_vec: pl.Tile[[32, 32], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)
            t: pl.Tile[[32, 32], pl.FP32, pl.Mem.Vec] = pl.tile.muls(acc_vec, 2.0)
            pl.system.tfree_to_aic(acc_vec)
            c_tile: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t, [0, j0], c_iter)
            c_rv: pl.Tensor[[32, 64], pl.FP32] = pl.yield_(c_tile)
        return c_rv
    @pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)
    def mm(a: pl.Tensor[[32, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16], c: pl.Out[pl.Tensor[[32, 64], pl.FP32]], __gm_pipe_buffer: pl.Out[pl.Tensor[[1], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        self.mm_aic(a, b, c, __gm_pipe_buffer)
        self.mm_aiv(a, b, c, __gm_pipe_buffer)
        return c
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: pl.Tensor[[32, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16], c: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        gm_pipe_buffer_0: pl.Tensor[[1], pl.FP32] = pl.tensor.create([1], dtype=pl.FP32, layout=pl.TensorLayout.ND, manual_dep=True)
        c1: pl.Tensor[[32, 64], pl.FP32] = self.mm(a, b, c, gm_pipe_buffer_0)
        return c1
"""


@pytest.mark.parametrize("memory", [True, False])
@pytest.mark.parametrize("exact", [False, True])
def test_undefined_tiles_popped_in_a_sweep_reach_the_output_with_their_finding(memory: bool, exact: bool) -> None:
    """b replaced by a tensor.create without init_value: the cube's sweep declines (its window of b is
    undefined) and pushes tile by tile, each push carrying its shadow; the vector core's sweep pops
    them in bulk. Before, the pops were stacked into one tensor with no shadow and stored in one
    strided copy that cleared c's: no finding, in the batched run only. Now the popped tiles stay
    apart and run item by item: the same finding, with the same path, batched or exact."""
    g = torch.Generator().manual_seed(3)
    ins = {
        "a": torch.randn(32, 64, generator=g).to(torch.bfloat16),
        "b": torch.randn(64, 64, generator=g).to(torch.bfloat16),
        "c": torch.zeros(32, 64),
    }
    exp = {"c": 2 * (ins["a"].float() @ ins["b"].float())}
    clean = run_text(SWEPT_PIPE, {k: v.clone() for k, v in ins.items()}, exp, filename="<swept>", memory=memory, exact=exact)
    assert clean.status == "pass" and hazards(clean) == [], (clean.error, hazards(clean))
    call = "        c1: pl.Tensor[[32, 64], pl.FP32] = self.mm(a, b, c, gm_pipe_buffer_0)"
    broken = SWEPT_PIPE.replace(
        call, "        u: pl.Tensor[[64, 64], pl.BF16] = pl.tensor.create([64, 64], dtype=pl.BF16, layout=pl.TensorLayout.ND)\n" + call
    ).replace("self.mm(a, b, c,", "self.mm(a, u, c,")
    r = run_text(broken, {k: v.clone() for k, v in ins.items()}, exp, filename="<swept>", memory=memory, exact=exact)
    (h,) = hazards(r, "uninitialised")
    assert h["name"] == "u" and h["line"] == 38, h  # the create, before the call
    assert h["related"] == [14, 16, 17, 25, 27], h  # the load of b, the matmul, the push, the pop's use, the store
    assert "reaches the output 'c'" in h["message"] and "[0:32, 0:64]" in h["message"], h["message"]


QWEN3 = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "qwen3_scope3_910b"


@pytest.mark.skipif(not (QWEN3 / "tensors.pt").is_file(), reason="needs ../shared/fixtures (qwen3_scope3_910b)")
def test_an_undefined_weight_is_followed_through_the_batched_pipe_loops():
    """qwen3's o-projection with its weight replaced by a tensor.create without init_value: the cube's
    K-chunk loop pushes the products (a batched push loop, exec.pipebatch, declines: the operands are
    undefined), the vector core pops and accumulates them in bulk (pop_accumulate: the sums keep the
    tiles' undefined elements) and stores into resid1_gm, block by block, every element of it. The
    weight gets the one finding, on its creation line, the push, the accumulating add (as the loop run
    add by add names it, not the loop's header) and the store on its path: resid1_gm's
    own missing init_value changes nothing (each element is overwritten before it is read), so it is
    not named (before, it was, as the buffer the values passed through)."""

    from pypto_lsp.validate.golden import load_bundle

    text = (QWEN3 / "passes_dump" / "24_after_SplitVectorKernel.py").read_text()
    lines = text.splitlines()
    call = next(i for i, ln in enumerate(lines) if "self.oproj_block(attn_out__ssa_v0, wo__ssa_v0," in ln)
    lines[call] = lines[call].replace("self.oproj_block(attn_out__ssa_v0, wo__ssa_v0,", "self.oproj_block(attn_out__ssa_v0, wu,")
    first = next(i for i, ln in enumerate(lines) if "resid1_gm__ssa_v0: pl.Tensor[[16, 512], pl.FP32] = pl.tensor.create" in ln)
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    lines.insert(
        first, indent + "wu: pl.Tensor[[512, 512], pl.BF16] = pl.tensor.create([512, 512], dtype=pl.BF16, layout=pl.TensorLayout.ND)"
    )
    aic = next(i for i, ln in enumerate(lines) if "def oproj_block_aic(" in ln)
    push = next(i for i, ln in enumerate(lines) if i > aic and "pl.tile.tpush_to_aiv(t__tile, split=0)" in ln) + 1
    store = next(i for i, ln in enumerate(lines) if "pl.tile.store(t__tile_1, [0, o0__ssa_v0], resid1_gm__ssa_v0)" in ln) + 1
    add = next(i for i, ln in enumerate(lines) if "= pl.tile.add(o_acc__iter_v1, t__tile_Vec)" in ln) + 1
    ins, exp = load_bundle(QWEN3 / "tensors.pt"), load_bundle(QWEN3 / "expected.pt")
    for memory in (True, False):
        r = run_text("\n".join(lines) + "\n", ins, exp, filename="<qwen3>", memory=memory)
        found = {h["name"]: h for h in hazards(r, "uninitialised")}
        assert set(found) == {"wu"}, found
        wu = found["wu"]
        assert wu["line"] == first + 1 and push in wu["related"] and store in wu["related"], wu
        assert add in wu["related"] and add - 2 not in wu["related"], wu  # the add, not the for line
        assert "reaches the output 'out'" in wu["message"]


def _qwen3_with_an_uninitialised_oproj_weight(dump: str) -> tuple[str, int, int]:
    """``dump`` with the o-projection's weight replaced by a tensor.create without init_value: the
    text, the weight's creation line and the line of the store into resid1_gm."""
    lines = (QWEN3 / "passes_dump" / dump).read_text().splitlines()
    call = next(i for i, ln in enumerate(lines) if "self.oproj_block(attn_out__ssa_v0, wo__ssa_v0," in ln)
    lines[call] = lines[call].replace("self.oproj_block(attn_out__ssa_v0, wo__ssa_v0,", "self.oproj_block(attn_out__ssa_v0, wu,")
    first = next(i for i, ln in enumerate(lines) if "resid1_gm__ssa_v0: pl.Tensor[[16, 512], pl.FP32" in ln and "pl.tensor.create" in ln)
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    lines.insert(
        first, indent + "wu: pl.Tensor[[512, 512], pl.BF16] = pl.tensor.create([512, 512], dtype=pl.BF16, layout=pl.TensorLayout.ND)"
    )
    store = next(i for i, ln in enumerate(lines) if "pl.tile.store(t__tile_1, [0, o0__ssa_v0], resid1_gm__ssa_v0)" in ln) + 1
    return "\n".join(lines) + "\n", first + 1, store


# kernels k_rows0 / k_rows8 (lines 18-27): copy rows 0-7 / 8-15 of x into the same rows of out
HALF = "pl.Tile[[8, 16], pl.FP32, pl.Mem.Vec]"
ROWS = "".join(
    f"""    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def k_rows{r}(x: {T}, out: pl.Out[{T}]) -> {T}:
        t: {HALF} = pl.tile.load(x, [{r}, 0], [8, 16], [8, 16], target_memory=pl.Mem.Vec)
        s: {T} = pl.tile.store(t, [{r}, 0], out)
        return out
"""
    for r in (0, 8)
)


def _rows_program(body: str) -> str:
    """The body starts at line 30 (lines 28-29: main's decorator and def)."""
    head = f"""    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: {T}, c: pl.Out[{T}]) -> {T}:
"""
    return HEAD + KERNELS + ROWS + head + body


def _create(name: str) -> str:
    return f"        {name}: {T} = pl.tensor.create([16, 16], dtype=pl.FP32, layout=pl.TensorLayout.ND)\n"


@pytest.mark.parametrize("memory", [True, False])
def test_a_buffer_overwritten_whole_with_another_s_undefined_values_is_not_named(memory: bool) -> None:
    """mid (line 31) is written in two halves from u's undefined values (lines 32, 33) before k_add1
    reads it: mid's own missing init_value changes nothing, so only u is named, its path through the
    first store (line 21); with one half written, mid's other half is its own and both are named."""
    tail = f"        c1: {T} = self.k_add1(m2, c)\n        return c1\n"
    whole = _create("u") + _create("mid") + f"        m1: {T} = self.k_rows0(u, mid)\n        m2: {T} = self.k_rows8(u, m1)\n" + tail
    found = {h["name"]: h for h in hazards(run(_rows_program(whole), A, memory=memory), "uninitialised")}
    assert set(found) == {"u"}, found
    u = found["u"]
    assert u["line"] == 30 and 21 in u["related"] and "reaches the output 'c'" in u["message"], u
    half = _create("u") + _create("mid") + f"        m1: {T} = self.k_rows0(u, mid)\n        m2: {T} = m1\n" + tail
    found = {h["name"]: h for h in hazards(run(_rows_program(half), A, memory=memory), "uninitialised")}
    assert set(found) == {"u", "mid"}, found
    assert "undefined values of 'u' (created at line 30) were written into it at line 21" in found["mid"]["message"]
    assert "its undefined values are written into 'mid' at line 21" in found["u"]["message"]


@pytest.mark.parametrize("memory", [True, False])
def test_an_origin_two_buffers_back_is_found_with_its_path_to_the_output(memory: bool) -> None:
    """u's rows 0-7 go into mid (line 32, the store at line 21), mid's rows 0-7 into mid2 (line 33),
    whose rows 8-15 stay its own; mid2 reaches c. The walk follows the inflows back: mid2 and u each
    get a finding, u's naming the buffer it was written into (before, the walk stopped one buffer
    back and u, the cause, was never named). mid is named too: a buffer holding its own and another's
    undefined values does not tell its elements apart (docs/sanitizer.md)."""
    body = (
        _create("u")
        + _create("mid")
        + _create("mid2")
        + f"        m1: {T} = self.k_rows0(u, mid)\n"
        + f"        n1: {T} = self.k_rows0(m1, mid2)\n"
        + f"        c1: {T} = self.k_add1(n1, c)\n        return c1\n"
    )
    found = {h["name"]: h for h in hazards(run(_rows_program(body), A, memory=memory), "uninitialised")}
    assert set(found) == {"u", "mid", "mid2"}, found
    assert "its undefined values are written into 'mid' at line 21" in found["u"]["message"], found["u"]
    assert "reaches the output 'c'" in found["u"]["message"] and 21 in found["u"]["related"]


@pytest.mark.skipif(not (QWEN3 / "tensors.pt").is_file(), reason="needs ../shared/fixtures (qwen3_scope3_910b)")
@pytest.mark.parametrize(
    "dump",
    [
        "22_after_ExpandMixedKernel.py",
        "32_after_InitMemRef.py",
        "35_after_AllocateMemoryAddr.py",
        "49_after_MaterializeValidShapeSymbols.py",
    ],
)
def test_the_same_findings_with_and_without_the_memory_model(dump: str) -> None:
    """qwen3 with an undefined o-projection weight: the one finding, the weight's, whichever path its
    values take to the output first (in 32_after_InitMemRef with the memory model on, through
    post_norm_gm, which used to be named too, each of its elements holding resid1_gm's values).
    Every dump from 22 (the first with the o-projection block) to 49 gives this; four are run here."""
    from pypto_lsp.validate.golden import load_bundle

    text, created, store = _qwen3_with_an_uninitialised_oproj_weight(dump)
    ins, exp = load_bundle(QWEN3 / "tensors.pt"), load_bundle(QWEN3 / "expected.pt")
    for memory in (False, True):
        found = {h["name"]: h for h in hazards(run_text(text, ins, exp, filename="<qwen3>", memory=memory), "uninitialised")}
        assert set(found) == {"wu"}, (memory, found)
        assert found["wu"]["line"] == created and store in found["wu"]["related"], found["wu"]
        assert "reaches the output 'out'" in found["wu"]["message"]


@pytest.mark.skipif(not (QWEN3 / "tensors.pt").is_file(), reason="needs ../shared/fixtures (qwen3_scope3_910b)")
@pytest.mark.parametrize("weight", ["post_rms_weight__ssa_v0", "w_down__ssa_v0"])
def test_an_undefined_mlp_weight_reaches_the_output_through_the_swept_down_projection(weight: str) -> None:
    """qwen3 49_after_MaterializeValidShapeSymbols with the post-norm weight or the down projection's
    weight replaced, in the orchestrator, by a tensor.create without init_value: the values reach the
    output through the vector core's swept down-projection loop, which pops the cube's products in
    bulk. Before, every such weight (post_rms_weight, w_gate, w_up, w_down) passed unreported in the
    default (batched) run, found only with --exact; now one finding, memory model on or off."""

    from pypto_lsp.validate.golden import load_bundle

    types = {"post_rms_weight__ssa_v0": ("[1, 512]", "pl.FP32"), "w_down__ssa_v0": ("[1024, 512]", "pl.BF16")}
    shape, dtype = types[weight]
    lines = (QWEN3 / "passes_dump" / "49_after_MaterializeValidShapeSymbols.py").read_text().splitlines()
    d = next(i for i, ln in enumerate(lines) if "def scope3(" in ln)
    for i in range(d + 1, len(lines)):
        lines[i] = re.sub(rf"\b{weight}\b", "u", lines[i])
    lines.insert(d + 1, f"        u: pl.Tensor[{shape}, {dtype}] = pl.tensor.create({shape}, dtype={dtype}, layout=pl.TensorLayout.ND)")
    ins, exp = load_bundle(QWEN3 / "tensors.pt"), load_bundle(QWEN3 / "expected.pt")
    for memory in (True, False):
        r = run_text("\n".join(lines) + "\n", ins, exp, filename="<qwen3>", memory=memory)
        (h,) = hazards(r, "uninitialised")
        assert h["name"] == "u" and h["line"] == d + 2 and "reaches the output 'out'" in h["message"], (memory, h)


_SWEEPING = ["mixed_matmul", "softmax", "elementwise", "split_rows", "odd_rows", "returns", "allreduce_ranks"]


@pytest.mark.parametrize("example", _SWEEPING)
def test_batched_and_exact_runs_find_the_same_undefined_inputs(example: str) -> None:
    """Each example's last dump (its tiles placed: the memory model runs them in the arenas) with
    each input of its orchestrator replaced by a tensor created without init_value: the default run
    (sweeps, batched pipe loops, K-chunk matmuls) reports the same buffers, lines and paths as
    ``--exact`` (every loop tile by tile), and the memory model on the same buffers as values only.
    A batched path or an arena copy that drops a shadow shows here as a finding one run lacks
    (tests/conformance/undefined_inputs.py runs the same over every real dump)."""
    from pypto_lsp.validate.golden import load_bundle

    from ..conformance.undefined_inputs import findings, with_undefined_inputs

    ex = EXAMPLES / example
    ins = load_bundle(ex / "golden" / "inputs.pt")
    last = sorted((ex / "passes_dump").glob("*.py"))[-1]
    variants = with_undefined_inputs(last.read_text())
    assert variants, f"{last.name}: no orchestrator input found"
    for name, text in variants:
        runs = {(memory, exact): findings(text, ins, exact, last.name, memory) for memory in (False, True) for exact in (False, True)}
        assert all(err in (None, "uninitialised") for _, err in runs.values()), (name, runs)
        for memory in (False, True):
            assert runs[(memory, False)] == runs[(memory, True)], (name, memory, runs)
        assert [f[0] for f in runs[(True, False)][0]] == [f[0] for f in runs[(False, False)][0]], (name, runs)


# a loop adding 1 to each [16, 16] window of the tensor it carries, in place (slice, adds, assemble):
# a sweep, its windows read and written in one strided view each
READ_MODIFY_WRITE = """# pypto.program: Rmw
import pypto.language as pl

@pl.program
class Rmw:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def bump(c: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
        for nb, (c_iter,) in pl.range(4, init_values=(c,)):
            n0: pl.Scalar[pl.INDEX] = nb * 16
            c_prev: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.slice(c_iter, [16, 16], [0, n0])
            c_next: pl.Tensor[[16, 16], pl.FP32] = pl.tensor.adds(c_prev, 1.0)
            c_new: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.assemble(c_iter, c_next, [0, n0])
            c_rv: pl.Tensor[[16, 64], pl.FP32] = pl.yield_(c_new)
        return c_rv
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, c: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
        r: pl.Tensor[[16, 64], pl.FP32] = self.bump(c)
        return r
"""


@pytest.mark.parametrize("memory", [False, True])
def test_a_carried_tensor_read_and_written_back_in_a_sweep_keeps_its_undefined_values(memory: bool) -> None:
    """c replaced by a tensor created without init_value (line 17): the sweep reads windows of the
    tensor it carries, which Sweep.ready does not look at, and wrote them back in one strided copy
    that cleared their shadow: no finding in the default run, one with --exact. Now the same finding
    both ways, its path the slice, the add and the assemble (the exact run used to stop at the slice)."""
    from ..conformance.undefined_inputs import findings, with_undefined_inputs

    clean = run_text(READ_MODIFY_WRITE, {"c": torch.zeros(16, 64)}, {"c": torch.ones(16, 64)}, filename="<rmw>", memory=memory)
    assert clean.status == "pass" and hazards(clean) == [], (clean.error, hazards(clean))
    ((name, text),) = with_undefined_inputs(READ_MODIFY_WRITE)
    assert name == "c"
    want = ([("u_x", 17, (10, 11, 12))], None)
    assert findings(text, {"c": torch.zeros(16, 64)}, False, "<rmw>", memory) == want
    assert findings(text, {"c": torch.zeros(16, 64)}, True, "<rmw>", memory) == want
