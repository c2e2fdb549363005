# pypto.program: ExpAddMul
import pypto.language as pl

@pl.program
class ExpAddMul:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def exp_add_mul_incore_0(x__ssa_v0: pl.Tensor[[64, 128], pl.FP32], y__ssa_v0: pl.Tensor[[64, 128], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        for r__idx_v0, (out__iter_v1,) in pl.range(0, 64, 32, init_values=(out__ssa_v0,)):
            x_chunk__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(x__ssa_v0, [r__idx_v0, 0], [32, 128], [32, 128], target_memory=pl.Mem.Vec)
            y_chunk__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(y__ssa_v0, [r__idx_v0, 0], [32, 128], [32, 128], target_memory=pl.Mem.Vec)
            t__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.adds(x_chunk__tile, 1.0)
            t__tile_1: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t__tile)
            prod__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.mul(t__tile_1, y_chunk__tile)
            out__tile: pl.Tensor[[64, 128], pl.FP32] = pl.tile.store(prod__tile, [r__idx_v0, 0], out__iter_v1)
            out__rv_v2: pl.Tensor[[64, 128], pl.FP32] = pl.yield_(out__tile)
        return out__ssa_v0
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def exp_add_mul(self, x__ssa_v0: pl.Tensor[[64, 128], pl.FP32], y__ssa_v0: pl.Tensor[[64, 128], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        out__rv_v2: pl.Tensor[[64, 128], pl.FP32] = self.exp_add_mul_incore_0(x__ssa_v0, y__ssa_v0, out__ssa_v0)
        return out__rv_v2
