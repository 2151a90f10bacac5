#!/usr/bin/env bash
# Session 15, 2-rank runs on GPUs 0 and 1 (H200 or H100): with every LL program's specialised program embedded for
# both block-size classes, the small sizes re-tuned (1 KiB-1 MiB) and benched with that table beside NCCL (with
# BIG=1 to 1 GiB); the interpreter against the hand-written kernels (the LL programs 1 KiB-1 MiB at the tuned grids
# and at 1x256, the Simple all-reduces at 512 and 256 threads per block).
# Usage: scripts/diag/exp/s15_call4.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export MSCCLPP_FIXED_KERNELS= MSCCLPP_CACHE_DIR=$o/cache2 CUDA_VISIBLE_DEVICES=0,1
run tune-2r-ar 100 $mpi 2 "$b/mscclpp" tune allreduce --in-place --sizes 1K:1M --nccl --budget-s 90 --out "$o/tuned-2r-ar.json"
run tune-2r-agrs 130 $mpi 2 "$b/mscclpp" tune allgather reducescatter --sizes 1K:1M --nccl --budget-s 120 --out "$o/tuned-2r-agrs.json"
top=1M; [ "${BIG:-0}" = 1 ] && top=1G
for c in allreduce allgather reducescatter; do
  ip=; [ $c = allreduce ] && ip=--in-place
  run bench-2r-$c 80 $mpi 2 "$b/mscclpp" bench $c $ip --sizes 1K:$top:x4 --nccl --csv "$o/bench-2r-$c.csv"
done
grep -h "    1024 " "$o"/bench-2r-*.log
for p in allreduce_oneshot_ll allreduce_twoshot_ll allgather_allpairs_ll reducescatter_ll; do
  run "interp-$p" 60 $mpi 2 "$b/interp_cost" 1K:1M:x4 $p
  run "interp-$p-1x256" 30 $mpi 2 "$b/interp_cost" 1K,4K $p 1x256
done
for c in 8x512 32x256; do run "interp-allreduce_rsag-$c" 60 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_rsag $c; done
for c in 32x512 128x256; do run "interp-allreduce_twoshot-$c" 60 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_twoshot $c; done
grep -h "PASS\|FAIL\|rror" "$o"/interp-*.log | head -70
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz *.log *.csv *.json *.txt mpi && rm -rf *.log *.csv *.json
