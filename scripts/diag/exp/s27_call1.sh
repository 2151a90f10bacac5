#!/usr/bin/env bash
# Session 27 (2 GPUs): the pipelined LL128 one-shot all-reduce (each block sends piece k + 1 before it reduces piece
# k; 4 and 8 pieces) checked (4 element types, both placements, eager and graph), benched beside the plain LL128
# one-shot at each program's default grid (all three as plan-specialised programs, MSCCLPP_FIXED_KERNELS=compile),
# twice interleaved, then `mscclpp tune allreduce` in place at 1-16 MiB over 16-128 thread blocks beside NCCL.
# Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s27_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
export MSCCLPP_CACHE_DIR=$o/cache MSCCLPP_FIXED_KERNELS=compile
run test-pipelined 100 "$mpi" 2 "$b/mscclpp" test allreduce_oneshot_ll128_pipelined --size 1M,3M,8M,16M \
  --dtype f16,bf16,f32,i32 --both-placements --eager-and-graph --iters 10 --runs 10
tail -n 4 "$o/test-pipelined.log"
run test-pipelined8 60 "$mpi" 2 "$b/mscclpp" test allreduce_oneshot_ll128_pipelined8 --size 1M,3M,16M \
  --dtype f16,f32 --both-placements --eager-and-graph --iters 10 --runs 10
tail -n 4 "$o/test-pipelined8.log"
pack "$A"
for i in 1 2; do
  for p in allreduce_oneshot_ll128 allreduce_oneshot_ll128_pipelined allreduce_oneshot_ll128_pipelined8; do
    run bench-$p-$i 40 "$mpi" 2 "$b/mscclpp" bench allreduce --in-place --dtype f16 --sizes 1M:16M \
      --program $p --csv "$o/bench-$p-$i.csv"
    grep -E "^ *[0-9]" "$o/bench-$p-$i.log" | awk '{print $1, $4, $9, $14, $15, $16}'
  done
done
pack "$A"
run tune-ar "$(remaining 15)" "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --dtype f16 --sizes 1M:16M --nccl \
  --thread-blocks 16,32,64,128 --threads 512,1024 --budget-s "$(remaining 45)" --out "$o/tuned-ar.json"
tail -n 12 "$o/tune-ar.log"
rm -rf "$o"/cache
pack "$A"
