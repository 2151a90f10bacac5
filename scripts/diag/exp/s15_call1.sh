#!/usr/bin/env bash
# Session 15, first call (4 GPUs; 2-rank runs on GPUs 0 and 1): the interpreter against the hand-written kernels
# (the four LL programs 1 KiB-1 MiB, the one-shot on the generic interpreter, the Simple two-shot 1-64 MiB); the
# small sizes re-tuned at 2 and 4 ranks with the plan-specialised programs and benched with those tables beside
# NCCL; the 4-rank all-reduce at 256 MiB-1 GiB tuned twice over 64/128 thread blocks x 256/512/1024 threads.
# Usage: scripts/diag/exp/s15_call1.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export MSCCLPP_FIXED_KERNELS= MSCCLPP_CACHE_DIR=$o/cache2
export CUDA_VISIBLE_DEVICES=0,1
for p in allreduce_oneshot_ll allreduce_twoshot_ll allgather_allpairs_ll reducescatter_ll; do
  run "interp-$p" 60 $mpi 2 "$b/interp_cost" 1K:1M:x4 $p
done
MSCCLPP_FIXED_KERNELS=off run interp-generic-oneshot 60 $mpi 2 "$b/interp_cost" 1K:1M:x4 allreduce_oneshot_ll
run interp-twoshot-simple 90 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_twoshot
grep -h "PASS\|FAIL\|SKIP" "$o"/interp-*.log | head -60
run tune-2r-ar 100 $mpi 2 "$b/mscclpp" tune allreduce --in-place --sizes 1K:1M --nccl --budget-s 80 --out "$o/tuned-2r-ar.json"
run tune-2r-agrs 130 $mpi 2 "$b/mscclpp" tune allgather reducescatter --sizes 1K:1M --nccl --budget-s 110 --out "$o/tuned-2r-agrs.json"
run bench-2r-ar 60 $mpi 2 "$b/mscclpp" bench allreduce --in-place --sizes 1K:1M --nccl --csv "$o/bench-2r-ar.csv"
for c in allgather reducescatter; do
  run bench-2r-$c 60 $mpi 2 "$b/mscclpp" bench $c --sizes 1K:1M --nccl --csv "$o/bench-2r-$c.csv"
done
grep -h "^|" "$o"/bench-2r-*.log | head -40
export CUDA_VISIBLE_DEVICES=0,1,2,3
for r in 1 2; do
  MSCCLPP_CACHE_DIR=$o/cache4-big-$r run tune-4r-big-$r 80 $mpi 4 "$b/mscclpp" tune allreduce --in-place --sizes 256M,512M,1G \
    --thread-blocks 64,128 --threads 256,512,1024 --nccl --budget-s 70 --out "$o/tuned-4r-big-$r.json"
done
export MSCCLPP_CACHE_DIR=$o/cache4
run tune-4r-small-ar 70 $mpi 4 "$b/mscclpp" tune allreduce --in-place --sizes 1K:1M --nccl --budget-s 60 \
  --out "$o/tuned-4r-small-ar.json"
run tune-4r-small-agrs 100 $mpi 4 "$b/mscclpp" tune allgather reducescatter --sizes 1K:1M --nccl --budget-s 90 \
  --out "$o/tuned-4r-small-agrs.json"
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz *.log mpi && rm -f *.log
