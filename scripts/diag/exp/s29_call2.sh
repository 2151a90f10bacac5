#!/usr/bin/env bash
# Session 29 (one GPU, two ranks sharing it): the interpreter with a plan-specialised program's reference pointers
# in registers (`s29/fixed-refs.patch`: with fixed reference counts the pointer arrays unroll; before, every
# specialised program kept them on the stack, 33-81 local loads and stores per program in the PTX), run through
# MSCCLPP_INTERPRETER_SOURCE with MSCCLPP_FIXED_KERNELS=compile on the binaries of before: (1) interp_cost's
# hand-written `allreduce_staged` and the specialised program stamped, the interpreter of the binaries (`old`) and
# the patched one (`new`), interleaved, 1 MiB and 4 MiB, twice; (2) `mscclpp test` of the default programs
# compiled from the patched source, f16 and f32, eager and graph, every launch checked; (3) interp_cost of the LL
# and Simple programs from the patched source (both kernels checked); (4) with SUITE=1 the GPU suite's `shared-gpu`
# part on the binaries' own kernels. Everything packed into ARCHIVE.
# (1b) with PLANS, JSON plans stamped.
# Usage: [SUITE=1] [PLANS=...] LIMIT=S scripts/diag/exp/s29_call2.sh PACK OUT ARCHIVE OLD_SOURCE NEW_SOURCE (the interpreter sources:
# the binaries', the patched one)
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
old=$(cd "$(dirname "$4")" && pwd)/$(basename "$4")
new=$(cd "$(dirname "$5")" && pwd)/$(basename "$5")
start "$@"
root=$(cd "$here/../../.." && pwd)
shared_jobs
export MSCCLPP_CACHE_DIR=$o/cache MSCCLPP_FIXED_KERNELS=compile
cp "$old" "$o/old.cu"
cp "$new" "$o/new.cu"
python3 "$here/stamp_ops.py" "$o/old.cu" "$o/stamp-old.cu" 3 > /dev/null
python3 "$here/stamp_ops.py" "$o/new.cu" "$o/stamp-new.cu" 3 > /dev/null
python3 "$here/stamp_hand.py" "$root/examples/interp_cost.cu" "$o/hand.cu" 3 > /dev/null
sizes() { local s=$1 k out=; for k in $(seq 10); do out=$out${out:+,}$s; done; echo "$out"; }
for round in 1 2; do
  for v in old new; do
    for sz in 1M 4M; do
      name="stamps-$v-$sz-$round"
      MSCCLPP_INTERPRETER_SOURCE=$o/stamp-$v.cu INTERP_COST_HAND_SOURCE=$o/hand.cu \
        run "$name" 120 "$shared" "$b/interp_cost" "$(sizes $sz)" allreduce_staged
      echo "$name: $(grep -cE '^PASS' "$o/$name.log") passed"; grep -E "FAIL|rror" "$o/$name.log" | head -3
    done
  done
done
# (1b) With PLANS="A.json B.json ...": each JSON plan's operations stamped (the patched source, means over 200
# launches), 1 MiB, interleaved, twice.
if [ -n "${PLANS:-}" ]; then
  python3 "$here/stamp_ops.py" "$o/new.cu" "$o/stamp-plan.cu" 200 > /dev/null
  for round in 1 2; do
    for plan in $PLANS; do
      name="plan-$(basename "$plan" .json)-$round"
      MSCCLPP_INTERPRETER_SOURCE=$o/stamp-plan.cu \
        run "$name" 100 "$shared" "$b/mscclpp" test "$plan" --size 1M --dtype f32 --graph --iters 20 --runs 20
      echo "$name: $(grep -c '^PASS' "$o/$name.log") passed"; grep -E "FAIL|rror" "$o/$name.log" | head -2
      grep -E "STAMP block 0 " "$o/$name.log" | tail -1
    done
  done
fi
export MSCCLPP_INTERPRETER_SOURCE=$o/new.cu
for p in allreduce_oneshot_ll:256K allreduce_twoshot_ll:256K allreduce_oneshot_ll128:1M allreduce_twoshot_ll128:1M \
  allreduce_staged:1M,4M allreduce_rsag:1M,4M allreduce_twoshot:1M allreduce_rotated:4M allgather_allpairs_ll:256K \
  allgather_staged:2M allgather_rotated:4M allgather_allpairs:4M reducescatter_ll:256K reducescatter_staged:2M \
  reducescatter_rotated:4M reducescatter:4M reducescatter_pipelined:4M broadcast_ll:256K broadcast:4M alltoall:1M; do
  name=test-${p%%:*}
  run "$name" 90 "$shared" "$b/mscclpp" test "${p%%:*}" --size "${p##*:}" --dtype f16,f32 --eager-and-graph --iters 3 --no-timing
  echo "$name: $(grep -c '^PASS' "$o/$name.log") passed, $(grep -c '^FAIL' "$o/$name.log") failed"; grep -E "rror" "$o/$name.log" | head -2
done
for p in allreduce_oneshot_ll allreduce_twoshot_ll allgather_allpairs_ll reducescatter_ll; do
  run "interp-$p" 90 "$shared" "$b/interp_cost" 64K,256K "$p"
  grep -E "^PASS|FAIL|rror" "$o/interp-$p.log" | head -3
done
for p in allreduce_twoshot_ll128 allreduce_oneshot_ll128 allreduce_staged allreduce_rsag allreduce_twoshot; do
  run "interp-$p" 90 "$shared" "$b/interp_cost" 1M,4M "$p"
  grep -E "^PASS|FAIL|rror" "$o/interp-$p.log" | head -3
done
# (4) With SUITE=1: the GPU suite's `shared-gpu` part on the binaries' own (embedded) kernels.
unset MSCCLPP_INTERPRETER_SOURCE MSCCLPP_FIXED_KERNELS
if [ "${SUITE:-0}" = 1 ]; then
  RANKS=2 suite_run shared-gpu "$(remaining 20)"
  tail -n 4 "$o/suite-shared-gpu.log"
fi
rm -rf "$o"/cache
pack "$A"
