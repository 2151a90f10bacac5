#!/usr/bin/env bash
# Session 19, call 2 (4 GPUs): `allreduce_rotated_res` (the reduction fused into the all-gather's first write)
# against `allreduce_rotated`, both from plans in BIN/plans (128 thread blocks x 512 threads, in place, generic
# interpreter), alternated twice at 256 MiB and 1 GiB on 4 ranks (once on 2); NCCL and the default selection
# beside them; `allreduce_rotated_res` by name over 1 MiB-1 GiB beside NCCL.
# Usage: scripts/diag/exp/s19_call2.sh BIN OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
A=$3
mpi_jobs
for n in 4 2; do
  devs=0,1,2,3; [ $n = 2 ] && devs=0,1
  export CUDA_VISIBLE_DEVICES=$devs
  ks="1 2"; [ $n = 2 ] && ks=1
  for k in $ks; do
    for p in allreduce_rotated allreduce_rotated_res; do
      MSCCLPP_CACHE_DIR=$o/cache run test-$p-n$n-$k 90 $mpi $n "$b/mscclpp" test "$b/plans/$p-n$n.json" \
        --in-place --size 256M,1G --graph --runs 20
      grep -o "size=[0-9]* .*us_per_call=[0-9.]*\|FAIL.*" "$o/test-$p-n$n-$k.log" | sed "s/^/$p n=$n: /" | \
        sed 's/dtype.*us_per/us_per/'
    done
  done
  lo=1M; [ $n = 2 ] && lo=64M
  MSCCLPP_CACHE_DIR=$o/cache run bench-res-n$n 120 $mpi $n "$b/mscclpp" bench allreduce --in-place \
    --program allreduce_rotated_res --sizes $lo:1G:x4 --nccl --csv "$o/bench-res-n$n.csv"
  grep -E "^ *[0-9]" "$o/bench-res-n$n.log"
  MSCCLPP_CACHE_DIR=$o/cache run bench-default-n$n 120 $mpi $n "$b/mscclpp" bench allreduce --in-place \
    --sizes $lo:1G:x4 --nccl --csv "$o/bench-default-n$n.csv"
  grep -E "^ *[0-9]" "$o/bench-default-n$n.log"
  pack "$A"
done
rm -rf "$o"/cache*
pack "$A"
