#!/usr/bin/env bash
# Session 21, call 4 (2 GPUs; asked for 2 x H100, ran on 2 x H200): `interp_cost` of the LL all-reduces
# (1 KiB-1 MiB) and the Simple two-shot (1-64 MiB); `mscclpp bench` of all-reduce (in place), all-gather,
# reduce-scatter and broadcast, fp16, 1 KiB-1 GiB, beside NCCL, with the shipped tables; the GPU suite's `nccl`
# part (torch timing table) and `python` part (the peers' table) at 2 ranks. Everything packed into ARCHIVE after
# each step.
# Usage: LIMIT=S scripts/diag/exp/s21_call4.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1
interp_allreduce
export RANKS=2
bench_sizes bench-allreduce-f16 60 allreduce --in-place
for c in allgather reducescatter broadcast; do bench_sizes bench-$c-f16 60 $c; done
rm -rf "$o"/cache*
suite nccl 185
suite python "$(remaining 8)"
