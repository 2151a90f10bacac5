#!/usr/bin/env bash
# Session 21, call 1 (4-GPU host), the final check of issue 30: the GPU suite's `runtime` (2 ranks, GPUs 0, 1)
# beside `nccl-shared` (GPU 2); then out of the box at 4 ranks `mscclpp bench` of all-reduce (in place), all-gather
# and reduce-scatter, 1 KiB-1 GiB, fp16, graphs, beside NCCL; then the suite's `nccl` part at 4 ranks. Everything
# packed into ARCHIVE after each step.
# Usage: scripts/diag/exp/s21_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
s=110
CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 $((s + 15)) "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s "$s" \
  --part runtime --out "$o/suite-runtime" > "$o/suite-runtime.log" 2>&1 &
CUDA_VISIBLE_DEVICES=2 timeout -k 5 $((s + 15)) "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s "$s" \
  --part nccl-shared --out "$o/suite-nccl-shared" > "$o/suite-nccl-shared.log" 2>&1 &
wait
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o"/suite-*/summary.md | head -20
pack "$A"
export CUDA_VISIBLE_DEVICES=0,1,2,3
for c in allreduce allgather reducescatter; do
  ip=; [ $c = allreduce ] && ip=--in-place
  MSCCLPP_CACHE_DIR=$o/cache run bench-$c 100 $mpi 4 "$b/mscclpp" bench $c $ip --sizes 1K:1G --nccl \
    --csv "$o/bench-$c.csv" --plot "$o/bench-$c.png"
  grep -E "^ *[0-9]" "$o/bench-$c.log" | awk '{print $1, $4, $9, $14, $16}'
  pack "$A"
done
rm -rf "$o"/cache*
left=$((LIMIT - $(date +%s) + t_start - 15))
suite nccl "$left"
