"""The language's arrays, task ids, launch-shape queries, SPMD barrier, prefetch and dispatch
predicates, on small hand-written programs run end to end (exec/kernels/arrays.py, system_ops.py,
prefetch.py, exec/spmd.py, the predicate in exec/codegen.py and exec/runtime.py)."""

from __future__ import annotations

import pytest
import torch

from pypto_lsp.exec.kernels import KERNELS
from pypto_lsp.exec.kernels.arrays import PlArray
from pypto_lsp.ir.catalogue import LANGUAGE_OPS, OPS
from pypto_lsp.validate.engine import compile_text, run_text
from pypto_lsp.validate.report import ERROR, PASS

HEAD = "# pypto.program: P\nimport pypto.language as pl\n\n@pl.program\nclass P:\n"
INCORE = "    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)\n"
ORCH = "    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)\n"


def test_every_language_op_has_a_kernel_and_runs() -> None:
    for name in LANGUAGE_OPS:
        assert name in KERNELS, name
        assert OPS[name].status == "supported", name


def test_arrays_update_in_place_and_task_id_arrays_start_invalid() -> None:
    arr = KERNELS["array.create"](4, dtype=torch.int32)
    assert isinstance(arr, PlArray) and list(arr) == [0, 0, 0, 0] and arr.dtype == "INT32"
    same = KERNELS["array.update_element"](arr, 1, torch.tensor(7))
    assert same is arr and KERNELS["array.get_element"](arr, 1) == 7  # the device's C-stack array: one array
    tids = KERNELS["array.create"](3, dtype=torch.float32)  # TASK_ID has no torch dtype: float32 stands for it
    assert tids.dtype == "TASK_ID" and list(tids) == [None, None, None]
    assert not KERNELS["system.task_is_valid"](tids[0]) and KERNELS["system.task_invalid"]() is None
    assert KERNELS["system.task_is_valid"](0)
    with pytest.raises(IndexError, match="extent 4"):
        KERNELS["array.get_element"](arr, 4)


def test_launch_shape_is_ascend910b() -> None:
    assert KERNELS["system.available_aiv_count"]() == 48 and KERNELS["system.available_cluster_count"]() == 24


# ---------------------------------------------------------------------- syncall across blocks

T4 = "pl.Tensor[[4, 8], pl.FP32]"


def exchange(before: str = "pl.system.syncall(core_type='aiv_only')") -> str:
    """Block i writes row i of ``mid``, meets the others at the barrier, then copies row (i + 1) % 4 of
    ``mid`` into row i of ``out``: right only when every block wrote before any block reads."""
    return (
        HEAD
        + "    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)\n"
        + f"    def k(a: {T4}, mid: pl.InOut[{T4}], out: pl.InOut[{T4}]) -> {T4}:\n"
        + "        i: pl.Scalar[pl.INDEX] = pl.tile.get_block_idx()\n"
        + "        t: pl.Tile[[1, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [i, 0], [1, 8], [1, 8], target_memory=pl.Mem.Vec)\n"
        + f"        m1: {T4} = pl.tile.store(t, [i, 0], mid)\n"
        + f"        {before}\n"
        + "        j: pl.Scalar[pl.INDEX] = (i + 1) % 4\n"
        + "        u: pl.Tile[[1, 8], pl.FP32, pl.Mem.Vec] = pl.tile.load(mid, [j, 0], [1, 8], [1, 8], target_memory=pl.Mem.Vec)\n"
        + f"        o1: {T4} = pl.tile.store(u, [i, 0], out)\n"
        + "        return out\n"
        + "    @pl.function(type=pl.FunctionType.Spmd)\n"
        + f"    def k_spmd(self, a: {T4}, mid: pl.InOut[{T4}], out: pl.InOut[{T4}]) -> {T4}:\n"
        + f"        r: {T4} = self.k(a, mid, out)\n"
        + "        return out\n"
        + ORCH
        + f"    def main(self, a: {T4}, mid: pl.InOut[{T4}], out: pl.InOut[{T4}]) -> {T4}:\n"
        + f'        r: {T4} = self.k_spmd(a, mid, out, attrs={{"core_num": 4}})\n'
        + "        return r\n"
    )


def _exchange_inputs() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    return {"a": a, "mid": torch.zeros(4, 8), "out": torch.zeros(4, 8)}, {"out": a.roll(-1, 0)}


@pytest.mark.parametrize("sanitize", [False, True])
def test_syncall_is_a_barrier_for_every_block_of_the_launch(sanitize: bool) -> None:
    ins, exp = _exchange_inputs()
    text = exchange()
    comp = compile_text(text, "x.py")
    assert comp.generated is not None and "barrier=True" in comp.generated.source
    fr = run_text(text, ins, exp, filename="x.py", rtol=0, atol=0, sanitize=sanitize)
    assert fr.status == PASS, (fr.error, {k: v.max_abs_diff for k, v in fr.tensors.items()})


def test_without_the_barrier_the_blocks_read_rows_not_written_yet() -> None:
    ins, exp = _exchange_inputs()
    fr = run_text(exchange("pass"), ins, exp, filename="x.py", rtol=0, atol=0, sanitize=False)
    assert fr.status != PASS  # block 0 read row 1 before block 1 wrote it: the test above can fail


@pytest.mark.parametrize(("barrier", "races"), [(True, 0), (False, 1)], ids=["ordered-by-syncall", "no-barrier"])
def test_blocks_writing_the_same_rows_across_the_barrier_do_not_race(barrier: bool, races: int) -> None:
    """After the barrier block i overwrites row (i + 1) % 4 of ``mid``, which block i + 1 wrote before it:
    ordered by the barrier; without it, two blocks of one task write the same elements at once."""
    ins, _exp = _exchange_inputs()
    text = exchange("pl.system.syncall(core_type='aiv_only')" if barrier else "pass").replace(
        f"        o1: {T4} = pl.tile.store(u, [i, 0], out)\n",
        f"        o1: {T4} = pl.tile.store(u, [i, 0], out)\n        m2: {T4} = pl.tile.store(t, [j, 0], mid)\n",
    )
    fr = run_text(text, ins, {}, filename="x.py", sanitize=True)
    assert len([h for h in (fr.memory or {}).get("hazards", []) if h["kind"] == "race"]) == races, fr.memory


def test_a_block_that_skips_the_barrier_leaves_the_others_waiting() -> None:
    ins, exp = _exchange_inputs()
    text = exchange("if i == 0:\n            pl.system.syncall(core_type='aiv_only')")
    fr = run_text(text, ins, exp, filename="x.py", sanitize=False)
    assert fr.status == ERROR and fr.error is not None and fr.error.kind == "deadlock"
    assert "block(s) [0] of 4 wait at the barrier" in fr.error.message


# ---------------------------------------------------------------------- submit, task ids, predicate

R = "pl.Tensor[[4, 4], pl.FP32]"
G = "pl.Tensor[[1, 1], pl.INT32]"


def predicated(form: str) -> str:
    """pypto's tests/st/runtime/scheduling/test_predicated_dispatch.py, small: x := 42, a clobber
    x := 999 dispatched only when gate[0, 0] > 0, then out := x (depending on the clobber's task id)."""
    kernel = (
        INCORE
        + "    def {name}(self, x: pl.Out[{R}]) -> {R}:\n"
        + "        t: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = pl.tile.full([4, 4], dtype=pl.FP32, value={v})\n"
        + "        r: {R} = pl.tile.store(t, [0, 0], x)\n"
        + "        return r\n"
    )
    body = (
        HEAD
        + kernel.format(name="x_producer", R=R, v="42.0")
        + kernel.format(name="clobber", R=R, v="999.0")
        + INCORE
        + f"    def consumer(self, x: {R}, out: pl.Out[{R}]) -> {R}:\n"
        + "        t: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [4, 4], [4, 4], target_memory=pl.Mem.Vec)\n"
        + f"        r: {R} = pl.tile.store(t, [0, 0], out)\n"
        + "        return r\n"
        + ORCH
        + f"    def main(self, x: pl.Out[{R}], gate: {G}, out: pl.Out[{R}]) -> {R}:\n"
        + "        with pl.scope(mode=pl.ScopeMode.MANUAL):\n"
        + form
        + "        return out\n"
    )
    return body


SUBMIT_FORM = (
    f"            s1: pl.Tuple[{R}, pl.Scalar[pl.TASK_ID]] = pl.spmd_submit(self.x_producer, x, core_num=1)\n"
    f"            x1: {R} = s1[0]\n"
    "            t1: pl.Scalar[pl.TASK_ID] = s1[1]\n"
    f"            s2: pl.Tuple[{R}, pl.Scalar[pl.TASK_ID]] = pl.spmd_submit(self.clobber, x1, core_num=1, deps=[t1], "
    "predicate=(pl.tensor.read(gate, [0, 0]) > 0))\n"
    f"            x2: {R} = s2[0]\n"
    "            t2: pl.Scalar[pl.TASK_ID] = s2[1]\n"
    f"            s3: pl.Tuple[{R}, pl.Scalar[pl.TASK_ID]] = pl.spmd_submit(self.consumer, x2, out, core_num=1, deps=[t2])\n"
    f"            out: {R} = s3[0]\n"
)
SCOPE_FORM = (
    "            with pl.spmd(1) as t1:\n"
    f"                x1: {R} = self.x_producer(x)\n"
    "            with pl.spmd(1, deps=[t1], predicate=(pl.tensor.read(gate, [0, 0]) > 0)) as t2:\n"
    f"                x2: {R} = self.clobber(x1)\n"
    "            with pl.spmd(1, deps=[t2]) as t3:\n"
    f"                out: {R} = self.consumer(x2, out)\n"
)


@pytest.mark.parametrize("sanitize", [False, True])
@pytest.mark.parametrize("form", [SUBMIT_FORM, SCOPE_FORM], ids=["spmd_submit", "with-spmd"])
@pytest.mark.parametrize(("gate", "want"), [(0, 42.0), (1, 999.0)], ids=["false-skips", "true-dispatches"])
def test_a_false_predicate_retires_the_task_and_its_id_still_settles(form: str, gate: int, want: float, sanitize: bool) -> None:
    ins = {"x": torch.full((4, 4), -1.0), "gate": torch.full((1, 1), gate, dtype=torch.int32), "out": torch.full((4, 4), -1.0)}
    fr = run_text(predicated(form), ins, {"out": torch.full((4, 4), want)}, filename="p.py", rtol=0, atol=0, sanitize=sanitize)
    assert fr.status == PASS, (fr.error, {k: v.max_abs_diff for k, v in fr.tensors.items()})
    assert not [h for h in (fr.memory or {}).get("hazards", []) if h["kind"] == "race"]


def test_submit_returns_a_valid_task_id_without_the_sanitizer() -> None:
    text = predicated(SUBMIT_FORM).replace(
        f"            out: {R} = s3[0]\n",
        f"            out: {R} = s3[0]\n"
        "            ok: pl.Scalar[pl.BOOL] = pl.system.task_is_valid(t2)\n"
        "            bad: pl.Scalar[pl.TASK_ID] = pl.system.task_invalid()\n"
        "            no: pl.Scalar[pl.BOOL] = pl.system.task_is_valid(bad)\n"
        "            if ok and not no:\n"
        f"                out: {R} = self.clobber(out)\n",
    )
    ins = {"x": torch.full((4, 4), -1.0), "gate": torch.zeros((1, 1), dtype=torch.int32), "out": torch.full((4, 4), -1.0)}
    fr = run_text(text, ins, {"out": torch.full((4, 4), 999.0)}, filename="p.py", rtol=0, atol=0, sanitize=False)
    assert fr.status == PASS, (fr.error, {k: v.max_abs_diff for k, v in fr.tensors.items()})


# ---------------------------------------------------------------------- prefetch


def test_prefetch_changes_no_value() -> None:
    text = (
        HEAD
        + INCORE
        + f"    def k(self, a: {R}, out: pl.Out[{R}]) -> {R}:\n"
        + "        ctx: pl.PrefetchAsyncContext = pl.prefetch.make_context()\n"
        + "        evt: pl.AsyncEvent = pl.prefetch.async_prefetch(a, ctx)\n"
        + "        session: pl.AsyncSession = pl.prefetch.session(ctx)\n"
        + "        done: pl.Scalar[pl.BOOL] = pl.prefetch.wait(evt, session)\n"
        + "        t: pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [0, 0], [4, 4], [4, 4], target_memory=pl.Mem.Vec)\n"
        + f"        r: {R} = pl.tile.store(t, [0, 0], out)\n"
        + "        return r\n"
        + ORCH
        + f"    def main(self, a: {R}, out: pl.Out[{R}]) -> {R}:\n"
        + f"        r: {R} = self.k(a, out)\n"
        + "        return r\n"
    )
    a = torch.randn(4, 4)
    fr = run_text(text, {"a": a, "out": torch.zeros(4, 4)}, {"out": a}, filename="f.py", rtol=0, atol=0)
    assert fr.status == PASS, fr.error
