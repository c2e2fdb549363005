"""Task sweeps of a Group (analysis.task_sweep_plan, exec.sweep.Sweep.group): an orchestrator loop
whose tasks are one cross-core Group runs every task at once, in one run of its AIC and AIV kernels
whose no-split pipes carry each task's tiles in task order, and leaves its buffers and the
sanitizer's task graph as the tasks one by one would (``exact``: every loop as written).

The program is qwen3's MLP block after SplitVectorKernel, small: the cube multiplies each task's
window of ``x`` by ``w`` and pushes the product; the vector lanes (dual dispatch) pop it, lane 0
adds it into the window of ``acc`` every task shares (an ordered sum), lane 1 does the same on a
tile of no valid region and stores nothing; each task gets a GM pipe buffer of its own that no
kernel touches (InjectGMPipeBuffer)."""

from __future__ import annotations

import json

import torch

import pypto_lsp.exec.sweep as sweep
from pypto_lsp.analysis.task_sweep_plan import plan_task_sweeps
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.engine import run_text

AIC = "@pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)"
AIV = "@pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)"
GROUP = "@pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)"
ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"
PARAMS = (
    "x: pl.Tensor[[16, 256], pl.BF16], w: pl.Tensor[[32, 64], pl.BF16], k0: pl.Scalar[pl.INDEX], "
    "acc: pl.Out[pl.Tensor[[16, 64], pl.FP32]], __gm_pipe_buffer: pl.Out[pl.Tensor[[1], pl.FP32]]"
)

KERNELS = f"""    {AIC}
    def blk_aic({PARAMS}):
        v2c: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='blk_v2c', size=8192, base=-1)
        c2v: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name='blk_c2v', peer_func='blk_aiv')
        pl.system.aic_initialize_pipe(c2v, v2c, dir_mask=1, slot_size=4096, slot_num=2)
        xt: pl.Tile[[16, 32], pl.BF16, pl.Mem.Mat] = pl.tile.load(x, [0, k0], [16, 32], [16, 32], target_memory=pl.Mem.Mat)
        wt: pl.Tile[[32, 64], pl.BF16, pl.Mem.Mat] = pl.tile.load(w, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)
        xl: pl.Tile[[16, 32], pl.BF16, pl.Mem.Left] = pl.tile.move(xt, target_memory=pl.Mem.Left)
        wr: pl.Tile[[32, 64], pl.BF16, pl.Mem.Right] = pl.tile.move(wt, target_memory=pl.Mem.Right)
        p: pl.Tile[[16, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(xl, wr)
        pl.tile.tpush_to_aiv(p, split=0)
    {AIV}
    def blk_aiv({PARAMS}) -> pl.Tensor[[16, 64], pl.FP32]:
        pl.func_attr({{"dual_aiv_dispatch": True}})
        sub: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()
        c2v: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='blk_c2v', size=8192, base=-1)
        v2c: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name='blk_v2c', peer_func='blk_aic')
        pl.system.aiv_initialize_pipe(c2v, v2c, dir_mask=1, slot_size=4096, slot_num=2)
        if sub == 0:
            t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)
            prev: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(acc, [0, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
            s: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(prev, t)
            pl.system.tfree_to_aic(t)
            acc_1: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(s, [0, 0], acc)
            return acc_1
        else:
            t_1: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[0, 0])] = pl.tile.tpop_from_aic(split=0)
            {{LANE1}}
            pl.system.tfree_to_aic(t_1)
            return acc
    {GROUP}
    def blk({PARAMS}) -> pl.Tensor[[16, 64], pl.FP32]:
        self.blk_aic(x, w, k0, acc, __gm_pipe_buffer)
        self.blk_aiv(x, w, k0, acc, __gm_pipe_buffer)
        return acc
"""
IDLE = "prev_1: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[0, 0])] = pl.tile.create([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)\n            s_1: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[0, 0])] = pl.tile.add(prev_1, t_1)"
READS = (
    "xs: pl.Tile[[16, 64], pl.BF16, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)\n"
    "            xf: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.cast(xs, target_type=pl.FP32, mode='round')\n"
    "            s_1: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(xf, t_1)"
)
MAIN = f"""    {ORCH}
    def main(self, x: pl.Tensor[[16, 256], pl.BF16], w: pl.Tensor[[32, 64], pl.BF16], acc: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        for kb, (acc_i,) in pl.range(8, init_values=(acc,)):
            k0: pl.Scalar[pl.INDEX] = kb * 32
            gm: pl.Tensor[[1], pl.FP32] = pl.tensor.create([1], dtype=pl.FP32, layout=pl.TensorLayout.ND, manual_dep=True)
            acc_n: pl.Tensor[[16, 64], pl.FP32] = self.blk(x, w, k0, acc_i, gm)
            acc_r: pl.Tensor[[16, 64], pl.FP32] = pl.yield_(acc_n)
        return acc_r
"""


def program(lane1: str = IDLE) -> str:
    return "import pypto.language as pl\n\n@pl.program\nclass Groups:\n" + KERNELS.replace("{LANE1}", lane1) + MAIN


def _ref(ptr: str, size: int, space: str) -> str:
    return f"pl.MemRef({ptr}, pl.const(0, pl.INT64), {size}), pl.Mem.{space}"


def placed(shared: bool = False) -> str:
    """The cube's tiles placed in its arenas (InitMemRef's form); ``shared``: x's window and w on one
    buffer of Mat (a MemoryReuse gone wrong: loading w overwrites x's window before it is moved)."""
    text = program()
    allocs = (
        "        mx: pl.Ptr = pl.tile.alloc(pl.Mem.Mat, 4096)\n"
        "        mw: pl.Ptr = pl.tile.alloc(pl.Mem.Mat, 4096)\n"
        "        ml: pl.Ptr = pl.tile.alloc(pl.Mem.Left, 1024)\n"
        "        mr: pl.Ptr = pl.tile.alloc(pl.Mem.Right, 4096)\n"
        "        ma: pl.Ptr = pl.tile.alloc(pl.Mem.Acc, 4096)\n"
    )
    text = text.replace("    def blk_aic(" + PARAMS + "):\n", "    def blk_aic(" + PARAMS + "):\n" + allocs)
    for name, shape, dtype, ptr, size, space in (
        ("xt", "[16, 32]", "BF16", "mx", 4096, "Mat"),
        ("wt", "[32, 64]", "BF16", "mx" if shared else "mw", 4096, "Mat"),
        ("xl", "[16, 32]", "BF16", "ml", 1024, "Left"),
        ("wr", "[32, 64]", "BF16", "mr", 4096, "Right"),
        ("p", "[16, 64]", "FP32", "ma", 4096, "Acc"),
    ):
        text = text.replace(
            f"        {name}: pl.Tile[{shape}, pl.{dtype}, pl.Mem.{space}]",
            f"        {name}: pl.Tile[{shape}, pl.{dtype}, {_ref(ptr, size, space)}]",
        )
    assert text.count("pl.MemRef(") == 5
    return text


def inputs() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(11)
    x = (torch.randn(16, 256, generator=g) * torch.tensor([1e-3, 1.0, 1e3, 1e-5] * 64)).to(torch.bfloat16)
    return {"x": x, "w": torch.randn(32, 64, generator=g).to(torch.bfloat16), "acc": torch.randn(16, 64, generator=g)}


def expected(ins: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tasks one after another, in plain torch: each adds its window's product into acc."""
    acc = ins["acc"].clone()
    for kb in range(8):
        acc = acc + ins["x"][:, kb * 32 : kb * 32 + 32].float() @ ins["w"].float()
    return {"acc": acc}


def run(text: str, exact: bool, sanitize: bool) -> tuple[object, dict[str, torch.Tensor]]:
    ins = inputs()
    kept: dict[str, torch.Tensor] = {}
    r = run_text(text, ins, expected(inputs()), exact=exact, sanitize=sanitize, keep=kept)
    return r, kept


def _json(r: object) -> dict[str, object]:
    js = r.to_json()  # type: ignore[attr-defined]
    for k in ("seconds", "cached", "file", "stats", "worker"):
        js.pop(k, None)
    return js


def _swept(monkeypatch) -> list[bool]:
    ran: list[bool] = []
    real = sweep.Sweep.run_tasks

    def counted(self, variant, *args):
        out = real(self, variant, *args)
        ran.append(out is not sweep.FAILED)
        return out

    monkeypatch.setattr(sweep.Sweep, "run_tasks", counted)
    return ran


def test_the_group_loop_is_planned_with_an_idle_lane_1() -> None:
    plan = plan_task_sweeps(parse_text(program()).program)
    (ts,) = plan.loops.values()
    assert ts.kernel == "blk" and ts.group == ("blk_aic", "blk_aiv", 2, True)
    assert ts.sums == ("acc_i",) and set(plan.kernels) == {"blk_aic", "blk_aiv"}
    assert len(plan.kernels["blk_aiv"]) == 1  # lane 0's add: the ordered sum's


def test_the_group_sweep_leaves_what_the_tasks_one_by_one_leave(monkeypatch) -> None:
    ran = _swept(monkeypatch)
    for sanitize in (False, True):
        ran.clear()
        swept, out_s = run(program(), exact=False, sanitize=sanitize)
        assert ran == [True]  # one sweep, every task
        one, out_o = run(program(), exact=True, sanitize=sanitize)
        assert swept.status == "pass", swept.to_json()  # type: ignore[attr-defined]
        assert _json(swept) == _json(one)
        assert torch.equal(out_s["acc"], out_o["acc"])  # in the bits: the sum in task order


def test_a_lane_1_that_reads_an_input_runs_in_the_sweep() -> None:
    plan = plan_task_sweeps(parse_text(program(READS)).program)
    (ts,) = plan.loops.values()
    assert ts.group == ("blk_aic", "blk_aiv", 2, False)
    for sanitize in (False, True):
        swept, out_s = run(program(READS), exact=False, sanitize=sanitize)
        one, out_o = run(program(READS), exact=True, sanitize=sanitize)
        assert _json(swept) == _json(one) and torch.equal(out_s["acc"], out_o["acc"])


def test_lanes_that_both_write_or_a_kernel_that_reads_its_pipe_buffer_keep_the_loop() -> None:
    # lane 1 stores too: the two lanes race on acc, in the scheduler's order
    racing = program(
        IDLE.replace(
            "s_1: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[0, 0])] = pl.tile.add(prev_1, t_1)",
            "s_1: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[0, 0])] = pl.tile.add(prev_1, t_1)\n"
            "            acc_2: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(s_1, [0, 0], acc)",
        )
    )
    assert not plan_task_sweeps(parse_text(racing).program).loops
    # the GM pipe buffer read: a buffer of each task's own
    reads_gm = program(
        IDLE
        + "\n            g_1: pl.Tile[[1, 1], pl.FP32, pl.Mem.Vec] = pl.tile.load(__gm_pipe_buffer, [0], [1], [1], target_memory=pl.Mem.Vec)"
    )
    assert not plan_task_sweeps(parse_text(reads_gm).program).loops
    # a split pipe: each lane gets half a tile
    split = program().replace("pl.tile.tpush_to_aiv(p, split=0)", "pl.tile.tpush_to_aiv(p, split=1)")
    assert not plan_task_sweeps(parse_text(split).program).loops


def test_on_placed_tiles_the_first_task_runs_in_the_arenas_and_the_others_as_one_sweep(monkeypatch) -> None:
    """The memory model on: the first task as written (the cube followed in its arenas), then the
    seven others at once, each kernel being proven by then (exec.memory.Session.frame); the same
    result, findings included, as every task followed (``exact``)."""
    plan = plan_task_sweeps(parse_text(placed()).program, None, frozenset({"blk_aic", "blk_aiv"}))
    (ts,) = plan.loops.values()
    assert ts.first_apart
    ran = _swept(monkeypatch)
    for sanitize in (False, True):
        ran.clear()
        swept, out_s = run(placed(), exact=False, sanitize=sanitize)
        assert ran == [True]
        one, out_o = run(placed(), exact=True, sanitize=sanitize)
        assert swept.status == "pass", swept.to_json()  # type: ignore[attr-defined]
        assert _json(swept) == _json(one) and torch.equal(out_s["acc"], out_o["acc"])


def test_on_placed_tiles_a_hazard_in_the_first_task_runs_every_task_as_written(monkeypatch) -> None:
    ran = _swept(monkeypatch)
    swept, out_s = run(placed(shared=True), exact=False, sanitize=True)
    assert ran == []  # the first task met an overwrite: no sweep
    one, out_o = run(placed(shared=True), exact=True, sanitize=True)
    js = _json(swept)
    assert js == _json(one) and torch.equal(out_s["acc"], out_o["acc"])
    assert "overwrite" in json.dumps(js)  # the finding is there, once per task as the tasks meet it


def _late(scope: str = "with pl.scope():") -> str:
    """The program as DeriveCallDirections and MaterializeRuntimeScopes leave it: every call with its
    arg_directions (the Group's inner calls too), each trip of the loop in one ``scope`` (a plain
    ``pl.scope()``: no task id, no fence)."""
    dirs = 'attrs={"arg_directions": [pl.adir.input, pl.adir.input, pl.adir.scalar, pl.adir.inout, pl.adir.inout]}'
    text = program()
    for call in (
        "self.blk_aic(x, w, k0, acc, __gm_pipe_buffer",
        "self.blk_aiv(x, w, k0, acc, __gm_pipe_buffer",
        "self.blk(x, w, k0, acc_i, gm",
    ):
        assert call in text
        text = text.replace(call + ")", f"{call}, {dirs})")
    body = text[text.index("            k0: pl.Scalar") : text.index("        return acc_r")]
    return text.replace(body, f"            {scope}\n" + "".join("    " + line + "\n" for line in body.splitlines()))


def test_the_loop_after_derive_call_directions_and_runtime_scopes_is_a_watched_sweep(monkeypatch) -> None:
    text = _late()
    program_ = parse_text(text).program
    (ts,) = plan_task_sweeps(program_).loops.values()  # the sanitizer off: a sweep as before
    assert ts.group == ("blk_aic", "blk_aiv", 2, True) and not ts.watched
    call = ts.call
    (watched,) = plan_task_sweeps(program_, directions={id(call): True}).loops.values()
    assert watched.watched and watched.swept_trips() == range(3, 7)  # tasks 0-2 and 7 as written
    ran = _swept(monkeypatch)
    for sanitize in (False, True):
        ran.clear()
        swept, out_s = run(text, exact=False, sanitize=sanitize)
        assert ran == [True] and swept.status == "pass", swept.to_json()  # type: ignore[attr-defined]
        one, out_o = run(text, exact=True, sanitize=sanitize)
        assert _json(swept) == _json(one) and torch.equal(out_s["acc"], out_o["acc"])


def test_a_scope_with_a_mode_keeps_the_loop_as_written() -> None:
    assert plan_task_sweeps(parse_text(_late()).program).loops
    manual = _late("with pl.scope(mode=pl.ScopeMode.MANUAL):")
    assert not plan_task_sweeps(parse_text(manual).program).loops


def test_a_plain_vector_kernel_as_a_task_is_swept_and_a_dual_dispatch_one_is_not(monkeypatch) -> None:
    # ExpandMixedKernel's vector-only kernels (qwen3's postnorm_block): an AIV kernel a task calls
    aiv = f"""import pypto.language as pl

@pl.program
class Vec:
    {AIV}
    def k(x: pl.Tensor[[16, 256], pl.FP32], k0: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]) -> pl.Tensor[[16, 256], pl.FP32]:
        ATTR
        t: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, k0], [16, 32], [16, 32], target_memory=pl.Mem.Vec)
        u: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.adds(t, 1.0)
        o: pl.Tensor[[16, 256], pl.FP32] = pl.tile.store(u, [0, k0], out)
        return o
    {ORCH}
    def main(self, x: pl.Tensor[[16, 256], pl.FP32], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]) -> pl.Tensor[[16, 256], pl.FP32]:
        for kb, (out_i,) in pl.range(8, init_values=(out,)):
            k0: pl.Scalar[pl.INDEX] = kb * 32
            out_n: pl.Tensor[[16, 256], pl.FP32] = self.k(x, k0, out_i)
            out_r: pl.Tensor[[16, 256], pl.FP32] = pl.yield_(out_n)
        return out_r
"""
    plain = aiv.replace("        ATTR\n", "")
    (ts,) = plan_task_sweeps(parse_text(plain).program).loops.values()
    assert ts.kernel == "k" and ts.group is None
    dual = aiv.replace("ATTR", 'pl.func_attr({"dual_aiv_dispatch": True})')
    assert not plan_task_sweeps(parse_text(dual).program).loops
    x = torch.randn(16, 256)
    ran = _swept(monkeypatch)
    for sanitize in (False, True):
        ran.clear()
        kept: dict[str, torch.Tensor] = {}
        r = run_text(plain, {"x": x, "out": torch.zeros(16, 256)}, {"out": x + 1}, sanitize=sanitize, keep=kept)
        assert r.status == "pass" and torch.equal(kept["out"], x + 1), r.to_json()  # type: ignore[attr-defined]
        assert ran == [True]  # one sweep of every task (no arg_directions: no task records)


# ExpandMixedKernel's form (qwen3 22-23): both dual-dispatch lanes run the same code, each loads its
# task's ordered-sum window of acc, sends x's window to the cube, pops the product and stores the sum
# back. The cube pops the lanes' tile (a no-split pair: it waits for both) before it pushes: both
# lanes' loads come before either lane's store. CUBE_FIRST: a cube that pushes first (a zero tile)
# and pops after lets a lane's store overtake the other lane's load: not swept.
TWO = (
    "x: pl.Tensor[[16, 256], pl.FP32], w: pl.Tensor[[32, 64], pl.FP32], k0: pl.Scalar[pl.INDEX], acc: pl.Out[pl.Tensor[[16, 64], pl.FP32]]"
)
TWO_LANES = f"""import pypto.language as pl

@pl.program
class TwoLanes:
    {AIC}
    def blk_aic({TWO}):
        v2c: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='blk_v2c', size=8192, base=-1)
        c2v: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name='blk_c2v', peer_func='blk_aiv')
        pl.system.aic_initialize_pipe(c2v, v2c, dir_mask=3, slot_size=4096, slot_num=2)
        wt: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(w, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)
        wr: pl.Tile[[32, 64], pl.FP32, pl.Mem.Right] = pl.tile.move(wt, target_memory=pl.Mem.Right)
CUBE
    {AIV}
    def blk_aiv({TWO}) -> pl.Tensor[[16, 64], pl.FP32]:
        pl.func_attr({{"dual_aiv_dispatch": True}})
        c2v: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='blk_c2v', size=8192, base=-1)
        v2c: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name='blk_v2c', peer_func='blk_aic')
        pl.system.aiv_initialize_pipe(c2v, v2c, dir_mask=3, slot_size=4096, slot_num=2)
        prev: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(acc, [0, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
        xs: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, k0], [16, 32], [16, 32], target_memory=pl.Mem.Vec)
        pl.tile.tpush_to_aic(xs, split=0)
        t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=0)
        s: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(prev, t)
        pl.system.tfree_to_aic(t)
        acc_1: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(s, [0, 0], acc)
        return acc_1
    {GROUP}
    def blk({TWO}) -> pl.Tensor[[16, 64], pl.FP32]:
        self.blk_aic(x, w, k0, acc)
        self.blk_aiv(x, w, k0, acc)
        return acc
    {ORCH}
    def main(self, x: pl.Tensor[[16, 256], pl.FP32], w: pl.Tensor[[32, 64], pl.FP32], acc: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        for kb, (acc_i,) in pl.range(8, init_values=(acc,)):
            k0: pl.Scalar[pl.INDEX] = kb * 32
            acc_n: pl.Tensor[[16, 64], pl.FP32] = self.blk(x, w, k0, acc_i)
            acc_r: pl.Tensor[[16, 64], pl.FP32] = pl.yield_(acc_n)
        return acc_r
"""
POP_THEN_PUSH = """        xt: pl.Tile[[16, 32], pl.FP32, pl.Mem.Mat] = pl.tile.tpop_from_aiv(split=0)
        xl: pl.Tile[[16, 32], pl.FP32, pl.Mem.Left] = pl.tile.move(xt, target_memory=pl.Mem.Left)
        pl.system.tfree_to_aiv(xt)
        p: pl.Tile[[16, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(xl, wr)
        pl.tile.tpush_to_aiv(p, split=0)
"""
PUSH_THEN_POP = """        z: pl.Tile[[16, 64], pl.FP32, pl.Mem.Acc] = pl.tile.full([16, 64], dtype=pl.FP32, value=0.0)
        pl.tile.tpush_to_aiv(z, split=0)
        xt: pl.Tile[[16, 32], pl.FP32, pl.Mem.Mat] = pl.tile.tpop_from_aiv(split=0)
        pl.system.tfree_to_aiv(xt)
"""


def test_two_lanes_that_both_write_a_sum_are_swept_when_the_cube_answers_each_load() -> None:
    text = TWO_LANES.replace("CUBE\n", POP_THEN_PUSH)
    (ts,) = plan_task_sweeps(parse_text(text).program).loops.values()
    assert ts.group == ("blk_aic", "blk_aiv", 2, False)  # both lanes run: lane 1 writes too
    g = torch.Generator().manual_seed(5)
    ins = {"x": torch.randn(16, 256, generator=g), "w": torch.randn(32, 64, generator=g), "acc": torch.randn(16, 64, generator=g)}
    for sanitize in (False, True):
        results = []
        for exact in (False, True):
            kept: dict[str, torch.Tensor] = {}
            r = run_text(text, {k: v.clone() for k, v in ins.items()}, {}, exact=exact, sanitize=sanitize, keep=kept)
            results.append((_json(r), kept["acc"]))
        assert results[0][0] == results[1][0] and torch.equal(results[0][1], results[1][1])
        want = ins["acc"].clone()
        for kb in range(8):  # each task's product added once (both lanes store the same sum)
            want = want + ins["x"][:, kb * 32 : kb * 32 + 32] @ ins["w"]
        assert torch.allclose(results[0][1], want, rtol=1e-4, atol=1e-4)


def test_two_lanes_whose_cube_pushes_before_it_pops_keep_the_loop() -> None:
    text = TWO_LANES.replace("CUBE\n", PUSH_THEN_POP)
    assert parse_text(text).program is not None
    assert not plan_task_sweeps(parse_text(text).program).loops
