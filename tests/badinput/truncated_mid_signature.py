# pypto.program: truncated_mid_signature
import pypto.language as pl

@pl.program
class truncated_mid_signature:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tens