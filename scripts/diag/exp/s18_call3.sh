#!/usr/bin/env bash
# Session 18, call 3 (2 GPUs): `reducescatter_pipelined` out of place with 8, 12 or 16 chunks per slice
# (rs-k<chunks>-r1-i<instances>-t<threads>), from plans in BIN/plans3 on the generic interpreter.
# Usage: scripts/diag/exp/s18_call3.sh BIN OUT
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export MSCCLPP_FIXED_KERNELS=off CUDA_VISIBLE_DEVICES=0,1
for f in "$b"/plans3/*.json; do
  nm=$(basename "$f" .json)
  case $nm in
    ar-*) args="--size 1M,4M,16M,64M,256M --in-place" ;;
    rs-*) args="--size 64M,256M,1G --out-of-place" ;;
    ag-*) args="--size 4M,16M,64M,256M --out-of-place" ;;
  esac
  run test-$nm 60 $mpi 2 "$b/mscclpp" test "$f" $args --graph --runs 20 --iters 10
  grep -h "us_per_call" "$o/test-$nm.log" | sed "s/^/$nm: /" | sed 's/ dtype=.*us_per_call=/ us=/' | cut -c1-120
done
cd "$o" && tar czf logs.tgz $(ls -d *.log *.txt mpi 2>/dev/null) && rm -rf *.log mpi
