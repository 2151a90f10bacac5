#!/usr/bin/env bash
# Session 15, second call (2-rank runs on GPUs 0 and 1 of a 2- or 4-GPU host): the interpreter against the
# hand-written kernels (the four LL programs 1 KiB-1 MiB, the one-shot on the generic interpreter, the Simple
# two-shot 1-64 MiB), then the small sizes re-tuned at 2 ranks with 1 and 2 thread blocks among the candidates and
# benched with that table beside NCCL; then 4 ranks out of the box (the shipped tables), 1 KiB-1 GiB in steps of 4.
# Usage: scripts/diag/exp/s15_call2.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export MSCCLPP_FIXED_KERNELS= MSCCLPP_CACHE_DIR=$o/cache2 CUDA_VISIBLE_DEVICES=0,1
for p in allreduce_oneshot_ll allreduce_twoshot_ll allgather_allpairs_ll reducescatter_ll; do
  run "interp-$p" 60 $mpi 2 "$b/interp_cost" 1K:1M:x4 $p
done
MSCCLPP_FIXED_KERNELS=off run interp-generic-oneshot 60 $mpi 2 "$b/interp_cost" 1K:1M:x4 allreduce_oneshot_ll
run interp-twoshot-simple 90 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_twoshot
grep -h "PASS\|FAIL\|SKIP\|error" "$o"/interp-*.log | head -60
run tune-2r-ar 100 $mpi 2 "$b/mscclpp" tune allreduce --in-place --sizes 1K:1M --nccl --budget-s 90 --out "$o/tuned-2r-ar.json"
run tune-2r-agrs 130 $mpi 2 "$b/mscclpp" tune allgather reducescatter --sizes 1K:1M --nccl --budget-s 120 --out "$o/tuned-2r-agrs.json"
run bench-2r-ar 60 $mpi 2 "$b/mscclpp" bench allreduce --in-place --sizes 1K:1M --nccl --csv "$o/bench-2r-ar.csv"
for c in allgather reducescatter; do
  run bench-2r-$c 60 $mpi 2 "$b/mscclpp" bench $c --sizes 1K:1M --nccl --csv "$o/bench-2r-$c.csv"
done
grep -h "  1024 \|USE" "$o"/bench-2r-*.log "$o"/tune-2r-*.log | head -20
export CUDA_VISIBLE_DEVICES=0,1,2,3 MSCCLPP_CACHE_DIR=$o/cache4
run bench-4r-ar 150 $mpi 4 "$b/mscclpp" bench allreduce --in-place --sizes 1K:1G:x4 --nccl --csv "$o/bench-4r-ar.csv"
for c in allgather reducescatter; do
  run bench-4r-$c 120 $mpi 4 "$b/mscclpp" bench $c --sizes 1K:1G:x4 --nccl --csv "$o/bench-4r-$c.csv"
done
grep -h "speedup\| 1073741824 " "$o"/bench-4r-*.log
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz *.log *.csv *.json *.txt mpi && rm -f *.log *.csv *.json
