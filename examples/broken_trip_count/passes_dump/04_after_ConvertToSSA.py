# pypto.program: RowChunks
import pypto.language as pl

@pl.program
class RowChunks:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def row_chunks(self, x__ssa_v0: pl.Tensor[[64, 128], pl.FP32], out__ssa_v0: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for i__idx_v0, (out__iter_v1,) in pl.range(8, init_values=(out__ssa_v0,)):
                chunk__ssa_v0: pl.Tensor[[8, 128], pl.FP32] = pl.tensor.slice(x__ssa_v0, [8, 128], [i__idx_v0 * 8, 0])
                scaled__ssa_v0: pl.Tensor[[8, 128], pl.FP32] = pl.tensor.muls(chunk__ssa_v0, 2.0)
                out__ssa_v3: pl.Tensor[[64, 128], pl.FP32] = pl.tensor.assemble(out__iter_v1, scaled__ssa_v0, [i__idx_v0 * 8, 0])
                out__rv_v2: pl.Tensor[[64, 128], pl.FP32] = pl.yield_(out__ssa_v3)
        return out__rv_v2
