#!/usr/bin/env bash
# Session 18, call 2 (2 GPUs): the pipelined programs (`allreduce_pipelined` in place, `reducescatter_pipelined`
# out of place; pipe8/pipe4: 8 or 4 chunks per slice) and `allgather_allpairs` with its local copy on a thread block
# of its own (ag-sep), from plans in BIN/plans2 on the generic interpreter; rs-orig: `reducescatter` as the shipped
# table runs it. Then the shipped choice and NCCL through `mscclpp bench` (all-reduce in place).
# Usage: scripts/diag/exp/s18_call2.sh BIN OUT
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export MSCCLPP_FIXED_KERNELS=off CUDA_VISIBLE_DEVICES=0,1
for f in "$b"/plans2/*.json; do
  nm=$(basename "$f" .json)
  case $nm in
    ar-*) args="--size 1M,4M,16M,64M,256M --in-place" ;;
    rs-*) args="--size 16M,64M,256M,1G --out-of-place" ;;
    ag-*) args="--size 4M,16M,64M,256M --out-of-place" ;;
  esac
  run test-$nm 60 $mpi 2 "$b/mscclpp" test "$f" $args --graph --runs 20 --iters 10
  grep -h "us_per_call" "$o/test-$nm.log" | sed "s/^/$nm: /" | sed 's/ dtype=.*us_per_call=/ us=/' | cut -c1-120
done
export MSCCLPP_FIXED_KERNELS=
MSCCLPP_CACHE_DIR=$o/cache run bench-allreduce 120 $mpi 2 "$b/mscclpp" bench allreduce --in-place --sizes 1M:256M:x4 --nccl \
  --csv "$o/bench-allreduce.csv"
tail -n 6 "$o/bench-allreduce.log"
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz $(ls -d *.log *.csv *.txt mpi 2>/dev/null) && rm -rf *.log mpi
