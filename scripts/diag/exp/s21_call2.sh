#!/usr/bin/env bash
# Session 21, call 2 (2 GPUs): eager torch collectives at 2 ranks (scripts/diag/eager_paths.py, NCCL then the
# library with MSCCLPP_NCCL_LOG=info, twice each); `mscclpp bench allreduce --in-place` 1 KiB-1 GiB beside NCCL;
# `interp_cost` of the LL all-reduces (1 KiB-1 MiB) and the Simple ones (1-64 MiB); then the GPU suite's `nccl`
# part at 2 ranks. Everything packed into ARCHIVE after each step.
# Usage: scripts/diag/exp/s21_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1
ep=$here/../eager_paths.py
cases=all_reduce:1K,all_reduce:64K,all_reduce:1M,all_reduce:4M,all_reduce:16M,all_gather_into_tensor:64K,reduce_scatter_tensor:64K
for i in 1 2; do
  run eager-nccl-$i 60 torchrun --nproc-per-node 2 "$ep" --cases $cases
  LD_PRELOAD=$b/nccl/libmscclpp_nccl.so MSCCLPP_NCCL_LOG=info run eager-ours-$i 60 torchrun --nproc-per-node 2 "$ep" --cases $cases
  grep -E "^#|^all_|^reduce_" "$o/eager-nccl-$i.log" | head -10
  grep -E "^#|^all_|^reduce_|host time so far" "$o/eager-ours-$i.log" | tail -9
  pack "$A"
done
RANKS=2 bench_sizes bench-allreduce 80 allreduce --in-place
interp_allreduce
rm -rf "$o"/cache*
pack "$A"
RANKS=2 suite nccl "$(remaining 15)"
