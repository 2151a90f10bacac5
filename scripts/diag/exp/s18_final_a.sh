#!/usr/bin/env bash
# Session 18, final call A (2 GPUs): torch start-up with and without the library (3 alternations, the library's
# set-up phases traced), the changed programs checked (every element type, both placements, eager and graph), and
# the GPU suite's `python` part (the Python examples and the peers' table).
# Usage: scripts/diag/exp/s18_final_a.sh BIN OUT
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1
init=$here/../torch_init.py
for i in 1 2 3; do
  run init-nccl-$i 90 torchrun --nproc-per-node 2 "$init" --label "nccl $i"
  LD_PRELOAD=$b/nccl/libmscclpp_nccl.so MSCCLPP_TRACE_STARTUP=1 run init-ours-$i 90 \
    torchrun --nproc-per-node 2 "$init" --label "ours $i"
done
grep -h "^init" "$o"/init-*.log
grep -h "startup pid" "$o/init-ours-3.log" | head -40
for p in allgather_allpairs:64K,3M,64M,256M reducescatter_pipelined:1M,3M,64M,256M; do
  run test-${p%%:*} 150 $mpi 2 "$b/mscclpp" test ${p%%:*} --size ${p#*:} --both-placements --dtype f16,bf16,f32 \
    --eager-and-graph --no-timing --iters 4
  echo "${p%%:*}: $(grep -c PASS "$o/test-${p%%:*}.log") PASS, $(grep -c FAIL "$o/test-${p%%:*}.log") FAIL"
done
run suite-2r 320 "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s 300 --part python --out "$o/suite-2r"
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-2r/summary.md" | head -20
cp "$o"/suite-2r/peers.* "$o/" 2>/dev/null
cd "$o" && tar czf logs.tgz $(ls -d *.log *.txt mpi suite-* 2>/dev/null) && rm -rf *.log suite-* mpi
