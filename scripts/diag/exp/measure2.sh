#!/usr/bin/env bash
# The interpreter's cost after the one-load prologue, the small sizes against NCCL, and allreduce_rotated at 4 ranks.
# Usage: scripts/diag/exp/measure2.sh BIN_DIR OUT_DIR
set -u
bin=$1 out=$2
mkdir -p "$out"
NPS="2 4" PROBE= VARIANTS= bash scripts/diag/exp/measure.sh "$bin" "$out/interp"
PROGRAM_JOBS="allreduce allreduce_rotated 4M,16M,64M,256M,1G --in-place;allreduce allreduce_rsag 16M,64M --in-place;allreduce allreduce_twoshot 256M,1G --in-place" \
  NP=4 NEW=$bin timeout 300 bash scripts/diag/ranks.sh programs "$out/np4"
BENCH_SIZES=1K:256K NP=4 NEW=$bin timeout 200 bash scripts/diag/ranks.sh bench "$out/np4"
BENCH_SIZES=1K:256K CUDA_VISIBLE_DEVICES=0,1 NP=2 NEW=$bin timeout 200 bash scripts/diag/ranks.sh bench "$out/np2"
rm -rf "$out"/*/cache
