"""Approach 2, plans: a plan from the registry (mscclpp.plan), checked on the CPU by the verifier, saved and read
back as any MSCCL++ JSON plan would be (mscclpp.ExecutionPlan(path)), and run by mscclpp.Executor on symmetric
buffers (RawGpuBuffer viewed as torch tensors through DLPack), eager and in a CUDA graph.

    torchrun --nproc-per-node 2 examples/torch/plan_based.py
"""

from __future__ import annotations

import os
import sys
import tempfile

import torch

import mscclpp
from _common import against_nccl, check, graph_of, pattern, setup, summed

rank, world, device = setup()
comm = mscclpp.CommGroup.from_env()
executor = mscclpp.Executor(comm)
n = 16 << 10  # float16 elements: 32 KiB
nbytes = n * 2

for name in ("allreduce_oneshot_ll", "allreduce_twoshot"):
    plan = mscclpp.plan(name, world_size=world, message_size=nbytes)
    report = mscclpp.verify(plan, size=nbytes, dtype=mscclpp.DataType.float16, schedules=8)
    if not report.ok:
        print(f"rank {rank}: FAILED: the verifier found {[f.message for f in report.findings]}", flush=True)
        sys.exit(1)
    path = os.path.join(tempfile.gettempdir(), f"mscclpp-example-{name}-{rank}.json")
    plan.save(path)
    plan = mscclpp.ExecutionPlan(path)
    sx, sy = mscclpp.RawGpuBuffer(nbytes), mscclpp.RawGpuBuffer(nbytes)
    x = torch.utils.dlpack.from_dlpack(sx.to_dlpack(data_type=torch.float16))[:n]
    y = torch.utils.dlpack.from_dlpack(sy.to_dlpack(data_type=torch.float16))[:n]
    out = y if not plan.inplace else x
    x.copy_(pattern(n, rank, torch.float16, device))
    torch.cuda.synchronize()
    stream = torch.cuda.current_stream().cuda_stream
    dst = sx if plan.inplace else sy
    executor.execute(plan, sx, dst, nbytes, nbytes, torch.float16, stream=stream)
    check(f"{name} eager", out, summed(n, world, torch.float16, device), rank)
    against_nccl(name, out, lambda: (lambda z: (torch.distributed.all_reduce(z), z)[1])(pattern(n, rank, torch.float16, device)), rank)

    def run() -> None:
        executor.execute(plan, sx, dst, nbytes, nbytes, torch.float16, stream=torch.cuda.current_stream().cuda_stream)

    x.copy_(pattern(n, rank, torch.float16, device))
    g = graph_of(run, warmup=1)
    for i in range(3):
        x.copy_(pattern(n, rank, torch.float16, device))
        torch.cuda.synchronize()
        comm.barrier()
        g.replay()
        check(f"{name} graph replay {i}", out, summed(n, world, torch.float16, device), rank)
    executor.synchronize(torch.cuda.current_stream().cuda_stream)

try:
    executor.execute(mscclpp.plan("allreduce_oneshot_ll", world_size=world + 1), 1, 1, 64, 64, torch.float16)
    print(f"rank {rank}: FAILED: a plan for another world size ran", flush=True)
    sys.exit(1)
except mscclpp.UnsupportedError as e:
    print(f"rank {rank}: a plan for another world size is refused: {e}", flush=True)
executor.close()
comm.close()
torch.distributed.destroy_process_group()
print(f"rank {rank}: plan_based: all checks passed", flush=True)
