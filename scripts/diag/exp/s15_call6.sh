#!/usr/bin/env bash
# Session 15, last call (4 GPUs; 2-rank runs on GPUs 0 and 1): the 4-rank rows to 1 MiB re-tuned with both
# block-size classes embedded, then 4 ranks out of the box with that table (1 KiB-1 GiB in steps of 4), then 2
# ranks out of the box with the shipped table.
# Usage: scripts/diag/exp/s15_call6.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export MSCCLPP_FIXED_KERNELS= MSCCLPP_CACHE_DIR=$o/cache4 CUDA_VISIBLE_DEVICES=0,1,2,3
run tune-4r-ar 45 $mpi 4 "$b/mscclpp" tune allreduce --in-place --sizes 1K:1M --nccl --budget-s 35 --out "$o/tuned-4r-ar.json"
run tune-4r-agrs 70 $mpi 4 "$b/mscclpp" tune allgather reducescatter --sizes 1K:1M --nccl --budget-s 60 --out "$o/tuned-4r-agrs.json"
for c in allreduce allgather reducescatter; do
  ip=; [ $c = allreduce ] && ip=--in-place
  run bench-4r-$c 60 $mpi 4 "$b/mscclpp" bench $c $ip --sizes 1K:1G:x4 --nccl --csv "$o/bench-4r-$c.csv"
done
export MSCCLPP_CACHE_DIR=$o/cache2 CUDA_VISIBLE_DEVICES=0,1
for c in allreduce allgather reducescatter; do
  ip=; [ $c = allreduce ] && ip=--in-place
  run bench-2r-$c 40 $mpi 2 "$b/mscclpp" bench $c $ip --sizes 1K:1G:x4 --nccl --csv "$o/bench-2r-$c.csv"
done
grep -h "    1024 \| 1073741824 " "$o"/bench-*.log
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz *.log *.csv *.json *.txt mpi && rm -rf *.log *.csv *.json
