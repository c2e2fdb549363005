# pypto.program: MeshAllReduce
import pypto.language as pl

@pl.program
class MeshAllReduce:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def reduce_step(x: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 64], pl.FP32]], data: pld.DistributedTensor[[1, 64], pl.FP32], signal: pld.DistributedTensor[[4, 1], pl.INT32]) -> pl.Tensor[[1, 64], pl.FP32]:
        # Stage this rank's slice in its window, meet every peer, then add the three peers' slices.
        ctx: pld.CommCtxType = pld.system.get_comm_ctx(data)
        my_rank: pl.Scalar[pl.INT32] = pld.system.rank(ctx)
        nranks: pl.Scalar[pl.INT32] = pld.system.nranks(ctx)
        local: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [1, 64], [1, 64], target_memory=pl.Mem.Vec)
        data_v1: pld.DistributedTensor[[1, 64], pl.FP32] = pl.tile.store(local, [0, 0], data)
        for peer in pl.range(4):
            if peer != pl.cast(my_rank, pl.INDEX):
                pld.system.notify(signal, peer, [my_rank, 0], pl.const(0, pl.INT32), op=0)
        for src in pl.range(4):
            if src != pl.cast(my_rank, pl.INDEX):
                pld.system.wait(signal, [src, 0], pl.const(1, pl.INT32), cmp=1)
        p1: pl.Scalar[pl.INDEX] = (pl.cast(my_rank, pl.INDEX) + 1) % pl.cast(nranks, pl.INDEX)
        p2: pl.Scalar[pl.INDEX] = (pl.cast(my_rank, pl.INDEX) + 2) % pl.cast(nranks, pl.INDEX)
        p3: pl.Scalar[pl.INDEX] = (pl.cast(my_rank, pl.INDEX) + 3) % pl.cast(nranks, pl.INDEX)
        r1: pl.Tile[[1, 64], pl.FP32] = pld.tile.remote_load(data_v1, p1, [0, 0], [1, 64])
        r2: pl.Tile[[1, 64], pl.FP32] = pld.tile.remote_load(data_v1, p2, [0, 0], [1, 64])
        r3: pl.Tile[[1, 64], pl.FP32] = pld.tile.remote_load(data_v1, p3, [0, 0], [1, 64])
        s1: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(local, r1)
        s2: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(s1, r2)
        s3: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(s2, r3)
        y_v1: pl.Tensor[[1, 64], pl.FP32] = pl.tile.store(s3, [0, 0], y)
        return y_v1
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def per_rank(self, x: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 64], pl.FP32]], data: pld.DistributedTensor[[1, 64], pl.FP32], signal: pld.DistributedTensor[[4, 1], pl.INT32]):
        return self.reduce_step(x, y, data, signal)
    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def allreduce4(self, x: pl.Tensor[[4, 1, 64], pl.FP32], y: pl.Out[pl.Tensor[[4, 1, 64], pl.FP32]]) -> pl.Tensor[[4, 1, 64], pl.FP32]:
        data_buf: pl.Ptr = pld.tensor.alloc_window_buffer(pl.const(256, pl.INT64))
        signal_buf: pl.Ptr = pld.tensor.alloc_window_buffer(pl.const(16, pl.INT64))
        for r in pl.range(pld.system.world_size()):
            data: pld.DistributedTensor[[1, 64], pl.FP32] = pld.tensor.window(data_buf, [1, 64], dtype=pl.FP32)
            signal: pld.DistributedTensor[[4, 1], pl.INT32] = pld.tensor.window(signal_buf, [4, 1], dtype=pl.INT32)
            self.per_rank(pl.tensor.slice(x, [1, 1, 64], [r, 0, 0], [], [0]), pl.tensor.slice(y, [1, 1, 64], [r, 0, 0], [], [0]), data, signal, device=r)
        return y
