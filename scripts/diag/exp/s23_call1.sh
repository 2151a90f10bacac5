#!/usr/bin/env bash
# Session 23, the LL128 two-shot on 2 GPUs: interp_cost of `allreduce_twoshot_ll128` (hand-written kernel against
# the interpreter, 256 KiB-16 MiB, checked); `mscclpp bench allreduce` of it alone and with the shipped table, fp16
# in place, NCCL beside; `mscclpp tune allreduce` 256 KiB-32 MiB (its rows go into the shipped table); the GPU
# suite's `matrix-a` part (correctness matrix of the all-reduce and all-gather defaults, the new program among
# them) with the time left. Everything packed into ARCHIVE after each step.
# Usage: LIMIT=S scripts/diag/exp/s23_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
run interp-ll128 60 "$mpi" 2 "$b/interp_cost" 256K:16M:x2 allreduce_twoshot_ll128
grep -h "^PASS\|FAIL\|rror" "$o/interp-ll128.log" | sed 's/checks=6 //'
export MSCCLPP_CACHE_DIR=$o/cache
run bench-ll128 60 "$mpi" 2 "$b/mscclpp" bench allreduce --in-place --dtype f16 --sizes 256K:32M --nccl \
  --program allreduce_twoshot_ll128 --csv "$o/bench-ll128.csv"
grep -E "^ *[0-9]" "$o/bench-ll128.log" | awk '{print $1, $4, $9, $14, $16}'
pack "$A"
run tune-ar 220 "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --dtype f16 --sizes 256K:32M --nccl \
  --thread-blocks 32,64,128 --threads 256,512 --budget-s 190 --out "$o/tuned-ar.json"
tail -n 12 "$o/tune-ar.log"
pack "$A"
rm -rf "$o"/cache
suite matrix-a "$(remaining 8)"
