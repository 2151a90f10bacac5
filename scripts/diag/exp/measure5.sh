#!/usr/bin/env bash
# The final figures at 4 ranks: `mscclpp bench` with the shipped tables (sizes 1 KiB-1 GiB in steps of 4), and the
# interpreter's cost (and its phase stamps) at 2 and 4 ranks.
# Usage: scripts/diag/exp/measure5.sh BIN_DIR OUT_DIR
set -u
bin=$1 out=$2
mkdir -p "$out"
NPS="2 4" PROBE= VARIANTS= bash scripts/diag/exp/measure.sh "$bin" "$out/interp"
BENCH_SIZES=${BENCH_SIZES:-1K:1G:x4} NP=4 NEW=$bin bash scripts/diag/ranks.sh bench "$out/bench"
rm -rf "$out"/*/cache "$out"/interp/var
