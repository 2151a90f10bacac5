#!/usr/bin/env bash
# Session 32 on two GPUs (the final figures and parts are s31_x2.sh's WHAT=a-d). WHAT=p: interp_cost's hand-written
# `staged_allreduce` as it is (`block-*.log`) and with a signalling warp that overlaps its phases per sub-chunk
# (scripts/diag/exp/pipe_hand.py, S = 2, 4, 8 sub-chunks: `pipeS-*.log`), each beside the interpreter's
# `allreduce_staged`, interleaved, 1-64 MiB, twice. WHAT=t: interp_cost's `allreduce_twoshot` against its hand-written
# kernel at 1-4 MiB, five times (`twoshot-*.log`), for the spread of one run's overhead. WHAT=ce: copy-engine
# writes to the peer inside CUDA graphs, both GPUs at once (scripts/diag/exp/ce_graph.py, `ce.log`). WHAT may list
# several ("p t ce"), run in that order. WHAT=agtune / artune: `mscclpp tune` of the all-gather at 128 and
# 256 MiB, of the all-reduce in place at 4, 8 and 16 MiB (32-128 blocks), beside NCCL (`agtune.*`, `artune.*`). SHARED=1: two ranks on one
# GPU, a check of the script (timings then mean nothing). Everything packed into ARCHIVE.
# Usage: WHAT="p|t|ce|agtune|artune ..." [SHARED=1] LIMIT=S scripts/diag/exp/s32_x2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
root=$(cd "$here/../../.." && pwd)
if [ "${SHARED:-0}" = 1 ]; then shared_jobs; launch=("$shared"); else launch=("$mpi" 2); fi
export MSCCLPP_CACHE_DIR=$o/cache
for what in ${WHAT:-p}; do
case "$what" in
  p)
    cp "$root/examples/interp_cost.cu" "$o/block.cu"
    for s in 2 4 8; do python3 "$here/pipe_hand.py" "$root/examples/interp_cost.cu" "$o/pipe$s.cu" "$s" > /dev/null; done
    for round in 1 2; do
      for v in block pipe2 pipe4 pipe8; do
        INTERP_COST_HAND_SOURCE=$o/$v.cu run "$v-$round" 120 "${launch[@]}" -x INTERP_COST_HAND_SOURCE \
          "$b/interp_cost" 1M:64M:x2 allreduce_staged
        grep -hE "^PASS|FAIL|rror" "$o/$v-$round.log" | sed "s/^/$v-$round: /"
      done
    done
    ;;
  t)
    for round in 1 2 3 4 5; do
      run "twoshot-$round" 60 "${launch[@]}" "$b/interp_cost" 1M:4M allreduce_twoshot
      grep -hE "^PASS|FAIL|rror" "$o/twoshot-$round.log" | sed "s/^/twoshot-$round: /"
    done
    ;;
  agtune)
    run agtune 200 "$mpi" 2 "$b/mscclpp" tune allgather --sizes 128M,256M --thread-blocks 32,64,128 \
      --threads 256,512,1024 --nccl --out "$o/agtune.json"
    tail -8 "$o/agtune.log"
    ;;
  artune)
    run artune 240 "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --sizes 4M,8M,16M --thread-blocks 32,64,128 \
      --threads 512,1024 --nccl --out "$o/artune.json"
    tail -8 "$o/artune.log"
    ;;
  ce)
    timeout -k 5 120 python3 "$here/ce_graph.py" 20 30 > "$o/ce.log" 2>&1; echo "ce rc=$?"; cat "$o/ce.log"
    ;;
esac
done
rm -rf "$o"/cache
pack "$A"
