# pypto.program: RingPush
import pypto.language as pl

@pl.program
class RingPush:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def push_step(x: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 64], pl.FP32]], inbox: pld.DistributedTensor[[1, 64], pl.FP32], flag: pld.DistributedTensor[[1, 1], pl.INT32]) -> pl.Tensor[[1, 64], pl.FP32]:
        # Push this rank's slice into the next rank's inbox, tell it, wait to be told, read the inbox.
        ctx: pld.CommCtxType = pld.system.get_comm_ctx(inbox)
        my_rank: pl.Scalar[pl.INT32] = pld.system.rank(ctx)
        nranks: pl.Scalar[pl.INT32] = pld.system.nranks(ctx)
        next_rank: pl.Scalar[pl.INDEX] = (pl.cast(my_rank, pl.INDEX) + 1) % pl.cast(nranks, pl.INDEX)
        mine: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [1, 64], [1, 64], target_memory=pl.Mem.Vec)
        pld.tile.remote_store(mine, inbox, next_rank, [0, 0])
        pld.system.notify(flag, next_rank, [0, 0], pl.const(1, pl.INT32), op=1)
        pld.system.wait(flag, [0, 0], pl.const(1, pl.INT32), cmp=1)
        got: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(inbox, [0, 0], [1, 64], [1, 64], target_memory=pl.Mem.Vec)
        y_v1: pl.Tensor[[1, 64], pl.FP32] = pl.tile.store(got, [0, 0], y)
        return y_v1
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def per_rank(self, x: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 64], pl.FP32]], inbox: pld.DistributedTensor[[1, 64], pl.FP32], flag: pld.DistributedTensor[[1, 1], pl.INT32]):
        return self.push_step(x, y, inbox, flag)
    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def ring_push(self, x: pl.Tensor[[4, 1, 64], pl.FP32], y: pl.Out[pl.Tensor[[4, 1, 64], pl.FP32]]) -> pl.Tensor[[4, 1, 64], pl.FP32]:
        inbox_buf: pl.Ptr = pld.tensor.alloc_window_buffer(pl.const(256, pl.INT64))
        flag_buf: pl.Ptr = pld.tensor.alloc_window_buffer(pl.const(4, pl.INT64))
        for r in pl.range(pld.system.world_size()):
            inbox: pld.DistributedTensor[[1, 64], pl.FP32] = pld.tensor.window(inbox_buf, [1, 64], dtype=pl.FP32)
            flag: pld.DistributedTensor[[1, 1], pl.INT32] = pld.tensor.window(flag_buf, [1, 1], dtype=pl.INT32)
            self.per_rank(pl.tensor.slice(x, [1, 1, 64], [r, 0, 0], [], [0]), pl.tensor.slice(y, [1, 1, 64], [r, 0, 0], [], [0]), inbox, flag, device=r)
        return y
