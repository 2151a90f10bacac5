#!/usr/bin/env bash
# Session 26 (2 GPUs): `mscclpp tune broadcast` from 8 MiB to 256 MiB with 64 and 128 thread blocks (the shipped
# table has no broadcast rows above 4 MiB, so those sizes ran the program's default grid), `mscclpp tune allreduce`
# in place at 4-16 MiB over a wider grid (does any program or grid beat the shipped rows there?), then
# `mscclpp bench broadcast` from 1 MiB to 1 GiB with the tuned rows beside NCCL. Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s26_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
export MSCCLPP_CACHE_DIR=$o/cache
run tune-bc 150 "$mpi" 2 "$b/mscclpp" tune broadcast --dtype f16 --sizes 8M:256M --nccl \
  --thread-blocks 32,64,96,128 --threads 512,1024 --budget-s 130 --out "$o/tuned-bc.json"
tail -n 12 "$o/tune-bc.log"
pack "$A"
run bench-broadcast-f16 100 "$mpi" 2 "$b/mscclpp" bench broadcast --dtype f16 --sizes 1M:1G --nccl \
  --csv "$o/bench-broadcast-f16.csv" --plot "$o/bench-broadcast-f16.png"
grep -E "^ *[0-9]" "$o/bench-broadcast-f16.log" | awk '{print $1, $4, $9, $14, $16}'
pack "$A"
rm -rf "$o"/cache
run tune-ar 150 "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --dtype f16 --sizes 4M:16M --nccl \
  --thread-blocks 32,64,96,128 --threads 256,512,768,1024 --budget-s 130 --out "$o/tuned-ar.json"
tail -n 8 "$o/tune-ar.log"
rm -rf "$o"/cache
pack "$A"
