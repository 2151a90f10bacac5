#!/usr/bin/env bash
# Session 24, final call D (2 GPUs): `interp_cost` of `allreduce_oneshot_ll128` (256 KiB-4 MiB) against the
# hand-written kernel of its plan's algorithm, and of the LL one-shot (1 KiB-1 MiB); `mscclpp bench` fp16 of
# all-gather, reduce-scatter, broadcast (out of place) and all-to-all, 1 KiB-1 GiB beside NCCL with the shipped
# tables. Everything packed into ARCHIVE after each step.
# Usage: LIMIT=S scripts/diag/exp/s24_final_d.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
run interp-allreduce_oneshot_ll128 40 "$mpi" 2 "$b/interp_cost" 256K:4M:x2 allreduce_oneshot_ll128
run interp-allreduce_oneshot_ll 40 "$mpi" 2 "$b/interp_cost" 1K:1M:x4 allreduce_oneshot_ll
grep -H "^PASS\|FAIL\|rror" "$o"/interp-*.log | sed 's/checks=6 //;s/.*interp-//'
pack "$A"
for c in allgather reducescatter broadcast alltoall; do bench_sizes bench-$c-f16 70 $c --dtype f16; done
