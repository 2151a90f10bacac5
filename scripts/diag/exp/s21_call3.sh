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
for p in allreduce_oneshot_ll allreduce_twoshot_ll; do run interp-$p 40 $mpi 2 "$b/interp_cost" 1K:1M:x4 $p; done
run interp-allreduce_twoshot 50 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_twoshot 128x256
grep -h "^PASS\|FAIL\|rror" "$o"/interp-*.log | head -30
for job in allreduce:f16 allgather:f16 reducescatter:f16 allreduce:bf16 allreduce:f32 alltoall:f16 broadcast:f16; do
  c=${job%%:*} t=${job#*:}
  ip=; [ $c = allreduce ] && ip=--in-place
  name=bench-$c-$t
  MSCCLPP_CACHE_DIR=$o/cache run $name 70 $mpi 2 "$b/mscclpp" bench $c $ip --dtype $t --sizes 1K:1G --nccl \
    --csv "$o/$name.csv" --plot "$o/$name.png"
  grep -E "^ *[0-9]" "$o/$name.log" | awk '{print $1, $4, $9, $14, $16}' | tr '\n' ';' | cut -c1-900; echo
  pack "$A"
done
rm -rf "$o"/cache*
pack "$A"
