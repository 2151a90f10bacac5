#!/usr/bin/env bash
# Session 28 (one GPU, two ranks sharing it): (1) a machine's tuned table whose all-reduce row at 4 MiB names
# `allreduce_staged` with 256 instances (256 thread blocks per rank, more than the 128 that can be resident, as a
# table measured before a program changed can): `mscclpp bench` must say so once and run the program's own grid,
# bit-exact (before `d615e3b` the executor refused the plan on one rank while the other waited out its timeout);
# (2) `allreduce_staged` stamped (scripts/diag/exp/stamp_ops.py) through its plan-specialised program compiled from
# the stamped source (MSCCLPP_FIXED_KERNELS=compile) and through the generic interpreter, interleaved; (3) the GPU
# suite's `shared-gpu` part. Everything packed into ARCHIVE.
# Usage: [SUITE=0] LIMIT=S scripts/diag/exp/s28_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
root=$(cd "$here/../../.." && pwd)
shared_jobs
# (1) The stale row.
export MSCCLPP_CACHE_DIR=$o/cache-stale
mkdir -p "$MSCCLPP_CACHE_DIR/tuned"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
python3 - "$MSCCLPP_CACHE_DIR/tuned/tuned-nvidia-h200-w2-r2.json" "$gpu" "$("$b/mscclpp" --version | awk '{print $2}')" <<'PY'
import json, sys
row = dict(collective="allreduce", dtype="f16", inplace=True, size=4 << 20, program="allreduce_staged",
           instances=256, thread_blocks=256, threads_per_block=1024, us=1.0, nccl_us=None)
key = dict(format=1, gpu=sys.argv[2], world_size=2, ranks_per_node=2, driver="13.0", library=sys.argv[3])
json.dump(dict(key=key, rows=[row]), open(sys.argv[1], "w"), indent=1)
PY
cp "$MSCCLPP_CACHE_DIR/tuned/tuned-nvidia-h200-w2-r2.json" "$o/stale-table.json"
"$b/mscclpp" list --collective allreduce > "$o/stale-list.log" 2>&1
grep -A3 "^tuned table" "$o/stale-list.log"
run stale-bench 120 "$shared" "$b/mscclpp" bench allreduce --sizes 4M --in-place --dtype f16
grep -E "warning|4194304|4 MiB|rror" "$o/stale-bench.log" | head -8
# (2) Stamps: the specialised program against the generic interpreter.
export MSCCLPP_CACHE_DIR=$o/cache
python3 "$here/stamp_ops.py" "$root/mscclpp-sys/cuda/execution_kernel.cu" "$o/stamp.cu" > /dev/null
export MSCCLPP_INTERPRETER_SOURCE=$o/stamp.cu
for round in 1 2; do
  for mode in compile off; do
    for sz in 1M:32 4M:128; do
      name="stamp-$mode-${sz%%:*}-$round"
      export MSCCLPP_FIXED_KERNELS=$mode
      run "$name" 100 "$shared" "$b/mscclpp" test allreduce_staged --size "${sz%%:*}" \
        --instances "${sz##*:}" --in-place --dtype f32 --graph --iters 20 --runs 50
      grep -E "PASS|FAIL|rror" "$o/$name.log" | head -3
      grep -E "STAMP block 0 " "$o/$name.log" | tail -2
    done
  done
done
unset MSCCLPP_INTERPRETER_SOURCE MSCCLPP_FIXED_KERNELS
# (3) The shared-gpu part (SUITE=0 skips it).
if [ "${SUITE:-1}" != 0 ]; then
  RANKS=2 suite_run shared-gpu "$(remaining 20)"
  tail -n 4 "$o/suite-shared-gpu.log"
fi
rm -rf "$o"/cache "$o"/cache-stale
pack "$A"
