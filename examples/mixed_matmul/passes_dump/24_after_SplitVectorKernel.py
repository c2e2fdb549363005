# pypto.program: ScaledMatmul
import pypto.language as pl

@pl.program
class ScaledMatmul:
    @pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)
    def mm_scale_aic(a__ssa_v0: pl.Tensor[[32, 64], pl.BF16], b__ssa_v0: pl.Tensor[[64, 64], pl.BF16], c__ssa_v0: pl.Out[pl.Tensor[[32, 64], pl.FP32]], __gm_pipe_buffer: pl.Out[pl.Tensor[[1], pl.FP32]]):
        pl.func_attr({"split_aiv": True, "split": pl.SplitMode.UP_DOWN})
        mm_scale_c2v_slot_buffer_import: pl.Scalar[pl.INT32] = pl.system.import_peer_buffer(name='mm_scale_c2v_slot_buffer', peer_func='mm_scale_aiv')
        pl.system.aic_initialize_pipe(mm_scale_c2v_slot_buffer_import, pl.const(0, pl.INT32), dir_mask=1, slot_size=8192, slot_num=2)
        a__ssa_v0_mat: pl.Tile[[32, 64], pl.BF16, pl.Mem.Mat] = pl.tile.load(a__ssa_v0, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)
        b__ssa_v0_mat: pl.Tile[[64, 64], pl.BF16, pl.Mem.Mat] = pl.tile.load(b__ssa_v0, [0, 0], [64, 64], [64, 64], target_memory=pl.Mem.Mat)
        a__ssa_v0_mat_Left: pl.Tile[[32, 64], pl.BF16, pl.Mem.Left] = pl.tile.move(a__ssa_v0_mat, target_memory=pl.Mem.Left)
        b__ssa_v0_mat_Right: pl.Tile[[64, 64], pl.BF16, pl.Mem.Right] = pl.tile.move(b__ssa_v0_mat, target_memory=pl.Mem.Right)
        acc__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a__ssa_v0_mat_Left, b__ssa_v0_mat_Right)
        pl.tile.tpush_to_aiv(acc__tile, split=1)
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def mm_scale_aiv(a__ssa_v0: pl.Tensor[[32, 64], pl.BF16], b__ssa_v0: pl.Tensor[[64, 64], pl.BF16], c__ssa_v0: pl.Out[pl.Tensor[[32, 64], pl.FP32]], __gm_pipe_buffer: pl.Out[pl.Tensor[[1], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        pl.func_attr({"split_aiv": True, "split": pl.SplitMode.UP_DOWN, "dual_aiv_dispatch": True})
        subblock_idx: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()
        mm_scale_c2v_slot_buffer: pl.Scalar[pl.INT32] = pl.system.reserve_buffer(name='mm_scale_c2v_slot_buffer', size=16384, base=-1)
        pl.system.aiv_initialize_pipe(mm_scale_c2v_slot_buffer, pl.const(0, pl.INT32), dir_mask=1, slot_size=8192, slot_num=2)
        acc__tile_Vec: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(split=1)
        t__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(acc__tile_Vec, 2.0)
        pl.system.tfree_to_aic(acc__tile_Vec)
        c__tile: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0 + subblock_idx * 16, 0], c__ssa_v0)
        return c__ssa_v0
    @pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)
    def mm_scale(a__ssa_v0: pl.Tensor[[32, 64], pl.BF16], b__ssa_v0: pl.Tensor[[64, 64], pl.BF16], c__ssa_v0: pl.Out[pl.Tensor[[32, 64], pl.FP32]], __gm_pipe_buffer: pl.Out[pl.Tensor[[1], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        pl.func_attr({"split": pl.SplitMode.UP_DOWN, "split_aiv": True})
        self.mm_scale_aic(a__ssa_v0, b__ssa_v0, c__ssa_v0, __gm_pipe_buffer)
        self.mm_scale_aiv(a__ssa_v0, b__ssa_v0, c__ssa_v0, __gm_pipe_buffer)
        return c__ssa_v0
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def scaled_matmul(self, a__ssa_v0: pl.Tensor[[32, 64], pl.BF16], b__ssa_v0: pl.Tensor[[64, 64], pl.BF16], c__ssa_v0: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        gm_pipe_buffer_0: pl.Tensor[[1], pl.FP32] = pl.tensor.create([1], dtype=pl.FP32, layout=pl.TensorLayout.ND, manual_dep=True)
        c__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.mm_scale(a__ssa_v0, b__ssa_v0, c__ssa_v0, gm_pipe_buffer_0)
        return c__ssa_v1
