"""Approach 2, plans: a plan from the registry (mscclpp.plan), checked on the CPU by the verifier, saved and read
back as any MSCCL++ JSON plan would be (mscclpp.ExecutionPlan(path)), and run by mscclpp.Executor on symmetric
buffers (RawGpuBuffer viewed as torch tensors through DLPack), eager and in a CUDA graph; then a plan registered
with mscclpp.plan.register and picked by a selector, run by mscclpp.torch.CustomizedComm before its own programs.

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

# A registered plan (mscclpp.plan.register) that its selector picks runs first in mscclpp.torch.CustomizedComm,
# zero copy on the tensors (symmetric buffers here: every rank allocates them alike).
import mscclpp.torch as mt  # noqa: E402

custom = mt.CustomizedComm(comm)
handle = mscclpp.plan.register(mscclpp.plan("allreduce_twoshot", world_size=world), tags=["example"])
mscclpp.plan.set_selector(lambda plans, req: next((p for p in plans if "example" in p.tags), None))
sz = mscclpp.RawGpuBuffer(nbytes)
z = torch.utils.dlpack.from_dlpack(sz.to_dlpack(data_type=torch.float16))[:n]
z.copy_(pattern(n, rank, torch.float16, device))
torch.cuda.synchronize()
custom.all_reduce(z)
check("registered plan through CustomizedComm", z, summed(n, world, torch.float16, device), rank)
if custom.stats["registered_plan"] != 1:
    print(f"rank {rank}: FAILED: the registered plan did not run ({custom.stats})", flush=True)
    sys.exit(1)
mscclpp.plan.set_selector(lambda plans, req: None)  # declined: the library's own programs run
z.copy_(pattern(n, rank, torch.float16, device))
custom.all_reduce(z)
check("selector declined: the library's own program", z, summed(n, world, torch.float16, device), rank)
if custom.stats["registered_plan"] != 1 or custom.stats["mscclpp"] != 2:
    print(f"rank {rank}: FAILED: a declined selection still ran the registered plan ({custom.stats})", flush=True)
    sys.exit(1)
mscclpp.ExecutionPlanRegistry.reset_instance()
executor.close()
comm.close()
torch.distributed.destroy_process_group()
print(f"rank {rank}: plan_based: all checks passed", flush=True)
