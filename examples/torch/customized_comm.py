"""mscclpp.torch.CustomizedComm on torch tensors: all_reduce, all_gather, reduce_scatter and broadcast, eager and
in CUDA graphs, each checked against a reference (and against NCCL with a GPU per rank).

    torchrun --nproc-per-node 2 examples/torch/customized_comm.py
"""

from __future__ import annotations

import sys

import torch

import mscclpp
import mscclpp.torch as mt
from _common import against_nccl, check, graph_of, pattern, setup, summed

rank, world, device = setup()
comm = mt.CustomizedComm(mscclpp.CommGroup.from_env())
dist = torch.distributed

for dtype in (torch.float16, torch.bfloat16, torch.float32):
    for n in (1024, 32 << 10):
        name = f"all_reduce {n} x {dtype}"
        x = pattern(n, rank, dtype, device)
        comm.all_reduce(x)
        check(f"{name} eager", x, summed(n, world, dtype, device), rank)
        against_nccl(name, x, lambda: (lambda y: (dist.all_reduce(y), y)[1])(pattern(n, rank, dtype, device)), rank)
        # Graph: capture after the eager run above, replay twice on fresh inputs.
        g_in = pattern(n, rank, dtype, device)
        g = graph_of(lambda: comm.all_reduce(g_in), warmup=1)
        for _ in range(2):
            g_in.copy_(pattern(n, rank, dtype, device))
            g.replay()
            check(f"{name} graph replay", g_in, summed(n, world, dtype, device), rank)

n = 4096
inp = pattern(n, rank, torch.float16, device)
out = torch.empty(n * world, dtype=torch.float16, device=device)
comm.all_gather(out, inp)
check("all_gather eager", out, torch.cat([pattern(n, r, torch.float16, device) for r in range(world)]), rank)
g = graph_of(lambda: comm.all_gather(out, inp), warmup=1)
out.zero_()
g.replay()
check("all_gather graph", out, torch.cat([pattern(n, r, torch.float16, device) for r in range(world)]), rank)

big = pattern(n * world, rank, torch.float32, device)
part = torch.empty(n, dtype=torch.float32, device=device)
comm.reduce_scatter(part, big)
check("reduce_scatter eager", part, summed(n * world, world, torch.float32, device)[rank * n:(rank + 1) * n], rank)

b = pattern(n, rank, torch.float32, device)
comm.broadcast(b, src=0)
check("broadcast eager", b, pattern(n, 0, torch.float32, device), rank)

# What mscclpp does not accelerate goes to torch.distributed, with the same result.
p = pattern(n, rank, torch.float32, device)
comm.all_reduce(p, op=dist.ReduceOp.PRODUCT)
want = pattern(n, 0, torch.float32, device)
for r in range(1, world):
    want = want * pattern(n, r, torch.float32, device)
check("all_reduce PRODUCT (fallback)", p, want, rank)

print(f"rank {rank}: calls through mscclpp: {comm.stats['mscclpp']}, fallbacks: {comm.stats['fallback']}", flush=True)
if comm.stats["mscclpp"] < 15 or comm.stats["fallback"] < 1:
    print(f"rank {rank}: FAILED: expected at least 15 mscclpp calls and 1 fallback", flush=True)
    sys.exit(1)
try:
    comm.all_reduce(torch.ones(4))
    print(f"rank {rank}: FAILED: a CPU tensor was accepted", flush=True)
    sys.exit(1)
except mscclpp.Error as e:
    print(f"rank {rank}: a CPU tensor is refused: {e}", flush=True)
comm.close()
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank}: customized_comm: all checks passed", flush=True)
