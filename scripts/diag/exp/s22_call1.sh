#!/usr/bin/env bash
# Session 22, call 1 (2 GPUs), by the GPU model the host has.
# 2 x H100: `mscclpp tune broadcast` 1 KiB-1 GiB beside NCCL (the shipped H100 table has no broadcast rows), then
# with that table `mscclpp bench` of broadcast, all-reduce (in place), all-gather and reduce-scatter, fp16,
# 1 KiB-1 GiB, beside NCCL; `interp_cost` of the LL all-reduces (1 KiB-1 MiB) and the Simple two-shot (1-64 MiB).
# Otherwise (2 x H200): eager torch calls of 4 B-64 KiB (the staged tiny all-reduce's host time), NCCL then the
# library with MSCCLPP_NCCL_LOG=info; `scripts/diag/torch_init.py` three times each way (MSCCLPP_TRACE_STARTUP=1
# with the library); the GPU suite's `nccl` part at 2 ranks.
# Everything packed into ARCHIVE after each step.
# Usage: scripts/diag/exp/s22_call1.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
if grep -q H100 "$o/gpus.txt"; then
  MSCCLPP_CACHE_DIR=$o/cache run tune-broadcast 150 "$mpi" 2 "$b/mscclpp" tune broadcast --sizes 1K:1G --nccl \
    --thread-blocks 4,16,64 --threads 256,1024 --budget-s 130 --out "$o/tuned-broadcast.json"
  grep -E "broadcast|timed" "$o/tune-broadcast.log" | tail -24
  pack "$A"
  bench_sizes bench-broadcast-f16 60 broadcast
  bench_sizes bench-allreduce-f16 60 allreduce --in-place
  for c in allgather reducescatter; do bench_sizes bench-$c-f16 60 $c; done
  interp_allreduce
  rm -rf "$o"/cache
  pack "$A"
else
  ep=$here/../eager_paths.py
  cases=all_reduce:4,all_reduce:64,all_reduce:1K,all_reduce:64K
  run eager-nccl 60 torchrun --nproc-per-node 2 "$ep" --cases $cases
  LD_PRELOAD=$b/nccl/libmscclpp_nccl.so MSCCLPP_NCCL_LOG=info run eager-ours 60 torchrun --nproc-per-node 2 "$ep" --cases $cases
  grep -E "^#|^all_" "$o/eager-nccl.log" | head -6
  grep -E "^#|^all_|host time so far" "$o/eager-ours.log" | tail -9
  pack "$A"
  torch_init_runs 3
  suite nccl "$(remaining 15)"
fi
