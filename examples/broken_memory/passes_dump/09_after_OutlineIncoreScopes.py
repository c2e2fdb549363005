# pypto.program: ExpAddMul
import pypto.language as pl

@pl.program
class ExpAddMul:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def exp_add_mul_incore_0(x__ssa_v0: pl.Tensor[[64, 128], pl.FP32], y__ssa_v0: pl.Tensor[[64, 128], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        for r__idx_v0, (out__iter_v1,) in pl.range(0, 64, 32, init_values=(out__ssa_v0,)):
            x_chunk__ssa_v0: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.slice(x__ssa_v0, [32, 128], [r__idx_v0, 0])
            y_chunk__ssa_v0: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.slice(y__ssa_v0, [32, 128], [r__idx_v0, 0])
            t__tmp_v0: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.adds(x_chunk__ssa_v0, 1.0)
            t__tmp_v1: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.exp(t__tmp_v0)
            prod__ssa_v0: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.mul(t__tmp_v1, y_chunk__ssa_v0)
            out__ssa_v3: pl.Tensor[[64, 128], pl.FP32] = pl.tensor.assemble(out__iter_v1, prod__ssa_v0, [r__idx_v0, 0])
            out__rv_v2: pl.Tensor[[64, 128], pl.FP32] = pl.yield_(out__ssa_v3)
        return out__ssa_v0
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def exp_add_mul(self, x__ssa_v0: pl.Tensor[[64, 128], pl.FP32], y__ssa_v0: pl.Tensor[[64, 128], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        out__rv_v2: pl.Tensor[[64, 128], pl.FP32] = self.exp_add_mul_incore_0(x__ssa_v0, y__ssa_v0, out__ssa_v0)
        return out__rv_v2
