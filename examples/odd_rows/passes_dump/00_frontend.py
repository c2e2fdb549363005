# pypto.program: OddRows
import pypto.language as pl

@pl.program
class OddRows:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def odd_rows(self, a: pl.Tensor[[16, 64], pl.FP32], w: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]], rs: pl.Out[pl.Tensor[[16, 1], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        # Only 15 of the window's 16 rows are real (valid_shape): out = exp(a @ w) and
        # rs = its row sums are written for rows 0-14; row 15 of out and rs keeps its value.
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="odd"):
            a_tile: pl.Tensor[[16, 64], pl.FP32, pl.TensorView(valid_shape=[15, 64], stride=[], layout=pl.TensorLayout.ND)] = pl.tensor.slice(a, [16, 64], [0, 0], [15, 64])
            acc: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.matmul(a_tile, w, a_trans=False, b_trans=False, c_matrix_nz=False, out_dtype=pl.FP32)
            e: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.exp(acc)
            s: pl.Tensor[[16, 1], pl.FP32] = pl.tensor.row_sum(e)
            out: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.assemble(out, e, [0, 0])
            rs: pl.Tensor[[16, 1], pl.FP32] = pl.tensor.assemble(rs, s, [0, 0])
        return out
