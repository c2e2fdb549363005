# pypto.program: ir_used_before_assigned
import pypto.language as pl

@pl.program
class ir_used_before_assigned:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        t: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Vec)
        v: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(u)
        u: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)
        y__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(u, [0, 0], y)
        return y__ssa_v1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        r: pl.Tensor[[32, 64], pl.FP32] = self.kernel(x, y)
        return r
