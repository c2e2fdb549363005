# pypto.program: ir_if_yield_mismatch
import pypto.language as pl

@pl.program
class ir_if_yield_mismatch:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        if pl.tensor.dim(x, 0) > 16:
            r1: pl.Tensor[[32, 64], pl.FP32] = pl.yield_(x)
        else:
            r1, r2 = pl.yield_(x, y)
        return r1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        r: pl.Tensor[[32, 64], pl.FP32] = self.kernel(x, y)
        return r
