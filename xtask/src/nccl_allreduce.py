# NCCL figures for the GPU suite: allreduce through torch.distributed (NCCL), in a CUDA graph of 10 calls; the
# graph is replayed RUNS times, each replay timed on its own, and the median per call is printed (with the fastest
# replay as us_min), fp16, on every rank of the job. `xtask gpu run` embeds this file and writes it out for torchrun:
#   torchrun --nproc-per-node N nccl_allreduce.py [SIZE ...]
import os
import statistics
import sys

import torch
import torch.distributed as dist

RUNS = int(os.environ.get("NCCL_SUITE_RUNS", "30"))
CALLS = 10

dist.init_process_group("nccl")
rank = dist.get_rank()
world = dist.get_world_size()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
sizes = [int(a) for a in sys.argv[1:]] or [1 << 10, 4 << 10, 16 << 10, 64 << 10, 1 << 20, 64 << 20, 256 << 20]
for size in sizes:
    x = torch.ones(size // 2, dtype=torch.float16, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(CALLS):
                dist.all_reduce(x)
        g.replay()
        torch.cuda.synchronize()
        dist.barrier()
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(RUNS + 1)]
        marks[0].record(s)
        for m in marks[1:]:
            g.replay()
            m.record(s)
        torch.cuda.synchronize()
    per_call = sorted(marks[i].elapsed_time(marks[i + 1]) * 1000 / CALLS for i in range(RUNS))
    us = statistics.median(per_call)
    # The slowest rank's median is the collective's time.
    t = torch.tensor([us, per_call[0]], dtype=torch.float64, device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    us, us_min = t.tolist()
    if rank == 0:
        algbw = size / us / 1e3
        busbw = algbw * 2 * (world - 1) / world
        print(
            f"NCCL allreduce ranks={world} size={size} us_per_call={us:.2f} us_min={us_min:.2f} "
            f"busbw_GBps={busbw:.2f} runs={RUNS}",
            flush=True,
        )
dist.barrier()
# Leave without NCCL's teardown, which can outlast the suite's time limit on a busy host.
os._exit(0)
