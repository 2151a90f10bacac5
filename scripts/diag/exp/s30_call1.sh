#!/usr/bin/env bash
# Session 30 (one GPU, two ranks sharing it): plan-specialised programs with each reference's location fixed at
# compile time. SOURCE is the binaries' interpreter (`new`); `old` is the same with `kLocsFixed` forced false (the
# addresses computed from the records' locations at run time, as before), both run through
# MSCCLPP_INTERPRETER_SOURCE with MSCCLPP_FIXED_KERNELS=compile: interp_cost's hand-written kernels
# (`staged_allreduce`, and `twoshot_allreduce` for `allreduce_rsag`) and the interpreter stamped
# (scripts/diag/exp/stamp_hand.py, stamp_ops.py: SM cycles per operation, means over 3 checked launches), old and
# new interleaved, 1 MiB and 4 MiB, twice. Everything packed into ARCHIVE.
# Usage: LIMIT=S [PROGRAMS="..."] [REPEAT=N] scripts/diag/exp/s30_call1.sh PACK OUT ARCHIVE SOURCE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
new=$(cd "$(dirname "$4")" && pwd)/$(basename "$4")
start "$@"
root=$(cd "$here/../../.." && pwd)
shared_jobs
export MSCCLPP_CACHE_DIR=$o/cache MSCCLPP_FIXED_KERNELS=compile
cp "$new" "$o/new.cu"
sed 's/static constexpr bool kLocsFixed = kRefsFixed \&\& LOCS != kLocsDynamic;/static constexpr bool kLocsFixed = false;/' \
  "$o/new.cu" > "$o/old.cu"
if cmp -s "$o/new.cu" "$o/old.cu"; then echo "SOURCE has no kLocsFixed line to turn off"; exit 1; fi
python3 "$here/stamp_ops.py" "$o/old.cu" "$o/stamp-old.cu" 3 > /dev/null
python3 "$here/stamp_ops.py" "$o/new.cu" "$o/stamp-new.cu" 3 > /dev/null
python3 "$here/stamp_hand.py" "$root/examples/interp_cost.cu" "$o/hand.cu" 3 > /dev/null
sizes() { local s=$1 k out=; for k in $(seq "${REPEAT:-6}"); do out=$out${out:+,}$s; done; echo "$out"; }
for round in 1 2; do
  for v in old new; do
    for p in ${PROGRAMS:-allreduce_staged allreduce_rsag}; do
      for sz in 1M 4M; do
        name="stamps-$p-$v-$sz-$round"
        MSCCLPP_INTERPRETER_SOURCE=$o/stamp-$v.cu INTERP_COST_HAND_SOURCE=$o/hand.cu \
          run "$name" 90 "$shared" "$b/interp_cost" "$(sizes $sz)" "$p"
        echo "$name: $(grep -cE '^PASS' "$o/$name.log") passed"; grep -E "FAIL|rror" "$o/$name.log" | head -3
      done
    done
  done
done
rm -rf "$o"/cache
pack "$A"
