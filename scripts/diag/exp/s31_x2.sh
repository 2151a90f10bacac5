#!/usr/bin/env bash
# Session 31 on two GPUs: the final commit's figures and two-GPU parts. WHAT=a: the GPU suite's `interp-cost` part
# (every LL program to 1 MiB, the LL128 and Simple programs each against its own hand-written kernel, the two-pass
# `allreduce_twoshot` now too), then `mscclpp bench` fp16 with the shipped tables beside NCCL: all-reduce in place,
# all-gather, reduce-scatter (1 KiB-1 GiB). WHAT=b: `mscclpp bench` all-reduce bf16 and f32 in place, all-to-all
# and broadcast fp16. WHAT=c: the `python` part (its torch examples and the peers' table: NCCL, NCCL's symmetric
# kernels, torch symm_mem one-shot and two-shot). WHAT=d: PARTS (default "runtime corpus startup"), one after another
# within the call. Everything packed into ARCHIVE.
# Usage: WHAT=a|b|c|d [PARTS="..."] LIMIT=S scripts/diag/exp/s31_x2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
case "${WHAT:-a}" in
  a)
    suite_run interp-cost 170
    grep -hE "passed:|FAIL" "$o/suite-interp-cost/summary.md" | head -4
    bench_sizes bench-allreduce-f16 110 allreduce --in-place --dtype f16
    bench_sizes bench-allgather-f16 110 allgather --dtype f16
    bench_sizes bench-reducescatter-f16 110 reducescatter --dtype f16
    ;;
  b)
    bench_sizes bench-allreduce-bf16 110 allreduce --in-place --dtype bf16
    bench_sizes bench-allreduce-f32 110 allreduce --in-place --dtype f32
    bench_sizes bench-alltoall-f16 110 alltoall --dtype f16
    bench_sizes bench-broadcast-f16 110 broadcast --dtype f16
    ;;
  c) suite python "$(remaining 10)" ;;
  d)
    for p in ${PARTS:-runtime corpus startup}; do
      suite_run "$p" "$(remaining 15)"
      grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-$p/summary.md" | head -6
    done
    ;;
esac
pack "$A"
