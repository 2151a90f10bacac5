#!/usr/bin/env bash
# Session 27 (2 GPUs): `broadcast` with the root's local copy on a thread block of its own. The GPU suite's
# `matrix-b` (broadcast among the collectives checked), `mscclpp bench broadcast` 1 KiB-1 GiB beside NCCL with the
# shipped table, then `mscclpp tune broadcast` 16 MiB-1 GiB (the shipped rows from 64 MiB name NCCL).
# Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s27_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
suite matrix-b 170
bench_sizes bench-broadcast-f16 120 broadcast --dtype f16
export MSCCLPP_CACHE_DIR=$o/cache
run tune-bc "$(remaining 15)" "$mpi" 2 "$b/mscclpp" tune broadcast --dtype f16 --sizes 16M:1G --nccl \
  --thread-blocks 64,128 --threads 512,1024 --budget-s "$(remaining 45)" --out "$o/tuned-bc.json"
tail -n 12 "$o/tune-bc.log"
rm -rf "$o"/cache
pack "$A"
