#!/usr/bin/env bash
# Session 19, call 3 (4 GPUs): the binaries unpacked from PACK (a tar.xz of `xtask gpu collect`'s folder, which is
# too large to carry unpacked); `mscclpp tune allreduce --in-place` at 256 MiB-1 GiB on 4 ranks and at 512 MiB-1 GiB on
# 2 ranks (128 thread blocks, 512 and 1024 threads, beside NCCL), then the 2-rank GPU-suite parts `runtime` (GPUs 0,1)
# and `soak-b` (GPUs 2,3) side by side. Everything packed into ARCHIVE after each step.
# Usage: scripts/diag/exp/s19_call3.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1,2,3
MSCCLPP_CACHE_DIR=$o/cache4 run tune-4r 130 $mpi 4 "$b/mscclpp" tune allreduce --in-place --sizes 256M:1G \
  --thread-blocks 128 --threads 512,1024 --nccl --budget-s 110 --out "$o/tuned-4r.json"
tail -8 "$o/tune-4r.log"
export CUDA_VISIBLE_DEVICES=0,1
MSCCLPP_CACHE_DIR=$o/cache2 run tune-2r 80 $mpi 2 "$b/mscclpp" tune allreduce --in-place --sizes 512M:1G \
  --thread-blocks 128 --threads 512,1024 --nccl --budget-s 60 --out "$o/tuned-2r.json"
tail -6 "$o/tune-2r.log"
pack "$A"
s=${DEADLINE_S:-280}
CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 $((s + 20)) "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s $s \
  --part runtime --out "$o/suite-runtime" > "$o/suite-runtime.log" 2>&1 &
CUDA_VISIBLE_DEVICES=2,3 timeout -k 5 $((s + 20)) "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s $s \
  --part soak-b --out "$o/suite-soak-b" > "$o/suite-soak-b.log" 2>&1 &
wait
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o"/suite-*/summary.md | head -30
rm -rf "$o"/cache*
pack "$A"
