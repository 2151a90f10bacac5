#!/usr/bin/env bash
# Session 30 (one GPU, two ranks sharing it): correctness of the binaries' plan-specialised programs with fixed
# reference locations: (1) `mscclpp test` of 20 default programs (their embedded programs), f16 and f32, eager and
# graph, in place and out of place, every launch checked; (2) interp_cost of the LL, LL128 and Simple programs (both kernels checked); (3) the
# GPU suite's `shared-gpu` part (MSCCL++ corpus plans compile their programs at their first bind). Everything packed
# into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s30_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
shared_jobs
export MSCCLPP_CACHE_DIR=$o/cache
for p in allreduce_oneshot_ll:256K allreduce_twoshot_ll:256K allreduce_oneshot_ll128:1M allreduce_twoshot_ll128:1M \
  allreduce_staged:1M,4M allreduce_rsag:1M,4M allreduce_twoshot:1M allreduce_rotated:4M allgather_allpairs_ll:256K \
  allgather_staged:2M allgather_rotated:4M allgather_allpairs:4M reducescatter_ll:256K reducescatter_staged:2M \
  reducescatter_rotated:4M reducescatter:4M reducescatter_pipelined:4M broadcast_ll:256K broadcast:4M alltoall:1M; do
  name=test-${p%%:*}
  run "$name" 90 "$shared" "$b/mscclpp" test "${p%%:*}" --size "${p##*:}" --dtype f16,f32 --eager-and-graph --iters 3 \
    --no-timing --both-placements
  echo "$name: $(grep -c '^PASS' "$o/$name.log") passed, $(grep -c '^FAIL' "$o/$name.log") failed"
  grep -E "rror" "$o/$name.log" | head -2
done
for p in allreduce_oneshot_ll allreduce_twoshot_ll allgather_allpairs_ll reducescatter_ll; do
  run "interp-$p" 60 "$shared" "$b/interp_cost" 64K,256K "$p"
  grep -E "^PASS|FAIL|rror" "$o/interp-$p.log" | head -3
done
for p in allreduce_twoshot_ll128 allreduce_oneshot_ll128 allreduce_staged allreduce_rsag allreduce_twoshot; do
  run "interp-$p" 60 "$shared" "$b/interp_cost" 1M,4M "$p"
  grep -E "^PASS|FAIL|rror" "$o/interp-$p.log" | head -3
done
if [ "${SUITE:-1}" = 1 ]; then
  RANKS=2 suite_run shared-gpu "$(remaining 20)"
  tail -n 4 "$o/suite-shared-gpu.log"
fi
rm -rf "$o"/cache
pack "$A"
