#!/usr/bin/env bash
# Session 21, call 3 (2 GPUs; asked for 2 x H100, ran on 2 x H200): `mscclpp bench` of the five collectives
# (all-reduce in place, also bf16 and f32), 1 KiB-1 GiB, beside NCCL, with the shipped tables; `interp_cost` of the
# LL all-reduces (1 KiB-1 MiB) and the Simple two-shot (1-64 MiB). Everything packed into ARCHIVE after each step.
# Usage: scripts/diag/exp/s21_call3.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1
interp_allreduce
export RANKS=2
for job in allreduce:f16 allgather:f16 reducescatter:f16 allreduce:bf16 allreduce:f32 alltoall:f16 broadcast:f16; do
  c=${job%%:*} t=${job#*:}
  ip=; [ $c = allreduce ] && ip=--in-place
  bench_sizes bench-$c-$t 70 $c $ip --dtype $t
done
rm -rf "$o"/cache*
pack "$A"
