# pypto.program: SplitRows
import pypto.language as pl

@pl.program
class SplitRows:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def ragged(a__ssa_v0: pl.Tensor[[16, 64], pl.FP32], w__ssa_v0: pl.Tensor[[64, 32], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        pl.func_attr({"split_aiv": True, "split": pl.SplitMode.UP_DOWN})
        a_tile__ssa_v0_mat: pl.Tile[[16, 64], pl.FP32, pl.Mem.Mat, pl.TileView(valid_shape=[11, 64])] = pl.tile.load(a__ssa_v0, [0, 0], [16, 64], [11, 64], target_memory=pl.Mem.Mat)
        w__ssa_v0_mat: pl.Tile[[64, 32], pl.FP32, pl.Mem.Mat] = pl.tile.load(w__ssa_v0, [0, 0], [64, 32], [64, 32], target_memory=pl.Mem.Mat)
        acc__tile: pl.Tile[[16, 32], pl.FP32, pl.Mem.Acc, pl.TileView(valid_shape=[11, 32])] = pl.tile.matmul(a_tile__ssa_v0_mat, w__ssa_v0_mat)
        for aiv_id__ssa_v0 in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            lane_rows__ssa_v0: pl.Scalar[pl.INDEX] = pl.min(8, 11 - aiv_id__ssa_v0 * 8)
            shard__tile: pl.Tile[[8, 32], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[lane_rows__ssa_v0, 32])] = pl.tile.aiv_shard(acc__tile)
            sc__tile: pl.Tile[[8, 32], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[lane_rows__ssa_v0, 32])] = pl.tile.exp(shard__tile)
            out__ssa_v1: pl.Tensor[[16, 32], pl.FP32] = pl.tile.store(sc__tile, [aiv_id__ssa_v0 * 8, 0], out__ssa_v0)
        return out__ssa_v0
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def split_rows(self, a__ssa_v0: pl.Tensor[[16, 64], pl.FP32], w__ssa_v0: pl.Tensor[[64, 32], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        out__ssa_v2: pl.Tensor[[16, 32], pl.FP32] = self.ragged(a__ssa_v0, w__ssa_v0, out__ssa_v0)
        return out__ssa_v2
