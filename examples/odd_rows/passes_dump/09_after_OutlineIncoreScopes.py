# pypto.program: OddRows
import pypto.language as pl

@pl.program
class OddRows:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def odd(a__ssa_v0: pl.Tensor[[16, 64], pl.FP32], w__ssa_v0: pl.Tensor[[64, 32], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[16, 32], pl.FP32]], rs__ssa_v0: pl.Out[pl.Tensor[[16, 1], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        a_tile__ssa_v0: pl.Tensor[[16, 64], pl.FP32, pl.TensorView(valid_shape=[15, 64], stride=[], layout=pl.TensorLayout.ND)] = pl.tensor.slice(a__ssa_v0, [16, 64], [0, 0], [15, 64])
        acc__ssa_v0: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.matmul(a_tile__ssa_v0, w__ssa_v0, a_trans=False, b_trans=False, c_matrix_nz=False, out_dtype=pl.FP32)
        e__ssa_v0: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.exp(acc__ssa_v0)
        s__ssa_v0: pl.Tensor[[16, 1], pl.FP32] = pl.tensor.row_sum(e__ssa_v0)
        out__ssa_v1: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.assemble(out__ssa_v0, e__ssa_v0, [0, 0])
        rs__ssa_v1: pl.Tensor[[16, 1], pl.FP32] = pl.tensor.assemble(rs__ssa_v0, s__ssa_v0, [0, 0])
        return out__ssa_v1
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def odd_rows(self, a__ssa_v0: pl.Tensor[[16, 64], pl.FP32], w__ssa_v0: pl.Tensor[[64, 32], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[16, 32], pl.FP32]], rs__ssa_v0: pl.Out[pl.Tensor[[16, 1], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        out__ssa_v1: pl.Tensor[[16, 32], pl.FP32] = self.odd(a__ssa_v0, w__ssa_v0, out__ssa_v0, rs__ssa_v0)
        return out__ssa_v1
