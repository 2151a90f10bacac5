#!/usr/bin/env bash
# Interpreter variants at 2 and 4 ranks, then `mscclpp tune` at 4 ranks (all three collectives, 1 KiB-1 GiB).
# Usage: scripts/diag/exp/measure4.sh BIN_DIR OUT_DIR
set -u
bin=$1 out=$2
mkdir -p "$out"
NPS="2 4" PROBE= VARIANTS="base pkonly regs512 pkregs512" bash scripts/diag/exp/measure.sh "$bin" "$out/interp"
TUNE_BUDGET_AR=${TUNE_BUDGET_AR:-100} TUNE_BUDGET_AG=${TUNE_BUDGET_AG:-50} TUNE_BUDGET_RS=${TUNE_BUDGET_RS:-50} \
  NP=4 NEW=$bin bash scripts/diag/ranks.sh tune "$out/tuning"
rm -rf "$out"/*/cache
