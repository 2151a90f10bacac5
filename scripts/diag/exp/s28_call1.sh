#!/usr/bin/env bash
# Session 28 (one GPU, two ranks sharing it: per-operation SM cycles only, no wall times): the interpreter's
# operations stamped (scripts/diag/exp/stamp_ops.py) on `allreduce_staged`, the interpreter of the binaries (BASE, a
# copy of their execution_kernel.cu) against the working tree's (the memory-channel handles read once per block and
# prefetched), each run twice, interleaved. Everything packed into ARCHIVE.
# Usage: BASE=FILE LIMIT=S scripts/diag/exp/s28_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
root=$(cd "$here/../../.." && pwd)
python3 "$here/stamp_ops.py" "$BASE" "$o/base_stamp.cu" > /dev/null
python3 "$here/stamp_ops.py" "$root/mscclpp-sys/cuda/execution_kernel.cu" "$o/new_stamp.cu" > /dev/null
export MSCCLPP_CACHE_DIR=$o/cache MSCCLPP_SHARED_GPU=1 CUDA_VISIBLE_DEVICES=0
for round in 1 2; do
  for v in base new; do
    for sz in 1M:32 4M:128; do
      run "stamp-$v-${sz%%:*}-$round" 100 env MSCCLPP_INTERPRETER_SOURCE="$o/${v}_stamp.cu" mpirun --allow-run-as-root \
        --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x MSCCLPP_CACHE_DIR -x MSCCLPP_WAIT_TIMEOUT_MS -x MSCCLPP_SHARED_GPU \
        -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS -x LD_LIBRARY_PATH -x MSCCLPP_INTERPRETER_SOURCE -x CUDA_VISIBLE_DEVICES \
        "$b/mscclpp" test allreduce_staged --size "${sz%%:*}" --instances "${sz##*:}" --in-place --dtype f32 --graph \
        --iters 20 --runs 50
      grep -E "PASS|FAIL|rror" "$o/stamp-$v-${sz%%:*}-$round.log" | head -4
      grep -E "STAMP block 0 " "$o/stamp-$v-${sz%%:*}-$round.log" | tail -2
      grep -E "STAMP block (31|127) " "$o/stamp-$v-${sz%%:*}-$round.log" | tail -2
    done
  done
done
rm -rf "$o"/cache
pack "$A"
