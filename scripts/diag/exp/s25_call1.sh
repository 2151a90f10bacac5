#!/usr/bin/env bash
# Session 25 (2 GPUs): `allreduce_pipelined` checked (4 element types, both placements, eager and graph), benched
# beside `allreduce_staged` and NCCL at 2-64 MiB, then `mscclpp tune allreduce` 2-64 MiB (its rows go into the
# shipped table of the host's GPU). Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s25_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
export MSCCLPP_CACHE_DIR=$o/cache
run test-pipelined 120 "$mpi" 2 "$b/mscclpp" test allreduce_pipelined --size 2M,3M,8M,64M --dtype f16,bf16,f32,i32 \
  --both-placements --eager-and-graph --iters 10 --runs 10
tail -n 4 "$o/test-pipelined.log"
pack "$A"
for p in allreduce_pipelined allreduce_staged; do
  run bench-$p 60 "$mpi" 2 "$b/mscclpp" bench allreduce --in-place --dtype f16 --sizes 2M:64M --nccl \
    --program $p --csv "$o/bench-$p.csv"
  grep -E "^ *[0-9]" "$o/bench-$p.log" | awk '{print $1, $4, $9, $14, $15, $16}'
done
pack "$A"
run tune-ar "$(remaining 15)" "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --dtype f16 --sizes 2M:64M --nccl \
  --thread-blocks 32,64,128 --threads 256,512,1024 --budget-s "$(remaining 45)" --out "$o/tuned-ar.json"
tail -n 12 "$o/tune-ar.log"
rm -rf "$o"/cache
pack "$A"
