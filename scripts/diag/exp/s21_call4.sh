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
for p in allreduce_oneshot_ll allreduce_twoshot_ll; do run interp-$p 30 $mpi 2 "$b/interp_cost" 1K:1M:x4 $p; done
run interp-allreduce_twoshot 40 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_twoshot 128x256
grep -h "^PASS\|FAIL\|rror" "$o"/interp-*.log | head -30
for c in allreduce allgather reducescatter broadcast; do
  ip=; [ $c = allreduce ] && ip=--in-place
  name=bench-$c-f16
  MSCCLPP_CACHE_DIR=$o/cache run $name 60 $mpi 2 "$b/mscclpp" bench $c $ip --sizes 1K:1G --nccl \
    --csv "$o/$name.csv" --plot "$o/$name.png"
  grep -E "^ *[0-9]" "$o/$name.log" | awk '{print $1, $4, $9, $14, $16}' | tr '\n' ';' | cut -c1-900; echo
  pack "$A"
done
rm -rf "$o"/cache*
RANKS=2 suite nccl 185
left=$((${LIMIT:-560} - ($(date +%s) - t_start) - 8))
RANKS=2 suite python "$left"
