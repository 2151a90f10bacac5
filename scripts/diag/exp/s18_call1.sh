#!/usr/bin/env bash
# Session 18, call 1 (2 GPUs): all-gather and reduce-scatter at 64 MiB-1 GiB, out of place. Plans in BIN/plans
# written by `mscclpp plan` (ag-orig: `allgather_allpairs` as the shipped H200 table runs it; ag-sep: the same with
# the local copy on a thread block of its own; ag-rot/rs-rot: the rotated programs; rs-orig: `reducescatter` as the
# table runs it; rs-staged: `reducescatter_staged` with its size cap lifted), all on the generic interpreter
# (MSCCLPP_FIXED_KERNELS=off); then the shipped choice and NCCL through `mscclpp bench`.
# Usage: scripts/diag/exp/s18_call1.sh BIN OUT
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export MSCCLPP_FIXED_KERNELS=off CUDA_VISIBLE_DEVICES=0,1
for f in "$b"/plans/ag-*.json "$b"/plans/rs-*.json; do
  nm=$(basename "$f" .json)
  run test-$nm 60 $mpi 2 "$b/mscclpp" test "$f" --size 64M,256M,1G --out-of-place --graph --runs 20 --iters 10
  grep -h "us_per_call" "$o/test-$nm.log" | sed "s/^/$nm: /" | cut -c1-220
done
export MSCCLPP_FIXED_KERNELS=
for c in allgather reducescatter; do
  MSCCLPP_CACHE_DIR=$o/cache run bench-$c 120 $mpi 2 "$b/mscclpp" bench $c --sizes 64M:1G:x4 --nccl --csv "$o/bench-$c.csv"
  tail -n 5 "$o/bench-$c.log"
done
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz $(ls -d *.log *.csv *.txt mpi 2>/dev/null) && rm -rf *.log mpi
