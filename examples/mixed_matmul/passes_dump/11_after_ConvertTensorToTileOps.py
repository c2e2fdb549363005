# pypto.program: ScaledMatmul
import pypto.language as pl

@pl.program
class ScaledMatmul:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def mm_scale(a__ssa_v0: pl.Tensor[[32, 64], pl.BF16], b__ssa_v0: pl.Tensor[[64, 64], pl.BF16], c__ssa_v0: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        pl.func_attr({"split": pl.SplitMode.UP_DOWN})
        a__ssa_v0_mat: pl.Tile[[32, 64], pl.BF16, pl.Mem.Mat] = pl.tile.load(a__ssa_v0, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat, attrs={"__compiler_tensor_to_tile_mat_bridge": True})
        b__ssa_v0_mat: pl.Tile[[64, 64], pl.BF16, pl.Mem.Mat] = pl.tile.load(b__ssa_v0, [0, 0], [64, 64], [64, 64], target_memory=pl.Mem.Mat, attrs={"__compiler_tensor_to_tile_mat_bridge": True})
        acc__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a__ssa_v0_mat, b__ssa_v0_mat)
        t__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(acc__tile, 2.0)
        c__tile: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], c__ssa_v0)
        return c__ssa_v0
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def scaled_matmul(self, a__ssa_v0: pl.Tensor[[32, 64], pl.BF16], b__ssa_v0: pl.Tensor[[64, 64], pl.BF16], c__ssa_v0: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        c__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.mm_scale(a__ssa_v0, b__ssa_v0, c__ssa_v0)
        return c__ssa_v1
