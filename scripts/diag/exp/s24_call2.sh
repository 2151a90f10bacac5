#!/usr/bin/env bash
# Session 24 (2 GPUs), the LL128 packet operation with two line groups in flight per warp: interp_cost of both
# LL128 all-reduces (256 KiB-4 MiB), the GPU suite's `matrix-a` narrowed to them, and `mscclpp bench allreduce` in
# place, f16, 1 KiB-1 GiB beside NCCL with the shipped table. Everything packed into ARCHIVE after each step.
# Usage: LIMIT=S scripts/diag/exp/s24_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
for p in allreduce_twoshot_ll128 allreduce_oneshot_ll128; do run "interp-$p" 40 "$mpi" 2 "$b/interp_cost" 256K:4M:x2 "$p"; done
grep -H "^PASS\|FAIL\|rror" "$o"/interp-*.log | sed 's/checks=6 //;s/.*interp-//'
pack "$A"
MSCCLPP_SUITE_PROGRAMS="allreduce_oneshot_ll128 allreduce_twoshot_ll128" suite matrix-a 120
bench_sizes bench-allreduce-f16 70 allreduce --in-place --dtype f16
