#!/usr/bin/env bash
# Interpreter variants (register limit, packet-only) and the rotated programs at 2 and 4 ranks.
# Usage: scripts/diag/exp/measure3.sh BIN_DIR OUT_DIR
set -u
bin=$1 out=$2
mkdir -p "$out"
NPS="2 4" PROBE= VARIANTS="base pkonly regs512 pkregs512" bash scripts/diag/exp/measure.sh "$bin" "$out/interp"
jobs="allreduce allreduce_rotated 16M,64M,128M,256M,512M,1G --in-place;allgather allgather_rotated 4M,16M,64M,256M,1G;\
allgather allgather_allpairs 64M,256M,1G;reducescatter reducescatter_rotated 4M,16M,64M,256M,1G;\
reducescatter reducescatter_fused 64M,256M,1G"
PROGRAM_JOBS=$jobs NP=4 NEW=$bin timeout 330 bash scripts/diag/ranks.sh programs "$out/np4"
jobs2="allreduce allreduce_rotated 16M,64M,256M,1G --in-place;allgather allgather_rotated 16M,64M,256M,1G;\
reducescatter reducescatter_rotated 16M,64M,256M,1G"
PROGRAM_JOBS=$jobs2 CUDA_VISIBLE_DEVICES=0,1 NP=2 NEW=$bin timeout 150 bash scripts/diag/ranks.sh programs "$out/np2"
rm -rf "$out"/*/cache
