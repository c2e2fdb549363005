# pypto.program: GatherRows
import pypto.language as pl

@pl.program
class GatherRows:
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def gather_rows(self, x: pl.Tensor[[64, 128], pl.FP32], rows: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[4, 128], pl.FP32]]) -> pl.Tensor[[4, 128], pl.FP32]:
        # out[i] = x[rows[i]] * 2.0: rows is an index table; without goldens its values come from
        # how it is used (a row offset of x) or from pypto-lsp.toml's [cases.generate].
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(0, 4, 1):
                r: pl.Scalar[pl.INT32] = pl.tensor.read(rows, [i])
                row: pl.Tensor[[1, 128], pl.FP32] = pl.tensor.slice(x, [1, 128], [r, 0])
                scaled: pl.Tensor[[1, 128], pl.FP32] = pl.tensor.muls(row, 2.0)
                out: pl.Tensor[[4, 128], pl.FP32] = pl.tensor.assemble(out, scaled, [i, 0])
        return out
