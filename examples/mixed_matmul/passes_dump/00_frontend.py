# pypto.program: ScaledMatmul
import pypto.language as pl

@pl.program
class ScaledMatmul:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def scaled_matmul(self, a: pl.Tensor[[32, 64], pl.BF16], b: pl.Tensor[[64, 64], pl.BF16], c: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        # c = (a @ b) * 2.0 in one mixed scope: the matmul runs on the cube
        # core (AIC), the scaling on the two vector cores (AIV), each vector
        # core taking half of the rows (UP_DOWN split).
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mm_scale"):
            acc: pl.Tensor[[32, 64], pl.FP32] = pl.tensor.matmul(a, b, a_trans=False, b_trans=False, c_matrix_nz=False, out_dtype=pl.FP32)
            c: pl.Tensor[[32, 64], pl.FP32] = pl.tensor.assemble(c, pl.tensor.muls(acc, 2.0), [0, 0])
        return c
