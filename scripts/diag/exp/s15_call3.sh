#!/usr/bin/env bash
# Session 15, third call (4 GPUs; 2-rank runs on GPUs 0 and 1): the GPU suite's nccl part at 4 ranks (torch through
# LD_PRELOAD under torchrun); the hand-written Simple kernel against allreduce_rsag and allreduce_twoshot; the small
# LL programs at other grids; 2 ranks out of the box 1 KiB-1 GiB in steps of 4; the 4-rank all-reduce at 256 MiB-1
# GiB three more times.
# Usage: scripts/diag/exp/s15_call3.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
run suite-nccl-4r 230 "$b/xtask" gpu run --bin "$b" --ranks 4 --deadline-s 220 --part nccl --out "$o/suite-nccl-4r"
grep -E "passed:|FAIL|NOT RUN|CUT" "$o/suite-nccl-4r/summary.md" | head
export MSCCLPP_FIXED_KERNELS= MSCCLPP_CACHE_DIR=$o/cache2 CUDA_VISIBLE_DEVICES=0,1
for p in allreduce_rsag allreduce_twoshot; do
  run "interp-$p" 60 $mpi 2 "$b/interp_cost" 1M:64M:x4 $p
done
for p in allgather_allpairs_ll reducescatter_ll allreduce_oneshot_ll; do
  for c in 1x256 1x512 1x1024 2x256; do
    run "interp-$p-$c" 30 $mpi 2 "$b/interp_cost" 1K,4K $p $c
  done
done
grep -h "PASS\|FAIL\|SKIP\|rror" "$o"/interp-*.log | head -60
for c in allreduce allgather reducescatter; do
  ip=; [ $c = allreduce ] && ip=--in-place
  run bench-2r-$c 80 $mpi 2 "$b/mscclpp" bench $c $ip --sizes 1K:1G:x4 --nccl --csv "$o/bench-2r-$c.csv"
done
export CUDA_VISIBLE_DEVICES=0,1,2,3 MSCCLPP_CACHE_DIR=$o/cache4
for r in 1 2 3; do
  run bench-4r-ar-big-$r 60 $mpi 4 "$b/mscclpp" bench allreduce --in-place --sizes 256M:1G --nccl --csv "$o/bench-4r-ar-big-$r.csv"
done
grep -h " 1073741824 " "$o"/bench-*.log
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz *.log *.csv *.txt mpi suite-nccl-4r && rm -rf *.log *.csv suite-nccl-4r
