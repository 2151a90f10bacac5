#!/usr/bin/env bash
# At 4 ranks with the plan-specialised programs: `mscclpp bench` out of the box (shipped tables, 1 KiB-1 GiB in
# steps of 4, NCCL beside it) and the GPU suite's correctness matrices (matrix-a, matrix-b).
# Usage: scripts/diag/exp/s14_call3.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
BENCH_SIZES=${BENCH_SIZES:-1K:1G:x4} NP=4 NEW=$b bash scripts/diag/ranks.sh bench "$o/bench"
rm -rf "$o/bench/cache"
timeout -k 10 ${LIMIT:-330} "$b/xtask" gpu run --bin "$b" --ranks 4 --deadline-s $((${LIMIT:-330} - 10)) \
  --part matrix-a --part matrix-b --out "$o/suite" > "$o/suite.log" 2>&1
echo "suite rc=$?"
grep -E "passed:|FAIL|NOT RUN" "$o/suite/summary.md" | head -20
cd "$o" && tar czf bench.tgz bench && rm -rf bench
