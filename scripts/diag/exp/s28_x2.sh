#!/usr/bin/env bash
# Session 28 (2 GPUs, if lent): the memory-channel table in the launch arguments measured in wall time: `interp_cost`
# of the Simple all-reduces (`interp_allreduce`), `mscclpp bench` all-reduce fp16 in place with the shipped tables
# beside NCCL, and the GPU suite's `matrix-b`. Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s28_x2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
interp_allreduce
bench_sizes bench-allreduce-f16 100 allreduce --in-place --dtype f16
suite matrix-b "$(remaining 10)"
