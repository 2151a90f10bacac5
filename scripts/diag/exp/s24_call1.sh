#!/usr/bin/env bash
# Session 24 (2 GPUs, H100 or H200): interp_cost of the LL128 all-reduces on the plan-specialised programs
# (`allreduce_twoshot_ll128` 256 KiB-4 MiB, `allreduce_oneshot_ll128` 256 KiB-16 MiB; the two-shot again on the
# generic interpreter at 256 KiB-1 MiB), a correctness check of the one-shot, `mscclpp bench allreduce` of it alone
# beside NCCL, and `mscclpp tune allreduce` 256 KiB-16 MiB (its rows go into the shipped table of the host's GPU).
# Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s24_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
run interp-2shot 60 "$mpi" 2 "$b/interp_cost" 256K:4M:x2 allreduce_twoshot_ll128
run interp-1shot 80 "$mpi" 2 "$b/interp_cost" 256K:16M:x2 allreduce_oneshot_ll128
MSCCLPP_FIXED_KERNELS=off run interp-2shot-generic 40 "$mpi" 2 "$b/interp_cost" 256K:1M:x2 allreduce_twoshot_ll128
grep -H "^PASS\|FAIL\|rror" "$o"/interp-*.log | sed 's/checks=6 //'
pack "$A"
export MSCCLPP_CACHE_DIR=$o/cache
run test-1shot 90 "$mpi" 2 "$b/mscclpp" test allreduce_oneshot_ll128 --size 256K,1M,3M,16M --dtype f16,bf16,f32,i32 --both-placements \
  --eager-and-graph --iters 10 --runs 10
tail -n 4 "$o/test-1shot.log"
run bench-1shot 60 "$mpi" 2 "$b/mscclpp" bench allreduce --in-place --dtype f16 --sizes 256K:16M --nccl \
  --program allreduce_oneshot_ll128 --csv "$o/bench-1shot.csv"
grep -E "^ *[0-9]" "$o/bench-1shot.log" | awk '{print $1, $4, $9, $14, $16}'
pack "$A"
run tune-ar "$(remaining 15)" "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --dtype f16 --sizes 256K:16M --nccl \
  --thread-blocks 32,64,128 --threads 256,512 --budget-s "$(remaining 45)" --out "$o/tuned-ar.json"
tail -n 12 "$o/tune-ar.log"
rm -rf "$o"/cache
pack "$A"
