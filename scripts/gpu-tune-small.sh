#!/usr/bin/env bash
# Small-message allreduce variants on a 2-GPU host, for choosing the registry's defaults: the one-shot LL
# program with 1, 2, 4 and 8 instances and 1024, 512 or 256 threads per block (plans in BIN_DIR/tune, made by
# `scripts/gpu-suite.sh --collect`), LL8 against LL16, and NCCL in the same call. Every figure is the median of
# 30 timed replays of a CUDA graph of 10 launches; every launch before the timing is checked.
#
#   scripts/gpu-tune-small.sh [BIN_DIR] [LOG_DIR]
set -uo pipefail
BIN="${1:-.gpu-bin}"
LOGDIR="${2:-${OUT:-results}}"
mkdir -p "$LOGDIR"
LOG="$LOGDIR/tune-small.log"
: >"$LOG"
source "$(dirname "$0")/gpu-env.sh"
SIZES="${TUNE_SIZES:-1K,4K,16K,64K}"
COMMON=(--size "$SIZES" --dtype f16 --in-place --graph --iters 10 --runs 30)
echo "# small allreduce variants $(date -u +%FT%TZ) commit=$(cat "$BIN/COMMIT" 2>/dev/null || echo unknown)" | tee -a "$LOG"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1 | tee -a "$LOG"
run() { echo "=== $*" >>"$LOG"; timeout 180 "$@" 2>&1 | grep -E "^(PASS|FAIL|SKIP|NCCL)|rror" | sed "s/^/$VARIANT /" | tee -a "$LOG"; }
VARIANT="registry-default" run $MPI "$BIN/mscclpp" test allreduce_oneshot_ll "${COMMON[@]}"
VARIANT="registry-default-ll8" run $MPI "$BIN/mscclpp" test allreduce_oneshot_ll "${COMMON[@]}" --packet ll8
for f in "$BIN"/tune/*.json; do
  VARIANT="$(basename "$f" .json)" run $MPI "$BIN/mscclpp" test "$f" "${COMMON[@]}"
done
VARIANT="nccl" run torchrun --nproc-per-node 2 scripts/gpu-suite-executor-nccl.py 1024 4096 16384 65536
