#!/usr/bin/env bash
# Session 23, final call A (2 GPUs): `interp_cost` of `allreduce_twoshot_ll128` (256 KiB-8 MiB) and of the LL
# one-shot (1 KiB-1 MiB); `mscclpp bench allreduce` in place, f16, bf16 and f32, 1 KiB-1 GiB beside NCCL with the
# shipped table; the GPU suite's `matrix-a` part (the all-reduce and all-gather defaults' correctness matrix) with
# the time left. Everything packed into ARCHIVE after each step.
# Usage: LIMIT=S scripts/diag/exp/s23_final_a.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
run interp-allreduce_twoshot_ll128 60 "$mpi" 2 "$b/interp_cost" 256K:8M:x2 allreduce_twoshot_ll128
run interp-allreduce_oneshot_ll 40 "$mpi" 2 "$b/interp_cost" 1K:1M:x4 allreduce_oneshot_ll
grep -h "^PASS\|FAIL\|rror" "$o"/interp-*.log | sed 's/checks=6 //'
for t in f16 bf16 f32; do bench_sizes bench-allreduce-$t 70 allreduce --in-place --dtype $t; done
rm -rf "$o"/cache*
suite matrix-a "$(remaining 8)"
