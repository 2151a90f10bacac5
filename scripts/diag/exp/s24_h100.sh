#!/usr/bin/env bash
# Session 24, on 2 x H100 only (exits 3 elsewhere): interp_cost of both LL128 all-reduces (256 KiB-4 MiB),
# `mscclpp bench allreduce` 256 KiB-4 MiB with the shipped table beside NCCL, and `mscclpp tune allreduce` 256 KiB-4 MiB
# (its rows go into the shipped H100 table). Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s24_h100.sh PACK OUT ARCHIVE
set -u
nvidia-smi -L | grep -q H100 || { nvidia-smi -L; echo "not an H100 host"; exit 3; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
for p in allreduce_twoshot_ll128 allreduce_oneshot_ll128; do run "interp-$p" 40 "$mpi" 2 "$b/interp_cost" 256K:4M:x2 "$p"; done
grep -h "^PASS\|FAIL\|rror" "$o"/interp-*.log | sed 's/checks=6 //'
export MSCCLPP_CACHE_DIR=$o/cache
run bench-ar 60 "$mpi" 2 "$b/mscclpp" bench allreduce --in-place --dtype f16 --sizes 256K:4M --nccl \
  --csv "$o/bench-ar.csv"
grep -E "^ *[0-9]" "$o/bench-ar.log" | awk '{print $1, $4, $9, $14, $16}'
run tune-ar 150 "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --dtype f16 --sizes 256K:4M --nccl \
  --thread-blocks 32,64,128 --threads 256,512 --budget-s 120 --out "$o/tuned-ar.json"
tail -n 8 "$o/tune-ar.log"
rm -rf "$o"/cache
pack "$A"
