#!/usr/bin/env bash
# The plan-specialised interpreter programs on 4 GPUs: correctness of the four LL programs at 4 and 2 ranks (the
# embedded programs for f16/bf16/f32, the generic interpreter for i32, and a first-use compile of i32 with
# MSCCLPP_FIXED_KERNELS=compile), then the interpreter's cost against the hand-written kernel and `mscclpp bench`
# with the specialised programs and with MSCCLPP_FIXED_KERNELS=off, interleaved, at 2 and 4 ranks.
# Usage: scripts/diag/exp/s14_call2.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
export MSCCLPP_CACHE_DIR=$o/cache
mpi_jobs
run() { local name=$1 limit=$2 t0=$(date +%s); shift 2
  timeout -k 5 "$limit" "$@" > "$o/$name.log" 2>&1; local rc=$?
  echo "$name rc=$rc $(($(date +%s) - t0)) s: $(grep -cE 'PASS|check=ok|ok,bit-exact' "$o/$name.log") ok lines, $(grep -ciE 'FAIL|wrong|error' "$o/$name.log") fail lines"; }
export CUDA_VISIBLE_DEVICES=0,1,2,3 MSCCLPP_FIXED_KERNELS=
for p in allreduce_oneshot_ll allreduce_twoshot_ll allgather_allpairs_ll reducescatter_ll; do
  run "test-4r-$p" 90 $mpi 4 "$b/mscclpp" test $p --size 1K,4K+16,1M,1M+48 --dtype f16,bf16,f32,i32 --both-placements \
    --eager-and-graph --iters 3 --no-timing
done
MSCCLPP_FIXED_KERNELS=compile run test-4r-compile-i32 120 $mpi 4 "$b/mscclpp" test allreduce_oneshot_ll --size 1K,64K \
  --dtype i32 --both-placements --eager-and-graph --iters 3 --no-timing
grep -h "compiling the interpreter specialised" "$o/test-4r-compile-i32.log" | head -2
for r in 1 2; do
  for mode in "" off; do
    for n in 4 2; do
      vis=0,1,2,3; [ $n = 2 ] && vis=0,1
      CUDA_VISIBLE_DEVICES=$vis MSCCLPP_FIXED_KERNELS=$mode run "interp-${n}r-${mode:-fixed}-$r" 90 $mpi $n "$b/interp_cost" 1K,4K,64K,256K
    done
  done
done
for mode in "" off; do
  MSCCLPP_FIXED_KERNELS=$mode run "bench-4r-allreduce-${mode:-fixed}" 120 $mpi 4 "$b/mscclpp" bench allreduce --in-place \
    --sizes 1K:1M --runs 20 --nccl --csv "$o/bench-4r-allreduce-${mode:-fixed}.csv"
  CUDA_VISIBLE_DEVICES=0,1 MSCCLPP_FIXED_KERNELS=$mode run "bench-2r-allreduce-${mode:-fixed}" 120 $mpi 2 "$b/mscclpp" bench allreduce \
    --in-place --sizes 1K:1M --runs 20 --nccl --csv "$o/bench-2r-allreduce-${mode:-fixed}.csv"
done
for c in allgather reducescatter; do
  for n in 4 2; do
    vis=0,1,2,3; [ $n = 2 ] && vis=0,1
    CUDA_VISIBLE_DEVICES=$vis run "bench-${n}r-$c" 120 $mpi $n "$b/mscclpp" bench $c --sizes 1K:1M --runs 20 --nccl \
      --csv "$o/bench-${n}r-$c.csv"
  done
done
rm -rf "$o/cache"
cd "$o" && tar czf logs.tgz *.log *.csv mpi && rm -f *.log *.csv
