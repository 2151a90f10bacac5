#!/usr/bin/env bash
# Session 25 (2 GPUs): `matrix-a` narrowed to the LL two-shots, `mscclpp bench` fp16 of all-reduce (in place), reduce-scatter and broadcast, 1 KiB-1 GiB
# beside NCCL, with the 2 x H200 table of the checkout (mscclpp-exec/tables/) installed as the host's tuned table,
# so binaries collected before that table was merged run it; then the GPU suite's `interp-cost` part. Everything
# packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s25_final_b.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
table=$(pwd)/mscclpp-exec/tables/tuned-nvidia-h200-w2-r2.json
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
# The two programs s25_final_a.sh's matrix-a reached no more (its deadline).
MSCCLPP_SUITE_PROGRAMS="allreduce_twoshot_ll allreduce_twoshot_ll128" suite matrix-a 120
mkdir -p "$o/cache/tuned" && cp "$table" "$o/cache/tuned/" && cp "$table" "$o/table-used.json"
bench_sizes bench-allreduce-f16 110 allreduce --in-place --dtype f16
bench_sizes bench-reducescatter-f16 90 reducescatter --dtype f16
bench_sizes bench-broadcast-f16 90 broadcast --dtype f16
suite interp-cost "$(remaining 15)"
