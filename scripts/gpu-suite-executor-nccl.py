# NCCL figures for the executor suite: allreduce through torch.distributed (NCCL), in a CUDA graph of 10 calls
# replayed 10 times, fp16, on every rank of the job. Run: torchrun --nproc-per-node N scripts/gpu-suite-executor-nccl.py
import os
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
world = dist.get_world_size()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
for size in [1 << 10, 4 << 10, 16 << 10, 64 << 10, 1 << 20, 64 << 20, 256 << 20]:
    x = torch.ones(size // 2, dtype=torch.float16, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(10):
                dist.all_reduce(x)
        g.replay()
        torch.cuda.synchronize()
        dist.barrier()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(s)
        for _ in range(10):
            g.replay()
        b.record(s)
        torch.cuda.synchronize()
    us = a.elapsed_time(b) * 1000 / 100
    if rank == 0:
        algbw = size / us / 1e3
        busbw = algbw * 2 * (world - 1) / world
        print(f"NCCL allreduce ranks={world} size={size} us_per_call={us:.2f} busbw_GBps={busbw:.2f}", flush=True)
dist.barrier()
# Leave without NCCL's teardown, which can outlast the suite's time limit on a busy host.
os._exit(0)
