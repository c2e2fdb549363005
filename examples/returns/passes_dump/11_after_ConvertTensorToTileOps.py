# pypto.program: HalfExp
import pypto.language as pl

@pl.program
class HalfExp:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def half_exp_incore_0(x__ssa_v0: pl.Tensor[[32, 64], pl.FP32], ret0__out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for r__idx_v0, (y_iter,) in pl.range(0, 32, 16, init_values=(ret0__out,)):
            chunk__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x__ssa_v0, [r__idx_v0, 0], [16, 64], [16, 64], target_memory=pl.Mem.Vec)
            t__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(chunk__tile, 0.5)
            e__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t__tile)
            y_next__ssa_v0: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(e__tile, [r__idx_v0, 0], y_iter)
            y_final: pl.Tensor[[32, 64], pl.FP32] = pl.yield_(y_next__ssa_v0)
        return y_final
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def half_exp(self, x__ssa_v0: pl.Tensor[[32, 64], pl.FP32]):
        ret0__out: pl.Tensor[[32, 64], pl.FP32] = pl.tensor.create([32, 64], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        y_final: pl.Tensor[[32, 64], pl.FP32] = self.half_exp_incore_0(x__ssa_v0, ret0__out)
        return y_final
