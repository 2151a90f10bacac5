#!/usr/bin/env bash
# Session 17, call 2: why the rotated all-reduce slows from 256 MiB to 1 GiB while NCCL speeds up. Plans written by
# `mscclpp plan` into BIN/plans (w<ranks>-r<windows>-i<instances>.json: the slices moved in 1, 2 or 4 windows, 8-32
# instances), all on the generic interpreter (MSCCLPP_FIXED_KERNELS=off), 256 MiB and 1 GiB in place; SM clocks and
# power sampled during the 4-rank 1 GiB runs; NCCL and the default beside them.
# Usage: scripts/diag/exp/s17_call2.sh BIN OUT
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export MSCCLPP_FIXED_KERNELS=off
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 > "$o/smi.csv" 2>&1 &
smi=$!
for f in "$b"/plans/w4-*.json; do
  nm=$(basename "$f" .json)
  echo "## $nm $(date +%s.%N)" >> "$o/smi-marks.txt"
  run test-$nm 90 $mpi 4 "$b/mscclpp" test "$f" --size 256M,1G --in-place --graph --runs 20 --iters 10
  grep -h "us_per_call" "$o/test-$nm.log" | sed "s/^/$nm: /" | cut -c1-220
done
kill $smi
export CUDA_VISIBLE_DEVICES=0,1
for f in "$b"/plans/w2-*.json; do
  nm=$(basename "$f" .json)
  run test-$nm 90 $mpi 2 "$b/mscclpp" test "$f" --size 256M,1G --in-place --graph --runs 20 --iters 10
  grep -h "us_per_call" "$o/test-$nm.log" | sed "s/^/$nm: /" | cut -c1-220
done
export CUDA_VISIBLE_DEVICES=0,1,2,3 MSCCLPP_FIXED_KERNELS=
MSCCLPP_CACHE_DIR=$o/cache run bench-4r 120 $mpi 4 "$b/mscclpp" bench allreduce --in-place --sizes 256M,1G --nccl \
  --csv "$o/bench-4r.csv"
tail -n 3 "$o/bench-4r.log"
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz $(ls -d *.log *.csv *.txt mpi 2>/dev/null) && rm -rf *.log mpi smi.csv
