# pypto.program: HalfExp
import pypto.language as pl

@pl.program
class HalfExp:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def half_exp_incore_0(x__ssa_v0: pl.Tensor[[32, 64], pl.FP32]) -> pl.Tensor[[32, 64], pl.FP32]:
        y_initial: pl.Tensor[[32, 64], pl.FP32] = pl.tensor.create([32, 64], dtype=pl.FP32, layout=pl.TensorLayout.ND)
        for r__idx_v0, (y_iter,) in pl.range(0, 32, 16, init_values=(y_initial,)):
            chunk__ssa_v0: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.slice(x__ssa_v0, [16, 64], [r__idx_v0, 0])
            t__tmp_v0: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.muls(chunk__ssa_v0, 0.5)
            e__ssa_v0: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.exp(t__tmp_v0)
            y_next__ssa_v0: pl.Tensor[[32, 64], pl.FP32] = pl.tensor.assemble(y_iter, e__ssa_v0, [r__idx_v0, 0])
            y_final: pl.Tensor[[32, 64], pl.FP32] = pl.yield_(y_next__ssa_v0)
        return y_final
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def half_exp(self, x__ssa_v0: pl.Tensor[[32, 64], pl.FP32]):
        y_final: pl.Tensor[[32, 64], pl.FP32] = self.half_exp_incore_0(x__ssa_v0)
        return y_final
