# NCCL figures for the executor suite: allreduce through torch.distributed (NCCL), in a CUDA graph of 10 calls
# replayed 10 times, fp16, 2 ranks. Run: torchrun --nproc-per-node 2 scripts/gpu-suite-executor-nccl.py
import os
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
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
        print(f"NCCL allreduce size={size} us_per_call={us:.2f} busbw_GBps={size / us / 1e3:.2f}", flush=True)
dist.destroy_process_group()
