#!/usr/bin/env bash
# Session 20, call 2 (4 GPUs): eager paths at 4 ranks again (scripts/diag/eager_paths.py: the library twice with
# MSCCLPP_NCCL_LOG=info, NCCL once), then the GPU suite's `nccl` and `python` parts at 4 ranks, then `gib` at 4
# ranks narrowed to the port-channel programs until the call's deadline. Everything packed into ARCHIVE after each
# step.
# Usage: scripts/diag/exp/s20_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1,2,3
ep=$here/../eager_paths.py
LD_PRELOAD=$b/nccl/libmscclpp_nccl.so MSCCLPP_NCCL_LOG=info run eager-ours-1 70 torchrun --nproc-per-node 4 "$ep"
run eager-nccl-1 70 torchrun --nproc-per-node 4 "$ep"
LD_PRELOAD=$b/nccl/libmscclpp_nccl.so MSCCLPP_NCCL_LOG=info run eager-ours-2 70 torchrun --nproc-per-node 4 "$ep"
grep -hE "^#|^all_|^reduce_|route" "$o"/eager-*.log | cut -c1-240
pack "$A"
suite nccl 230
suite python 110
left=$((${LIMIT:-560} - ($(date +%s) - t_start) - 15))
MSCCLPP_SUITE_PROGRAMS="allreduce_port allgather_port allreduce_port_pipelined" suite gib $left
rm -rf "$o"/cache*
pack "$A"
