# pypto.program: GatherRows
import pypto.language as pl

@pl.program
class GatherRows:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def gather_rows(self, x__ssa_v0: pl.Tensor[[64, 128], pl.FP32], rows__ssa_v0: pl.Tensor[[4], pl.INT32], out__ssa_v0: pl.Out[pl.Tensor[[4, 128], pl.FP32]]) -> pl.Tensor[[4, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for i__idx_v0, (out__iter_v1,) in pl.range(0, 4, 1, init_values=(out__ssa_v0,)):
                r__ssa_v0: pl.Scalar[pl.INT32] = pl.tensor.read(rows__ssa_v0, [i__idx_v0])
                row__ssa_v0: pl.Tensor[[1, 128], pl.FP32] = pl.tensor.slice(x__ssa_v0, [1, 128], [r__ssa_v0, 0])
                scaled__ssa_v0: pl.Tensor[[1, 128], pl.FP32] = pl.tensor.muls(row__ssa_v0, 2.0)
                out__ssa_v2: pl.Tensor[[4, 128], pl.FP32] = pl.tensor.assemble(out__iter_v1, scaled__ssa_v0, [i__idx_v0, 0])
                out__rv_v2: pl.Tensor[[4, 128], pl.FP32] = pl.yield_(out__ssa_v2)
        return out__rv_v2
