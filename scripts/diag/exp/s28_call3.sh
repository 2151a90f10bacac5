#!/usr/bin/env bash
# Session 28 (one GPU, two ranks sharing it: cycles inside operations only): `allreduce_staged` stamped
# (scripts/diag/exp/stamp_ops.py) through its plan-specialised program compiled from each source
# (MSCCLPP_FIXED_KERNELS=compile): `base` the binaries' interpreter, and the edited ones given as FILES (each
# stamped the same way), 1 MiB × 32 instances and 4 MiB × 128, f32 in place, twice, interleaved. Everything packed
# into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s28_call3.sh PACK OUT ARCHIVE [NAME=FILE ...]
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$1" "$2" "$3"
shift 3
root=$(cd "$here/../../.." && pwd)
export MSCCLPP_FIXED_KERNELS=compile MSCCLPP_CACHE_DIR=$o/cache
shared_jobs
names=(base)
python3 "$here/stamp_ops.py" "$root/mscclpp-sys/cuda/execution_kernel.cu" "$o/base_stamp.cu" > /dev/null
for nf in "$@"; do
  names+=("${nf%%=*}")
  python3 "$here/stamp_ops.py" "${nf#*=}" "$o/${nf%%=*}_stamp.cu" > /dev/null
done
for round in 1 2; do
  for v in "${names[@]}"; do
    for sz in 1M:32 4M:128; do
      name="stamp-$v-${sz%%:*}-$round"
      export MSCCLPP_INTERPRETER_SOURCE=$o/${v}_stamp.cu
      run "$name" 100 "$shared" "$b/mscclpp" test allreduce_staged --size "${sz%%:*}" --instances "${sz##*:}" \
        --in-place --dtype f32 --graph --iters 20 --runs 50
      grep -E "PASS|FAIL|rror" "$o/$name.log" | cut -c1-100 | head -2
      grep -E "STAMP block 0 " "$o/$name.log" | tail -2
    done
  done
done
rm -rf "$o"/cache
pack "$A"
