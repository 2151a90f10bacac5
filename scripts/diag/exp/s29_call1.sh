#!/usr/bin/env bash
# Session 29 (one GPU, two ranks sharing it): (1) plan-specialised programs by default (`MSCCLPP_FIXED_KERNELS`
# unset: `auto`), from an empty kernel cache: the default plans compile nothing (`mscclpp bench allreduce` f16 and
# a default program in i32, `MSCCLPP_TRACE_STARTUP=1`); a named program none is embedded for (`allreduce_twoshot`)
# and an MSCCL++ corpus plan compile theirs once (one line per rank and entry point), then come from the cache;
# `embedded` compiles nothing; every run bit-exact; (2) interp_cost's hand-written `allreduce_staged` and the
# interpreter's specialised program, both stamped (stamp_hand.py, stamp_ops.py: means over the 3 checked launches
# of each size), 1 MiB and 4 MiB at the tuned grids, in one run, twice; (3) interp_cost's Simple programs
# (correctness when ranks share a GPU); (4) the GPU suite's `shared-gpu` part. Everything packed into ARCHIVE.
# Usage: [SUITE=0] LIMIT=S scripts/diag/exp/s29_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
root=$(cd "$here/../../.." && pwd)
shared_jobs
compiles() { grep -c "compiling the interpreter specialised" "$o/$1.log"; }
# (1) First-use compiles.
export MSCCLPP_CACHE_DIR=$o/cache-fresh MSCCLPP_TRACE_STARTUP=1
run default-bench 150 "$shared" "$b/mscclpp" bench allreduce --sizes 1K,64K,1M,4M,16M --in-place --dtype f16
echo "default-bench: compiles $(compiles default-bench)"; grep -E "rror|wrong|generic" "$o/default-bench.log" | head -3
run default-i32 90 "$shared" "$b/mscclpp" test allreduce_oneshot_ll --size 64K --dtype i32 --eager-and-graph --iters 3 --no-timing
echo "default-i32: compiles $(compiles default-i32)"; grep -E "PASS|FAIL|rror" "$o/default-i32.log" | head -3
unset MSCCLPP_TRACE_STARTUP
for n in 1 2; do
  run "named-$n" 120 "$shared" "$b/mscclpp" test allreduce_twoshot --size 1M,4M --dtype f16,f32 --eager-and-graph --iters 3 --no-timing
  echo "named-$n: compiles $(compiles named-$n)"; grep -E "PASS|FAIL|rror" "$o/named-$n.log" | head -5
done
plan=$root/tests/corpus/mscclpp/generated/single_node__allreduce_pipeline__n2.json
if [ -e "$plan" ]; then
  run corpus 120 "$shared" "$b/mscclpp" test "$plan" --size 1M,64K --dtype f16,f32 --eager-and-graph --iters 3 --no-timing
  echo "corpus $(basename "$plan"): compiles $(compiles corpus)"; grep -E "PASS|FAIL|rror" "$o/corpus.log" | head -5
fi
export MSCCLPP_CACHE_DIR=$o/cache-embedded MSCCLPP_FIXED_KERNELS=embedded
run embedded 120 "$shared" "$b/mscclpp" test allreduce_twoshot --size 1M --dtype f16 --iters 3 --no-timing
echo "embedded: compiles $(compiles embedded)"; grep -E "PASS|FAIL|rror" "$o/embedded.log" | head -3
unset MSCCLPP_FIXED_KERNELS
# (2) Stamps of the hand-written kernel and the specialised program, in one run.
export MSCCLPP_CACHE_DIR=$o/cache
python3 "$here/stamp_ops.py" "$root/mscclpp-sys/cuda/execution_kernel.cu" "$o/stamp.cu" 3 > /dev/null
python3 "$here/stamp_hand.py" "$root/examples/interp_cost.cu" "$o/hand.cu" 3 > /dev/null
sizes() { local s=$1 k out=; for k in $(seq 10); do out=$out${out:+,}$s; done; echo "$out"; }
for round in 1 2; do
  for sz in 1M 4M; do
    name="stamps-$sz-$round"
    MSCCLPP_INTERPRETER_SOURCE=$o/stamp.cu MSCCLPP_FIXED_KERNELS=compile INTERP_COST_HAND_SOURCE=$o/hand.cu \
      run "$name" 150 "$shared" "$b/interp_cost" "$(sizes $sz)" allreduce_staged
    grep -cE "^PASS" "$o/$name.log"; grep -E "FAIL|rror" "$o/$name.log" | head -3
    grep -E "HANDSTAMP block 0:" "$o/$name.log" | tail -1; grep -E "STAMP block 0 " "$o/$name.log" | tail -1
  done
done
# (3) interp_cost's Simple programs, correctness.
for p in allreduce_staged allreduce_rsag allreduce_twoshot; do
  run "interp-$p" 150 "$shared" "$b/interp_cost" 1M,4M "$p"
  grep -E "PASS|FAIL|SKIP|rror" "$o/interp-$p.log" | head -4
done
# (4) The shared-gpu part (SUITE=0 skips it).
if [ "${SUITE:-1}" != 0 ]; then
  RANKS=2 suite_run shared-gpu "$(remaining 20)"
  tail -n 4 "$o/suite-shared-gpu.log"
fi
rm -rf "$o"/cache "$o"/cache-fresh "$o"/cache-embedded
pack "$A"
