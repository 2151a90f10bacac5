"""Shared set-up of the torch examples: torch.distributed, this rank's GPU, and the reference each result is
checked against.

Two ranks on one GPU (``MSCCLPP_SHARED_GPU=1``, the GPU suite on a one-GPU host): NCCL refuses two ranks on one
GPU, so torch.distributed runs on gloo and every check uses a reference computed in torch from the known inputs.
With a GPU per rank, results are also compared with torch.distributed's NCCL collective."""

from __future__ import annotations

import os
import sys
from typing import Callable

import torch
import torch.distributed as dist

SHARED_GPU = os.environ.get("MSCCLPP_SHARED_GPU") == "1"


def setup() -> tuple[int, int, torch.device]:
    """Initialise torch.distributed (NCCL, or gloo when ranks share a GPU) and pick this rank's GPU."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    ordinal = 0 if SHARED_GPU else local % torch.cuda.device_count()
    device = torch.device("cuda", ordinal)
    torch.cuda.set_device(device)
    if SHARED_GPU:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    else:
        # device_id: the NCCL communicator is created now (eagerly), as memory pools registered with it need.
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    return rank, world, device


def pattern(n: int, rank: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Rank ``rank``'s input: small integers, exact in every element type after summing a few ranks."""
    i = torch.arange(n, device=device, dtype=torch.int64)
    return ((i % 13) + rank + 1).to(dtype)


def summed(n: int, world: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The all-reduce (sum) of every rank's ``pattern``."""
    return sum(pattern(n, r, torch.float32, device) for r in range(world)).to(dtype)


def check(name: str, got: torch.Tensor, want: torch.Tensor, rank: int) -> None:
    """Exit non-zero with a message on the first mismatch."""
    torch.cuda.synchronize()
    if not torch.equal(got.float(), want.float()):
        bad = (got.float() != want.float()).nonzero()
        first = int(bad[0, 0]) if bad.numel() else -1
        print(f"rank {rank}: {name}: FAILED at element {first}: got {got.flatten()[first].item()}, "
              f"want {want.flatten()[first].item()} ({bad.shape[0]} wrong)", flush=True)
        sys.exit(1)
    print(f"rank {rank}: {name}: ok", flush=True)


def against_nccl(name: str, got: torch.Tensor, run_nccl: Callable[[], torch.Tensor], rank: int) -> None:
    """With a GPU per rank, also compare with torch.distributed's NCCL result."""
    if SHARED_GPU:
        return
    check(f"{name} == NCCL", got, run_nccl(), rank)


def graph_of(fn: Callable[[], None], warmup: int = 1) -> torch.cuda.CUDAGraph:
    """Run ``fn`` eagerly ``warmup`` times on a side stream, then capture it into a CUDA graph on that stream
    (torch's usual warm-up-then-capture pattern)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        fn()
    return g
