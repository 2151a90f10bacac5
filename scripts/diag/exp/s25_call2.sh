#!/usr/bin/env bash
# Session 25 (2 GPUs): the correctness matrices of `broadcast_ll` and of the tuned-table-only programs the matrices
# now run (`allreduce_rotated_res` in matrix-a; `reducescatter_pipelined` in matrix-b), `mscclpp tune broadcast`
# 1 KiB-4 MiB and `mscclpp tune reducescatter` at 1-4 KiB (fewer threads) and 128-256 MiB (their rows go into the
# shipped table), then `mscclpp bench` of broadcast and reduce-scatter (fp16, 1 KiB-1 GiB, beside NCCL) with the tuned rows. Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s25_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
MSCCLPP_SUITE_PROGRAMS="allreduce_rotated_res" suite_run matrix-a 150 &
wait
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-matrix-a/summary.md" | head -6
MSCCLPP_SUITE_PROGRAMS="broadcast_ll reducescatter_pipelined" suite_run matrix-b 200
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-matrix-b/summary.md" | head -6
pack "$A"
export MSCCLPP_CACHE_DIR=$o/cache
run tune-bc 60 "$mpi" 2 "$b/mscclpp" tune broadcast --dtype f16 --sizes 1K:4M --nccl --budget-s 45 --out "$o/tuned-bc.json"
tail -n 16 "$o/tune-bc.log"
run tune-rs-small 40 "$mpi" 2 "$b/mscclpp" tune reducescatter --dtype f16 --sizes 1K:4K --nccl \
  --thread-blocks 1,2,4,8 --threads 128,256,512 --budget-s 30 --out "$o/tuned-rs-small.json"
tail -n 6 "$o/tune-rs-small.log"
run tune-rs-large 75 "$mpi" 2 "$b/mscclpp" tune reducescatter --dtype f16 --sizes 128M:256M --nccl \
  --thread-blocks 32,64,128 --threads 512,1024 --budget-s 60 --out "$o/tuned-rs-large.json"
tail -n 5 "$o/tune-rs-large.log"
pack "$A"
bench_sizes bench-broadcast-f16 90 broadcast --dtype f16
bench_sizes bench-reducescatter-f16 "$(remaining 10)" reducescatter --dtype f16
rm -rf "$o"/cache
pack "$A"
