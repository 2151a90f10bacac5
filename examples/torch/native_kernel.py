"""Approach 3, native kernels: a user's CUDA source (examples/custom_kernel.cu: an LL16 packet all-reduce over
memory channels) compiled by NVRTC against the mscclpp headers, launched from Python with an array of
memory-channel device handles, eager and once from a CUDA graph, checked against a reference (and NCCL with a GPU
per rank).

    torchrun --nproc-per-node 2 examples/torch/native_kernel.py [path/to/custom_kernel.cu]
"""

from __future__ import annotations

import os
import sys

import torch

import mscclpp
from _common import against_nccl, check, pattern, setup, summed

rank, world, device = setup()
here = os.path.dirname(os.path.abspath(__file__))
source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "custom_kernel.cu")
comm = mscclpp.CommGroup.from_env()
module = mscclpp.compile_native("custom_kernel", source)

n = 1 << 16  # floats
nbytes = n * 4
data = mscclpp.RawGpuBuffer(nbytes)
scratch = mscclpp.RawGpuBuffer(2 * nbytes * world)
x = torch.from_dlpack(data).view(torch.float32)[:n]
# Writes go from local `data` into each peer's `scratch`; packets arrive in local `scratch`.
chans = comm.memory_channels(local=data, remote=scratch, packet_buffer=scratch, tag=3)
assert len(chans) == world - 1 and chans.kind == "memory"


def launch(flag: int) -> None:
    module.launch(
        "packet_allreduce",
        32,
        512,
        [chans, mscclpp.i32(world - 1), mscclpp.i32(rank), data, mscclpp.u64(n), mscclpp.u32(flag)],
        stream=torch.cuda.current_stream().cuda_stream,
    )


for flag in (1, 2, 3):
    x.copy_(pattern(n, rank, torch.float32, device))
    torch.cuda.synchronize()
    comm.barrier()
    launch(flag)
    check(f"packet all-reduce round {flag}", x, summed(n, world, torch.float32, device), rank)
    comm.barrier()
against_nccl(
    "packet all-reduce",
    x,
    lambda: (lambda z: (torch.distributed.all_reduce(z), z)[1])(pattern(n, rank, torch.float32, device)),
    rank,
)

# The same kernel as an algorithm object (MSCCL++'s Algorithm.create_from_native_capsule): `execute` with MSCCL++'s
# signature launches it with the configuration asked for; a size outside its range launches nothing.
def algo_launch(comm_, inp, out, in_size, out_size, dtype, op, stream, nblocks, nthreads, extras):
    if inp != x.data_ptr() or inp != out:
        return mscclpp.collection.COMM_INVALID_ARGUMENT  # this kernel runs in place on `data` only
    module.launch(
        "packet_allreduce",
        nblocks,
        nthreads,
        [chans, mscclpp.i32(world - 1), mscclpp.i32(rank), data, mscclpp.u64(in_size // 4), mscclpp.u32(extras["flag"])],
        stream=stream,
    )


algo = mscclpp.Algorithm.create_from_native_capsule(
    {"name": "user_packet_allreduce", "collective": "allreduce", "launch": algo_launch, "message_sizes": (4, nbytes)}
)
stream = torch.cuda.current_stream().cuda_stream
for flag, (blocks, threads) in zip((5, 6), ((32, 512), (16, 1024))):
    x.copy_(pattern(n, rank, torch.float32, device))
    torch.cuda.synchronize()
    comm.barrier()
    code = algo.execute(comm, x, x, nbytes, nbytes, mscclpp.DataType.float32, op=mscclpp.ReduceOp.SUM, stream=stream,
                        nblocks=blocks, nthreads_per_block=threads, extras={"flag": flag})
    if code != 0:
        print(f"rank {rank}: FAILED: NativeAlgorithm.execute returned {code}", flush=True)
        sys.exit(1)
    check(f"NativeAlgorithm.execute ({blocks}x{threads})", x, summed(n, world, torch.float32, device), rank)
    comm.barrier()
if algo.execute(comm, x, x, 2 * nbytes, 2 * nbytes, mscclpp.DataType.float32, stream=stream) == 0:
    print(f"rank {rank}: FAILED: a size outside the algorithm's range was launched", flush=True)
    sys.exit(1)

# A graph captures the launch with its arguments frozen: one replay with a fresh packet flag.
x.copy_(pattern(n, rank, torch.float32, device))
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    launch(7)
comm.barrier()
g.replay()
check("packet all-reduce from a CUDA graph", x, summed(n, world, torch.float32, device), rank)
comm.barrier()
try:
    module.launch("packet_allreduce", 1, 1, [chans, 1, 2])
    print(f"rank {rank}: FAILED: untyped arguments were accepted", flush=True)
    sys.exit(1)
except mscclpp.Error as e:
    print(f"rank {rank}: untyped arguments are refused: {e}", flush=True)
chans.close()
comm.close()
torch.distributed.destroy_process_group()
print(f"rank {rank}: native_kernel: all checks passed", flush=True)
