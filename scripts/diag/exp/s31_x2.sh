#!/usr/bin/env bash
# Session 31 on two GPUs: the final commit's figures and two-GPU parts. WHAT=a: the GPU suite's `interp-cost` part
# (every LL program to 1 MiB, the LL128 and Simple programs each against its own hand-written kernel, the two-pass
# `allreduce_twoshot` now too), then `mscclpp bench` fp16 with the shipped tables beside NCCL: all-reduce in place,
# all-gather, reduce-scatter (1 KiB-1 GiB). WHAT=b: `mscclpp bench` all-reduce bf16 and f32 in place, all-to-all
# and broadcast fp16. WHAT=c: the `python` part (its torch examples and the peers' table: NCCL, NCCL's symmetric
# kernels, torch symm_mem one-shot and two-shot). WHAT=d: PARTS (default "runtime corpus startup"), one after another
# within the call. WHAT=e: where a staged all-reduce's time goes on two GPUs: interp_cost's hand-written
# `staged_allreduce` and the interpreter (plan-specialised programs compiled from the stamped source) stamped phase
# by phase (scripts/diag/exp/stamp_hand.py, stamp_ops.py; SM cycles, waits included: the peer's signal's flight),
# 4, 8 and 16 MiB, twice; the SM clock beside them (`smclock.txt`); tables by `stamp_table.py DIR --waits --sizes
# 4M,8M,16M x2` (`stamps.txt`). WHAT=f: interp_cost's hand-written `staged_allreduce` with a signal per warp
# (scripts/diag/exp/warpflags_hand.py, `warp-*.log`) and as it is (`block-*.log`), each beside the interpreter's
# `allreduce_staged`, interleaved, 1-64 MiB, twice. SHARED=1 (e, f): two ranks on one GPU, a check of the script
# (timings and waits then mean nothing). Everything packed into ARCHIVE.
# Usage: WHAT=a|b|c|d|e|f [PARTS="..."] [SHARED=1] LIMIT=S scripts/diag/exp/s31_x2.sh PACK OUT ARCHIVE
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
  e)
    root=$(cd "$here/../../.." && pwd)
    # SHARED=1: two ranks on one GPU (a check of this script; the waits then mean nothing).
    if [ "${SHARED:-0}" = 1 ]; then shared_jobs; launch=("$shared"); else launch=("$mpi" 2); fi
    export MSCCLPP_CACHE_DIR=$o/cache MSCCLPP_FIXED_KERNELS=compile
    python3 "$here/stamp_ops.py" "$root/mscclpp-sys/cuda/execution_kernel.cu" "$o/stamp-x2.cu" 3 > /dev/null
    python3 "$here/stamp_hand.py" "$root/examples/interp_cost.cu" "$o/hand.cu" 3 > /dev/null
    nvidia-smi --query-gpu=index,clocks.sm,clocks.max.sm --format=csv > "$o/smclock.txt"
    for round in 1 2; do
      for sz in 4M 8M 16M; do
        name="stamps-allreduce_staged-x2-$sz-$round"
        MSCCLPP_INTERPRETER_SOURCE=$o/stamp-x2.cu INTERP_COST_HAND_SOURCE=$o/hand.cu \
          run "$name" 90 "${launch[@]}" -x MSCCLPP_INTERPRETER_SOURCE -x INTERP_COST_HAND_SOURCE "$b/interp_cost" "$sz" \
          allreduce_staged
        echo "$name: $(grep -cE '^PASS' "$o/$name.log") passed"; grep -E "FAIL|rror" "$o/$name.log" | head -3
      done
    done
    nvidia-smi --query-gpu=index,clocks.sm,clocks.max.sm --format=csv >> "$o/smclock.txt"
    python3 "$here/stamp_table.py" "$o" --waits --sizes 4M,8M,16M x2 | tee "$o/stamps.txt"
    rm -rf "$o"/cache
    ;;
  f)
    root=$(cd "$here/../../.." && pwd)
    if [ "${SHARED:-0}" = 1 ]; then shared_jobs; launch=("$shared"); else launch=("$mpi" 2); fi
    export MSCCLPP_CACHE_DIR=$o/cache
    python3 "$here/warpflags_hand.py" "$root/examples/interp_cost.cu" "$o/warp.cu" > /dev/null
    cp "$root/examples/interp_cost.cu" "$o/block.cu"
    for round in 1 2; do
      for v in block warp; do
        INTERP_COST_HAND_SOURCE=$o/$v.cu run "$v-$round" 120 "${launch[@]}" -x INTERP_COST_HAND_SOURCE \
          "$b/interp_cost" 1M:64M:x2 allreduce_staged
        grep -hE "^PASS|FAIL|rror" "$o/$v-$round.log" | sed "s/^/$v-$round: /"
      done
    done
    rm -rf "$o"/cache
    ;;
esac
pack "$A"
