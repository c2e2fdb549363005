# pypto.program: ExpAddMul
import pypto.language as pl

@pl.program
class ExpAddMul:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def exp_add_mul(self, x__ssa_v0: pl.Tensor[[64, 128], pl.FP32], y__ssa_v0: pl.Tensor[[64, 128], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        # out = exp(x + 1.0) * y, computed in two 32-row chunks.
        # Each iteration slices one chunk of x and y and writes its result
        # back into the same rows of out.
        with pl.at(level=pl.Level.CORE_GROUP):
            for r__idx_v0, (out__iter_v1,) in pl.range(0, 64, 32, init_values=(out__ssa_v0,)):
                x_chunk__ssa_v0: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.slice(x__ssa_v0, [32, 128], [r__idx_v0, 0])
                y_chunk__ssa_v0: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.slice(y__ssa_v0, [32, 128], [r__idx_v0, 0])
                prod__ssa_v0: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.mul(pl.tensor.exp(pl.tensor.adds(x_chunk__ssa_v0, 1.0)), y_chunk__ssa_v0)
                out__ssa_v3: pl.Tensor[[64, 128], pl.FP32] = pl.tensor.assemble(out__iter_v1, prod__ssa_v0, [r__idx_v0, 0])
                out__rv_v2: pl.Tensor[[64, 128], pl.FP32] = pl.yield_(out__ssa_v3)
        return out__rv_v2
