#!/usr/bin/env bash
# Session 27 (2 or 4 GPUs): `mscclpp tune broadcast` out of place again, now that the root's local copy runs on a
# thread block of its own (each instance of `broadcast` has one more block on the root, so the shipped rows'
# instances and thread blocks are stale). RANKS (2 or 4) ranks; sizes SIZES. Everything packed into ARCHIVE.
# Usage: RANKS=N SIZES=A:B LIMIT=S scripts/diag/exp/s27_call3.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((RANKS - 1)))
export MSCCLPP_CACHE_DIR=$o/cache
run tune-bc-w$RANKS "$(remaining 15)" "$mpi" "$RANKS" "$b/mscclpp" tune broadcast --dtype f16 --sizes "$SIZES" --nccl \
  --thread-blocks 1,2,4,8,16,32,64,128 --threads 256,512,1024 --budget-s "$(remaining 45)" --out "$o/tuned-bc-w$RANKS.json"
tail -n 25 "$o/tune-bc-w$RANKS.log"
rm -rf "$o"/cache
pack "$A"
