# pypto.program: OddRows
import pypto.language as pl

@pl.program
class OddRows:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def odd(a__ssa_v0: pl.Tensor[[16, 64], pl.FP32], w__ssa_v0: pl.Tensor[[64, 32], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[16, 32], pl.FP32]], rs__ssa_v0: pl.Out[pl.Tensor[[16, 1], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        a_tile__ssa_v0_mat: pl.Tile[[16, 64], pl.FP32, pl.Mem.Mat, pl.TileView(valid_shape=[15, 64])] = pl.tile.load(a__ssa_v0, [0, 0], [16, 64], [15, 64], target_memory=pl.Mem.Mat)
        w__ssa_v0_mat: pl.Tile[[64, 32], pl.FP32, pl.Mem.Mat] = pl.tile.load(w__ssa_v0, [0, 0], [64, 32], [64, 32], target_memory=pl.Mem.Mat)
        acc__tile: pl.Tile[[16, 32], pl.FP32, pl.Mem.Acc, pl.TileView(valid_shape=[15, 32])] = pl.tile.matmul(a_tile__ssa_v0_mat, w__ssa_v0_mat)
        e__tile: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[15, 32])] = pl.tile.exp(acc__tile)
        s_tmp__tile: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.create([16, 32], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        s__tile: pl.Tile[[16, 1], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[15, 1])] = pl.tile.row_sum(e__tile, s_tmp__tile)
        out__ssa_v1: pl.Tensor[[16, 32], pl.FP32] = pl.tile.store(e__tile, [0, 0], out__ssa_v0)
        rs__ssa_v1: pl.Tensor[[16, 1], pl.FP32] = pl.tile.store(s__tile, [0, 0], rs__ssa_v0)
        return out__ssa_v1
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def odd_rows(self, a__ssa_v0: pl.Tensor[[16, 64], pl.FP32], w__ssa_v0: pl.Tensor[[64, 32], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[16, 32], pl.FP32]], rs__ssa_v0: pl.Out[pl.Tensor[[16, 1], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        out__ssa_v1: pl.Tensor[[16, 32], pl.FP32] = self.odd(a__ssa_v0, w__ssa_v0, out__ssa_v0, rs__ssa_v0)
        return out__ssa_v1
