#!/usr/bin/env bash
# Session 26 (2 GPUs): `allreduce_staggered` checked (4 element types, both placements, eager and graph), benched
# beside `allreduce_staged` (each at its own default grid, the same thread blocks; both as plan-specialised programs,
# MSCCLPP_FIXED_KERNELS=compile) and NCCL at 1-64 MiB, twice interleaved, then `mscclpp tune allreduce` 2-64 MiB over
# both. Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s26_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
export MSCCLPP_CACHE_DIR=$o/cache MSCCLPP_FIXED_KERNELS=compile
run test-staggered 120 "$mpi" 2 "$b/mscclpp" test allreduce_staggered --size 1M,3M,8M,64M --dtype f16,bf16,f32,i32 \
  --both-placements --eager-and-graph --iters 10 --runs 10
tail -n 4 "$o/test-staggered.log"
pack "$A"
for i in 1 2; do
  for p in allreduce_staggered allreduce_staged; do
    run bench-$p-$i 60 "$mpi" 2 "$b/mscclpp" bench allreduce --in-place --dtype f16 --sizes 1M:64M --nccl \
      --program $p --csv "$o/bench-$p-$i.csv"
    grep -E "^ *[0-9]" "$o/bench-$p-$i.log" | awk '{print $1, $4, $9, $14, $15, $16}'
  done
done
pack "$A"
run tune-ar "$(remaining 15)" "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --dtype f16 --sizes 2M:64M --nccl \
  --thread-blocks 32,64,128 --threads 512,1024 --budget-s "$(remaining 45)" --out "$o/tuned-ar.json"
tail -n 12 "$o/tune-ar.log"
rm -rf "$o"/cache
pack "$A"
