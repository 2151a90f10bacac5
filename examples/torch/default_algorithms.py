"""Approach 1, default algorithms: mscclpp.default_algorithms(comm) gives the registry's algorithms; each runs on
raw device pointers (tensor.data_ptr()) and torch's stream handle. Staged (any tensors) and zero copy on
RawGpuBuffers (symmetric_memory=True), eager and in a CUDA graph, checked against a reference (and NCCL with a
GPU per rank).

    torchrun --nproc-per-node 2 examples/torch/default_algorithms.py
"""

from __future__ import annotations

import sys

import torch

import mscclpp
from _common import against_nccl, check, graph_of, pattern, setup, summed

rank, world, device = setup()
comm = mscclpp.CommGroup.from_env()
algos = mscclpp.default_algorithms(comm, scratch=16 << 20)
if rank == 0:
    for a in algos:
        print(f"{a.name:28} {a.collective:14} range={a.message_range} tags={a.tags}", flush=True)
allreduce = [a for a in algos if a.collective == "allreduce" and "nvls" not in a.tags]
if not allreduce:
    print("FAILED: no all-reduce algorithm for this world size", flush=True)
    sys.exit(1)
stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
ran = 0
for algo in allreduce:
    for n in (4096, 64 << 10):
        nbytes = n * 2
        lo, hi = algo.message_range
        if nbytes < lo or (hi is not None and nbytes > hi):
            continue
        x = pattern(n, rank, torch.float16, device)
        y = torch.empty_like(x)
        name = f"{algo.name} {nbytes} B"
        try:
            algo.execute(comm, x.data_ptr(), y.data_ptr(), nbytes, nbytes, torch.float16, stream=stream())
        except mscclpp.UnsupportedError as e:
            print(f"rank {rank}: {name}: unsupported here: {e}", flush=True)
            continue
        check(f"{name} staged eager", y, summed(n, world, torch.float16, device), rank)
        against_nccl(name, y, lambda: (lambda z: (torch.distributed.all_reduce(z), z)[1])(pattern(n, rank, torch.float16, device)), rank)
        g = graph_of(lambda: algo.execute(comm, x, y, nbytes, nbytes, torch.float16, stream=stream()), warmup=1)
        y.zero_()
        g.replay()
        check(f"{name} staged graph", y, summed(n, world, torch.float16, device), rank)
        # Zero copy: symmetric buffers, allocated the same way on every rank.
        sx, sy = mscclpp.RawGpuBuffer(nbytes), mscclpp.RawGpuBuffer(nbytes)
        tx = torch.utils.dlpack.from_dlpack(sx.to_dlpack(data_type=torch.float16))[:n]
        ty = torch.utils.dlpack.from_dlpack(sy.to_dlpack(data_type=torch.float16))[:n]
        tx.copy_(pattern(n, rank, torch.float16, device))
        torch.cuda.synchronize()
        comm.barrier()
        # Zero copy runs the plan on the buffers as given: one buffer means in place.
        dst, result = (sx, tx) if algo.buffer_mode == "in_place" else (sy, ty)
        algo.execute(comm, sx, dst, nbytes, nbytes, mscclpp.DataType.float16, stream=stream(), symmetric_memory=True)
        check(f"{name} zero-copy eager", result, summed(n, world, torch.float16, device), rank)
        ran += 1
if ran == 0:
    print(f"rank {rank}: FAILED: no algorithm ran", flush=True)
    sys.exit(1)
# An unsupported request is reported, not run.
try:
    allreduce[0].execute(comm, 1, 1, 6, 6, torch.float32)
    print(f"rank {rank}: FAILED: a size that is not whole elements was accepted", flush=True)
    sys.exit(1)
except mscclpp.Error as e:
    print(f"rank {rank}: bad input refused: {e}", flush=True)
comm.close()
torch.distributed.destroy_process_group()
print(f"rank {rank}: default_algorithms: {ran} algorithm/size pairs passed", flush=True)
