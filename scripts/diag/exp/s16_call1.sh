#!/usr/bin/env bash
# Session 16, first call (4 GPUs; 2-rank runs on GPUs 0 and 1): do plan-specialised programs remove the Simple
# programs' fixed cost at 1-64 MiB? The Simple all-reduces against the hand-written kernel, generic interpreter
# (the default: no Simple program is embedded) and compiled on first use (MSCCLPP_FIXED_KERNELS=compile), then
# `mscclpp bench` 1-64 MiB of the three collectives at 2 and 4 ranks both ways.
# Usage: scripts/diag/exp/s16_call1.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export MSCCLPP_CACHE_DIR=$o/cache2 CUDA_VISIBLE_DEVICES=0,1
for mode in generic compile; do
  fk=; [ $mode = compile ] && fk=compile
  export MSCCLPP_FIXED_KERNELS=$fk
  for c in 128x256 32x1024; do
    run "interp-$mode-allreduce_rsag-$c" 60 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_rsag $c
  done
  run "interp-$mode-allreduce_twoshot-128x256" 60 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_twoshot 128x256
done
grep -h "PASS\|FAIL\|SKIP\|rror" "$o"/interp-*.log | head -60
for n in 2 4; do
  [ $n = 4 ] && export CUDA_VISIBLE_DEVICES=0,1,2,3 MSCCLPP_CACHE_DIR=$o/cache4
  for mode in generic compile; do
    fk=; [ $mode = compile ] && fk=compile
    export MSCCLPP_FIXED_KERNELS=$fk
    for c in allreduce allgather reducescatter; do
      ip=; [ $c = allreduce ] && ip=--in-place
      run bench-${n}r-$mode-$c 70 $mpi $n "$b/mscclpp" bench $c $ip --sizes 1M:64M:x2 --nccl --csv "$o/bench-${n}r-$mode-$c.csv"
    done
  done
done
grep -h "speedup\|^ *[0-9]" "$o"/bench-*.log | head -80
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz *.log *.csv *.txt mpi && rm -f *.log *.csv
