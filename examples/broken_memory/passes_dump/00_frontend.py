# pypto.program: ExpAddMul
import pypto.language as pl

@pl.program
class ExpAddMul:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def exp_add_mul(self, x: pl.Tensor[[64, 128], pl.FP32], y: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        # out = exp(x + 1.0) * y, computed in two 32-row chunks.
        # Each iteration slices one chunk of x and y and writes its result
        # back into the same rows of out.
        with pl.at(level=pl.Level.CORE_GROUP):
            for r in pl.range(0, 64, 32):
                x_chunk: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.slice(x, [32, 128], [r, 0])
                y_chunk: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.slice(y, [32, 128], [r, 0])
                prod: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.mul(pl.tensor.exp(pl.tensor.adds(x_chunk, 1.0)), y_chunk)
                out: pl.Tensor[[64, 128], pl.FP32] = pl.tensor.assemble(out, prod, [r, 0])
        return out
