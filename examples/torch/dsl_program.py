"""Approach 4, MSCCL++'s Python DSL: an all-gather (the DSL quick start's) and a two-shot all-reduce written with
``mscclpp.language``, compiled by ``mscclpp.compile``, checked on the CPU by the verifier and run by
``mscclpp.Executor`` on symmetric buffers (RawGpuBuffer viewed as torch tensors), every value checked.

    torchrun --nproc-per-node 2 examples/torch/dsl_program.py
"""

from __future__ import annotations

from mscclpp.language import (
    AlgoSpec,
    AllGather,
    AllReduce,
    Buffer,
    CollectiveProgram,
    MemoryChannel,
    Rank,
    SyncType,
)


def allgather(spec):
    """In place: every rank puts its piece of the output into every peer's output, between two handshakes."""
    n = spec.world_size
    with CollectiveProgram.from_spec(spec) as prog:
        for src in range(n):
            for dst in range(n):
                if src != dst:
                    ch = MemoryChannel(dst, src)
                    ch.signal(tb=0, relaxed=True)
                    ch.wait(tb=0, data_sync=SyncType.after, relaxed=True)
                    ch.put(Rank(dst).get_output_buffer()[src:src + 1], Rank(src).get_output_buffer()[src:src + 1], tb=0)
                    ch.signal(tb=0, data_sync=SyncType.before)
                    ch.wait(tb=0, data_sync=SyncType.after)
    return prog


def two_shot_allreduce(spec):
    """In place: rank q puts chunk r of its input into rank r's scratch slot q; rank r reduces chunk r and puts the
    result into chunk r of every rank's input."""
    n = spec.world_size
    with CollectiveProgram.from_spec(spec) as prog:
        scratch = [Buffer(r, n) for r in range(n)]
        ch = {(r, q): MemoryChannel(q, r) for r in range(n) for q in range(n) if q != r}
        for r in range(n):
            inp = Rank(r).get_input_buffer()
            for q in range(n):
                if q != r:
                    ch[r, q].signal(tb=q, relaxed=True)
                    ch[r, q].wait(tb=q, data_sync=SyncType.after, relaxed=True)
                    ch[r, q].put(scratch[q][r:r + 1], inp[q:q + 1], tb=q)
                    ch[r, q].signal(tb=q, data_sync=SyncType.before)
        for r in range(n):
            inp = Rank(r).get_input_buffer()
            peers = [q for q in range(n) if q != r]
            for q in peers:
                ch[r, q].wait(tb=q, data_sync=SyncType.after)
            Rank(r).barrier(tb_list=peers)
            Rank(r).reduce(inp[r:r + 1], [scratch[r][q:q + 1] for q in peers], tb=peers[0])
            Rank(r).barrier(tb_list=peers)
            for q in peers:
                ch[r, q].put(Rank(q).get_input_buffer()[r:r + 1], inp[r:r + 1], tb=q)
                ch[r, q].signal(tb=q, data_sync=SyncType.before)
        for r in range(n):
            for q in range(n):
                if q != r:
                    ch[r, q].wait(tb=q, data_sync=SyncType.after)
    return prog


def spec(name, collective, world):
    return AlgoSpec(name=name, collective=collective, nranks_per_node=world, world_size=world, in_place=True,
                    instances=1, protocol="Simple")


def main() -> None:
    import sys

    import torch

    import mscclpp
    from _common import check, pattern, setup, summed

    rank, world, device = setup()
    comm = mscclpp.CommGroup.from_env()
    executor = mscclpp.Executor(comm)
    stream = torch.cuda.current_stream().cuda_stream
    piece = 64 << 10  # float16 elements per rank's piece: 128 KiB
    for name, algo, collective in (("dsl_allgather", allgather, AllGather(world, 1, True)),
                                   ("dsl_allreduce", two_shot_allreduce, AllReduce(world, 1, True))):
        plan = mscclpp.compile(algo=algo, algo_spec=spec(name, collective, world), rank=rank)
        report = mscclpp.verify(plan, schedules=8)
        if not report.ok:
            print(f"rank {rank}: FAILED: the verifier found {[f.message for f in report.findings]}", flush=True)
            sys.exit(1)
        n = piece * world
        buf = mscclpp.RawGpuBuffer(n * 2)
        out = torch.utils.dlpack.from_dlpack(buf.to_dlpack(data_type=torch.float16))[:n]
        if name == "dsl_allgather":
            out.zero_()
            mine = out[rank * piece:(rank + 1) * piece]
            mine.copy_(pattern(piece, rank, torch.float16, device))
            want = torch.cat([pattern(piece, r, torch.float16, device) for r in range(world)])
            inp, in_bytes = mine, piece * 2
        else:
            out.copy_(pattern(n, rank, torch.float16, device))
            want = summed(n, world, torch.float16, device)
            inp, in_bytes = out, n * 2
        torch.cuda.synchronize()
        comm.barrier()
        executor.execute(plan, inp, out, in_bytes, n * 2, torch.float16, stream=stream)
        executor.synchronize(stream)
        check(f"{name} through Executor", out, want, rank)
    print(f"rank {rank}: the DSL's all-gather and all-reduce ran and were checked", flush=True)


if __name__ == "__main__":
    main()
