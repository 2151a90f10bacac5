#!/usr/bin/env bash
# Session 27 final (2 GPUs): the GPU suite's `matrix-b` (broadcast among its collectives), `nccl` and `python`
# parts, then `mscclpp bench broadcast` 1 KiB-1 GiB with the shipped table beside NCCL. Everything packed into
# ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s27_final_a.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
suite matrix-b 170
suite nccl 170
suite python 150
bench_sizes bench-broadcast-f16 "$(remaining 10)" broadcast --dtype f16
