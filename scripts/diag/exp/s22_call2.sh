#!/usr/bin/env bash
# Session 22, call 2 (2 x H100, after call 1 on the same host): `mscclpp bench` of all-reduce in bf16 and f32 (in
# place) and all-to-all fp16, 1 KiB-1 GiB, beside NCCL; the GPU suite's `nccl` part (torch timing table) and
# `python` part (the peers' table) at 2 ranks. Everything packed into ARCHIVE after each step.
# Usage: LIMIT=S scripts/diag/exp/s22_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
for t in bf16 f32; do bench_sizes bench-allreduce-$t 60 allreduce --in-place --dtype $t; done
bench_sizes bench-alltoall-f16 60 alltoall
rm -rf "$o"/cache*
suite nccl 185
suite python "$(remaining 8)"
