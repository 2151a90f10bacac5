#!/usr/bin/env bash
# Session 26 final (2 GPUs): two tunes of one collective far apart on the host (`mscclpp tune reducescatter` at
# 1-4 KiB, then at 128-256 MiB, into one cache table), then `mscclpp bench reducescatter` 1 KiB-256 MiB over that
# table: the sizes between the two tunes keep the shipped rows' programs and grids. Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s26_final_c.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
export MSCCLPP_CACHE_DIR=$o/cache
run tune-rs-small 40 "$mpi" 2 "$b/mscclpp" tune reducescatter --dtype f16 --sizes 1K:4K --nccl --budget-s 25
run tune-rs-large 60 "$mpi" 2 "$b/mscclpp" tune reducescatter --dtype f16 --sizes 128M:256M --nccl \
  --thread-blocks 64,128 --threads 1024 --budget-s 40 --out "$o/tuned-rs.json"
tail -n 4 "$o/tune-rs-small.log" "$o/tune-rs-large.log"
run bench-reducescatter-f16 80 "$mpi" 2 "$b/mscclpp" bench reducescatter --dtype f16 --sizes 1K:256M \
  --csv "$o/bench-reducescatter-f16.csv"
grep -E "^ *[0-9]" "$o/bench-reducescatter-f16.log"
rm -rf "$o"/cache
pack "$A"
