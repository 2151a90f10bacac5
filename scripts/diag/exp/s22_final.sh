#!/usr/bin/env bash
# Session 22, final calls (2 GPUs, H100 or H200): `interp_cost` of the LL all-reduces (1 KiB-1 MiB) and of the
# Simple ones (1-64 MiB: the two-shot at 128 x 256, allreduce_staged and allreduce_rsag with their tuned grids);
# `scripts/diag/torch_init.py` twice each way (MSCCLPP_TRACE_STARTUP=1 with the library); the GPU suite's `runtime`
# and `nccl` parts at 2 ranks; on an H100 host `mscclpp bench broadcast` 1 KiB-1 GiB beside NCCL (the shipped table
# now has broadcast rows); then the `python` part with the time left. Everything packed into ARCHIVE after each step.
# Usage: LIMIT=S scripts/diag/exp/s22_final.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
interp_allreduce
pack "$A"
torch_init_runs 2
suite runtime 110
grep -q H100 "$o/gpus.txt" && bench_sizes bench-broadcast-f16 60 broadcast
rm -rf "$o"/cache*
suite nccl 185
suite python "$(remaining 8)"
