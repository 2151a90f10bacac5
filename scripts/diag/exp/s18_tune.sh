#!/usr/bin/env bash
# Session 18, tuning (2 GPUs): all-gather from 4 MiB and reduce-scatter from 16 MiB to 1 GiB, out of place, f16,
# with NCCL beside, 64 or 128 thread blocks per rank: the rows of the shipped H200 table that the changed
# `allgather_allpairs` (its local copy on a thread block of its own) and the new `reducescatter_pipelined` touch.
# Both runs share one cache directory, so the second table written holds both collectives' rows.
# Usage: scripts/diag/exp/s18_tune.sh BIN OUT
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1 MSCCLPP_CACHE_DIR=$o/cache
run tune-allgather 250 $mpi 2 "$b/mscclpp" tune allgather --sizes 4M:1G --nccl --thread-blocks 64,128 \
  --threads 256,512,1024 --budget-s 200 --out "$o/tuned-ag.json"
tail -n 14 "$o/tune-allgather.log"
run tune-reducescatter 250 $mpi 2 "$b/mscclpp" tune reducescatter --sizes 16M:1G --nccl --thread-blocks 64,128 \
  --threads 256,512,1024 --budget-s 200 --out "$o/tuned-agrs.json"
tail -n 12 "$o/tune-reducescatter.log"
rm -rf "$o"/cache
cd "$o" && tar czf logs.tgz $(ls -d *.log *.txt mpi 2>/dev/null) && rm -rf *.log mpi
