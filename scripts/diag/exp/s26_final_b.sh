#!/usr/bin/env bash
# Session 26 final (2 GPUs): the GPU suite's `nccl` and `python` parts (the peers' table among them), `mscclpp bench`
# all-reduce fp16 in place and broadcast with the shipped tables beside NCCL, and `interp-cost`. Everything packed
# into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s26_final_b.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
suite nccl 170
suite python 150
bench_sizes bench-allreduce-f16 100 allreduce --in-place --dtype f16
bench_sizes bench-broadcast-f16 80 broadcast --dtype f16
suite interp-cost "$(remaining 10)"
