# pypto.program: ir_iter_args_mismatch
import pypto.language as pl

@pl.program
class ir_iter_args_mismatch:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for i, (acc, extra) in pl.range(0, 4, 1, init_values=(y,)):
            t: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Vec)
            y__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(t, [0, 0], acc)
            acc__rv_v2, extra__rv_v2 = pl.yield_(y__ssa_v1, extra)
        return acc__rv_v2

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        r: pl.Tensor[[32, 64], pl.FP32] = self.kernel(x, y)
        return r
