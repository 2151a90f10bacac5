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
RANKS=2 suite_run runtime 110 0,1 &
RANKS=2 suite_run nccl-shared 110 2 &
wait
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o"/suite-*/summary.md | head -20
pack "$A"
export CUDA_VISIBLE_DEVICES=0,1,2,3
bench_sizes bench-allreduce 100 allreduce --in-place
bench_sizes bench-allgather 100 allgather
bench_sizes bench-reducescatter 100 reducescatter
rm -rf "$o"/cache*
suite nccl "$(remaining 15)"
