#!/usr/bin/env bash
# Session 20, call 1 (4 GPUs): where an eager torch collective's time goes at 4 ranks (scripts/diag/eager_paths.py,
# NCCL then the library with MSCCLPP_NCCL_LOG=info, twice each); then the GPU suite's `runtime` (2 ranks, GPUs 0,1)
# beside `soak-a` narrowed to allreduce_staged (GPUs 2,3), and `matrix-a` narrowed to allreduce_port at 4 ranks.
# Everything packed into ARCHIVE after each step.
# Usage: scripts/diag/exp/s20_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1,2,3
ep=$here/../eager_paths.py
for i in 1 2; do
  run eager-nccl-$i 70 torchrun --nproc-per-node 4 "$ep"
  LD_PRELOAD=$b/nccl/libmscclpp_nccl.so MSCCLPP_NCCL_LOG=info run eager-ours-$i 70 torchrun --nproc-per-node 4 "$ep"
  grep -vE "^(W|I)[0-9]|^\[rank|NCCL INFO" "$o/eager-nccl-$i.log" | head -12
  grep -E "^#|^all_|^reduce_|route|host time so far" "$o/eager-ours-$i.log" | head -20
  pack "$A"
done
s=${DEADLINE_S:-200}
CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 $((s + 20)) "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s $s \
  --part runtime --out "$o/suite-runtime" > "$o/suite-runtime.log" 2>&1 &
CUDA_VISIBLE_DEVICES=2,3 MSCCLPP_SUITE_PROGRAMS=allreduce_staged timeout -k 5 $((s + 20)) "$b/xtask" gpu run \
  --bin "$b" --ranks 2 --deadline-s $s --part soak-a --out "$o/suite-soak-a" > "$o/suite-soak-a.log" 2>&1 &
wait
pack "$A"
left=$((${LIMIT:-560} - ($(date +%s) - t_start) - 15))
CUDA_VISIBLE_DEVICES=0,1,2,3 MSCCLPP_SUITE_PROGRAMS=allreduce_port timeout -k 5 $((left + 10)) "$b/xtask" gpu run \
  --bin "$b" --ranks 4 --deadline-s $left --part matrix-a --out "$o/suite-matrix-a" > "$o/suite-matrix-a.log" 2>&1
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o"/suite-*/summary.md | head -30
rm -rf "$o"/cache*
pack "$A"
