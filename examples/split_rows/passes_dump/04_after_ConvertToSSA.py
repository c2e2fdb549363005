# pypto.program: SplitRows
import pypto.language as pl

@pl.program
class SplitRows:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def split_rows(self, a__ssa_v0: pl.Tensor[[16, 64], pl.FP32], w__ssa_v0: pl.Tensor[[64, 32], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="ragged"):
            a_tile__ssa_v0: pl.Tensor[[16, 64], pl.FP32, pl.TensorView(valid_shape=[11, 64], stride=[], layout=pl.TensorLayout.ND)] = pl.tensor.slice(a__ssa_v0, [16, 64], [0, 0], [11, 64])
            acc__ssa_v0: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.matmul(a_tile__ssa_v0, w__ssa_v0, a_trans=False, b_trans=False, c_matrix_nz=False, out_dtype=pl.FP32)
            for aiv_id__ssa_v0 in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                shard__ssa_v0: pl.Tensor[[8, 32], pl.FP32] = pl.tensor.aiv_shard(acc__ssa_v0)
                sc__ssa_v0: pl.Tensor[[8, 32], pl.FP32] = pl.tensor.exp(shard__ssa_v0)
                out__ssa_v1: pl.Tensor[[16, 32], pl.FP32] = pl.tensor.assemble(out__ssa_v0, sc__ssa_v0, [aiv_id__ssa_v0 * 8, 0])
        return out__ssa_v0
