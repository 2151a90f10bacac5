#!/usr/bin/env bash
# Session 29's kernels on two GPUs (for a session with a two-GPU kind): the specialised programs' pointers in
# registers, their signals without a branch on the record, the Simple programs' relaxed entry handshake, and
# specialised programs compiled for plans none is embedded for. WHAT=a: the GPU suite's `interp-cost` part (every
# LL and Simple program against its hand-written kernel) and `interp_cost` of the Simple all-reduces at 1-64 MiB,
# then `mscclpp bench` fp16 with the shipped tables beside NCCL: all-reduce in place, all-gather, reduce-scatter
# (1 KiB-1 GiB). WHAT=b: the `matrix-a` part. WHAT=c: `matrix-b`, then `nccl` and `python`. Everything packed into
# ARCHIVE.
# Usage: WHAT=a|b|c LIMIT=S scripts/diag/exp/s29_x2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
case "${WHAT:-a}" in
  a)
    suite_run interp-cost 150
    grep -hE "passed:|FAIL" "$o/suite-interp-cost/summary.md" | head -4
    interp_allreduce
    bench_sizes bench-allreduce-f16 100 allreduce --in-place --dtype f16
    bench_sizes bench-allgather-f16 100 allgather --dtype f16
    bench_sizes bench-reducescatter-f16 100 reducescatter --dtype f16
    ;;
  b) suite matrix-a "$(remaining 10)" ;;
  c)
    suite_run matrix-b 330
    suite_run nccl "$(remaining 120)"
    suite python "$(remaining 10)"
    grep -hE "passed:|FAIL" "$o"/suite-*/summary.md | head -8
    ;;
esac
pack "$A"
