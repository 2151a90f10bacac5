"""All-reduce time of mscclpp.torch.CustomizedComm against torch.distributed, 1 KiB to 256 MiB of float16, in
the same run; calls above CustomizedComm's window go to torch.distributed by design (so both columns match there).

With a GPU per rank both run in CUDA graphs (20 calls per replay) against NCCL. With ranks sharing one GPU
(MSCCLPP_SHARED_GPU=1) NCCL cannot run: the comparison is against gloo, eager, and the figures mean nothing.
Also prints the host time of one eager CustomizedComm.all_reduce call at 1 KiB (Python and launch).

    torchrun --nproc-per-node 2 examples/torch/timing.py [--json FILE] [--max-size BYTES]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import mscclpp
import mscclpp.torch as mt
from _common import SHARED_GPU, check, pattern, setup, summed

ap = argparse.ArgumentParser()
ap.add_argument("--json", default=None)
ap.add_argument("--max-size", type=int, default=(16 << 20) if SHARED_GPU else (256 << 20))
args = ap.parse_args()

rank, world, device = setup()
comm = mt.CustomizedComm(mscclpp.CommGroup.from_env())
dist = torch.distributed
CALLS = 20


def timed(fn, x: torch.Tensor, graph: bool) -> float:
    """Microseconds per call."""
    if graph:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(CALLS):
                fn(x)
        run = g.replay
    else:
        def run() -> None:
            for _ in range(CALLS):
                fn(x)
    run()
    torch.cuda.synchronize()
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(5):
        start.record()
        run()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) * 1000 / CALLS)
    return best


rows = []
size = 1024
graph = not SHARED_GPU
while size <= args.max_size:
    n = size // 2
    x = pattern(n, rank, torch.float16, device)
    comm.all_reduce(x)
    check(f"all_reduce {size} B", x, summed(n, world, torch.float16, device), rank)
    ours = timed(lambda t: comm.all_reduce(t), x, graph)
    theirs = timed(lambda t: dist.all_reduce(t), x, graph)
    path = "mscclpp" if size <= comm.max_bytes["allreduce"] else "fallback"
    rows.append({"bytes": size, "mscclpp_us": ours, "torch_us": theirs, "speedup": theirs / ours, "path": path})
    size *= 4

x = pattern(512, rank, torch.float16, device)
comm.all_reduce(x)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(200):
    comm.all_reduce(x)
host_us = (time.perf_counter() - t0) * 1e6 / 200
torch.cuda.synchronize()

if rank == 0:
    mode = "CUDA graphs, against NCCL" if graph else "eager, against gloo (2 ranks share one GPU: figures are meaningless)"
    print(f"all_reduce float16, {world} ranks, {mode}")
    print(f"{'size':>10} {'mscclpp.torch us':>17} {'torch.distributed us':>21} {'speed-up':>9}  path")
    for r in rows:
        print(f"{r['bytes']:>10} {r['mscclpp_us']:>17.2f} {r['torch_us']:>21.2f} {r['speedup']:>8.2f}x  {r['path']}")
    print(f"host time of one eager CustomizedComm.all_reduce (1 KiB): {host_us:.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mode": mode, "rows": rows, "eager_host_us": host_us, "shared_gpu": SHARED_GPU}, f, indent=1)
comm.close()
dist.destroy_process_group()
