"""Approach 4, tuning: mscclpp.tune times every registered all-reduce program that admits each size, over thread
blocks and threads per block, in CUDA graphs (the slowest rank decides), saves the winners in this machine's tuned
table and installs it; mscclpp.get_tuned_config then reports the row that selection follows, and the
collectives of mscclpp.torch run the tuned choice, checked against a reference.

    torchrun --nproc-per-node 2 examples/torch/tuning.py
"""

from __future__ import annotations

import sys

import torch

import mscclpp
import mscclpp.torch as mt
from _common import check, pattern, setup, summed

rank, world, device = setup()
group = mscclpp.CommGroup.from_env()
sizes = [1 << 10, 16 << 10, 128 << 10]
result = mscclpp.tune(group, collectives=["allreduce"], sizes=sizes, dtype=torch.float16, budget_s=120, runs=3, iters=3)
if rank == 0:
    print(f"tuned table {result['path']}: {len(result['rows'])} rows, {result['timed']} candidates timed", flush=True)
    for note in result["notes"]:
        print(f"  note: {note}", flush=True)
for size in sizes:
    row = mscclpp.get_tuned_config(size, collective="allreduce", dtype=torch.float16)
    if row is None or not row.get("program"):
        print(f"rank {rank}: FAILED: no tuned row for {size} B: {row}", flush=True)
        sys.exit(1)
    if rank == 0:
        print(
            f"{size} B: {row['program']} x{row['instances']} ({row['thread_blocks']} thread blocks x "
            f"{row['threads_per_block']} threads), {row['us']} us",
            flush=True,
        )
comm = mt.CustomizedComm(group)
for size in sizes:
    n = size // 2
    x = pattern(n, rank, torch.float16, device)
    comm.all_reduce(x)
    check(f"tuned all_reduce {size} B", x, summed(n, world, torch.float16, device), rank)
print(f"rank {rank}: tuning example OK", flush=True)
