#!/usr/bin/env bash
# Session 20, call 4 (4-GPU host): the GPU suite's `runtime` part (2 ranks, GPUs 0,1) beside `nccl-shared` (GPU 2)
# at the commit with the device-wait report fix. Everything packed into ARCHIVE at the end.
# Usage: scripts/diag/exp/s20_call4.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
s=${DEADLINE_S:-190}
CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 $((s + 15)) "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s "$s" \
  --part runtime --out "$o/suite-runtime" > "$o/suite-runtime.log" 2>&1 &
CUDA_VISIBLE_DEVICES=2 timeout -k 5 $((s + 15)) "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s "$s" \
  --part nccl-shared --out "$o/suite-nccl-shared" > "$o/suite-nccl-shared.log" 2>&1 &
wait
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o"/suite-*/summary.md | head -20
grep -h "async error after\|went idle" "$o"/suite-*.log | head -4
pack "$A"
