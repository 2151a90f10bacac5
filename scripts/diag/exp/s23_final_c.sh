#!/usr/bin/env bash
# Session 23, final call C (2 GPUs): `mscclpp tune allreduce` 1-8 MiB with larger thread blocks (768 and 1024 threads
# beside 512) for the LL128 two-shot; the GPU suite's `matrix-a` (the all-reduce and all-gather defaults, the LL128
# two-shot among them) and `runtime` parts at 2 ranks with the time left. Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s23_final_c.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
MSCCLPP_CACHE_DIR=$o/cache run tune-ar 80 "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --dtype f16 --sizes 1M:8M \
  --nccl --thread-blocks 64,128 --threads 512,768,1024 --budget-s 60 --out "$o/tuned-ar.json"
tail -n 7 "$o/tune-ar.log"
rm -rf "$o"/cache
pack "$A"
suite matrix-a 200
suite runtime "$(remaining 8)"
