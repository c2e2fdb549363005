# pypto.program: SplitRows
import pypto.language as pl

@pl.program
class SplitRows:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def split_rows(self, a: pl.Tensor[[16, 64], pl.FP32], w: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        # 11 of the window's 16 rows are real: the two vector lanes take 8 rows each,
        # lane 0 holds 8 real rows and lane 1 only 3. out = exp(a @ w) on rows 0-10;
        # rows 11-15 of out keep their value.
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="ragged"):
            a_tile: pl.Tensor[[16, 64], pl.FP32, pl.TensorView(valid_shape=[11, 64], stride=[], layout=pl.TensorLayout.ND)] = pl.tensor.slice(a, [16, 64], [0, 0], [11, 64])
            acc: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.matmul(a_tile, w, a_trans=False, b_trans=False, c_matrix_nz=False, out_dtype=pl.FP32)
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                shard: pl.Tensor[[8, 32], pl.FP32] = pl.tensor.aiv_shard(acc)
                sc: pl.Tensor[[8, 32], pl.FP32] = pl.tensor.exp(shard)
                out: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.assemble(out, sc, [aiv_id * 8, 0])
        return out
