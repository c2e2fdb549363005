# pypto.program: HalfExp
import pypto.language as pl

@pl.program
class HalfExp:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def half_exp(self, x: pl.Tensor[[32, 64], pl.FP32]):
        # y = exp(x * 0.5) in two 16-row chunks, returned (no pl.Out parameter):
        # its golden is the expected bundle's 'return' entry.
        with pl.at(level=pl.Level.CORE_GROUP):
            y_initial: pl.Tensor[[32, 64], pl.FP32] = pl.tensor.create([32, 64], dtype=pl.FP32, layout=pl.TensorLayout.ND)
            for r, (y_iter,) in pl.range(0, 32, 16, init_values=(y_initial,)):
                chunk: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.slice(x, [16, 64], [r, 0])
                e: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.exp(pl.tensor.muls(chunk, 0.5))
                y_next: pl.Tensor[[32, 64], pl.FP32] = pl.tensor.assemble(y_iter, e, [r, 0])
                y_final: pl.Tensor[[32, 64], pl.FP32] = pl.yield_(y_next)
        return y_final
