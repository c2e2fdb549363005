# pypto.program: ScaledSoftmax
import pypto.language as pl

@pl.program
class ScaledSoftmax:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def scaled_softmax(self, scores: pl.Tensor[[32, 128], pl.FP32], probs: pl.Out[pl.Tensor[[32, 128], pl.FP32]]) -> pl.Tensor[[32, 128], pl.FP32]:
        # probs = softmax(scores * 0.125) along each row (the scale is 1/sqrt(64)).
        with pl.at(level=pl.Level.CORE_GROUP):
            s_tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(scores, [0, 0], [32, 128], [32, 128], target_memory=pl.Mem.Vec)
            scaled: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.muls(s_tile, 0.125)
            max_scratch: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.create([32, 128], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            mx: pl.Tile[[32, 1], pl.FP32, pl.Mem.Vec] = pl.tile.row_max(scaled, max_scratch)
            centered: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.row_expand_sub(scaled, mx)
            e: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.exp(centered)
            sum_scratch: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.create([32, 128], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            denom: pl.Tile[[32, 1], pl.FP32, pl.Mem.Vec] = pl.tile.row_sum(e, sum_scratch)
            p: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.row_expand_div(e, denom)
            pl.tile.store(p, [0, 0], probs)
        return probs
