# pypto.program: ScaleShift
import pypto.language as pl

@pl.program
class ScaleShift:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def scale_incore_0(x__ssa_v0: pl.Tensor[[32, 64], pl.FP32], mid__ssa_v0: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        x_tile__ssa_v0: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x__ssa_v0, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Vec)
        twice__ssa_v0: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(x_tile__ssa_v0, 2.0)
        mid__store: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(twice__ssa_v0, [0, 0], mid__ssa_v0)
        return mid__ssa_v0
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def shift_incore_1(mid__ssa_v0: pl.Tensor[[32, 64], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        m_tile__ssa_v0: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(mid__ssa_v0, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Vec)
        shifted__ssa_v0: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.adds(m_tile__ssa_v0, 1.0)
        out__store: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(shifted__ssa_v0, [0, 0], out__ssa_v0)
        return out__ssa_v0
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def scale_shift(self, x__ssa_v0: pl.Tensor[[32, 64], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        mid__ssa_v0: pl.Tensor[[32, 64], pl.FP32] = pl.tensor.create([32, 64], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        mid__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.scale_incore_0(x__ssa_v0, mid__ssa_v0)
        out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.shift_incore_1(mid__ssa_v1, out__ssa_v0)
        return out__ssa_v1
