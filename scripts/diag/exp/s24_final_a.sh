#!/usr/bin/env bash
# Session 24, final call A (2 GPUs): `interp_cost` of the LL128 all-reduces (256 KiB-4 MiB), the LL one-shot
# (1 KiB-1 MiB) and the staged Simple two-shot (1-16 MiB); `mscclpp bench allreduce` in place, f16, bf16 and f32,
# 1 KiB-1 GiB beside NCCL with the shipped table; the GPU suite's `matrix-a` part with the time left. Everything
# packed into ARCHIVE after each step.
# Usage: LIMIT=S scripts/diag/exp/s24_final_a.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
for p in allreduce_twoshot_ll128 allreduce_oneshot_ll128; do run "interp-$p" 40 "$mpi" 2 "$b/interp_cost" 256K:4M:x2 "$p"; done
run interp-allreduce_oneshot_ll 40 "$mpi" 2 "$b/interp_cost" 1K:1M:x4 allreduce_oneshot_ll
run interp-allreduce_staged 50 "$mpi" 2 "$b/interp_cost" 1M:16M:x2 allreduce_staged
grep -H "^PASS\|FAIL\|rror" "$o"/interp-*.log | sed 's/checks=6 //;s/.*interp-//'
for t in f16 bf16 f32; do bench_sizes bench-allreduce-$t 70 allreduce --in-place --dtype $t; done
rm -rf "$o"/cache*
suite matrix-a "$(remaining 8)"
