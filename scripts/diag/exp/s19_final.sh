#!/usr/bin/env bash
# Session 19, final call (4 GPUs): the binaries unpacked from PACK (a tar.xz of `xtask gpu collect`'s folder); the
# out-of-the-box benches of all-reduce (in place), all-gather and reduce-scatter, 1 KiB-1 GiB, fp16, graphs, beside
# NCCL, at 4 ranks; then the GPU suite's `nccl` part at 4 ranks; then `mscclpp tune broadcast` at 4 ranks beside NCCL
# (the shipped table has no broadcast rows). Everything packed into ARCHIVE after each step.
# Usage: scripts/diag/exp/s19_final.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1,2,3
for c in allreduce allgather reducescatter; do
  ip=; [ $c = allreduce ] && ip=--in-place
  MSCCLPP_CACHE_DIR=$o/cache run bench-$c 120 $mpi 4 "$b/mscclpp" bench $c $ip --sizes 1K:1G --nccl \
    --csv "$o/bench-$c.csv" --plot "$o/bench-$c.png"
  grep -E "^ *[0-9]" "$o/bench-$c.log" | awk '{print $1, $4, $9, $14, $16}'
  pack "$A"
done
rm -rf "$o"/cache*
run suite-4r 320 "$b/xtask" gpu run --bin "$b" --ranks 4 --deadline-s 300 --part nccl --out "$o/suite-4r"
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-4r/summary.md" | head -20
pack "$A"
MSCCLPP_CACHE_DIR=$o/cache run tune-broadcast 150 $mpi 4 "$b/mscclpp" tune broadcast --sizes 1K:1G --nccl \
  --thread-blocks 4,16,64 --threads 256,1024 --budget-s 130 --out "$o/tuned-broadcast-4r.json"
grep -E "broadcast|timed" "$o/tune-broadcast.log" | tail -24
rm -rf "$o"/cache*
pack "$A"
