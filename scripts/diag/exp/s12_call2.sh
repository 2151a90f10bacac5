#!/usr/bin/env bash
# Session check: the standalone library test (with progress on stderr) and the suite's matrix parts at 2 ranks.
# Usage: scripts/diag/exp/s12_call2.sh BIN OUT
set -u
b=$1 o=$2
mkdir -p "$o"
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
CUDA_VISIBLE_DEVICES=0 MSCCLPP_REQUIRE_NVRTC=1 timeout -k 5 ${SA_LIMIT:-150} "$b/tests/standalone_gpu" --include-ignored \
  > "$o/standalone.log" 2>&1
echo "standalone rc=$?"
grep -E "rank [01]: +[0-9.]+ s:" "$o/standalone.log" | tail -6
[ -n "${PARTS:-matrix-a matrix-b}" ] && "$b/xtask" gpu run --bin "$b" $(for p in ${PARTS:-matrix-a matrix-b}; do echo --part $p; done) \
  --ranks 2 --out "$o/suite2" --deadline-s ${DEADLINE:-400} > "$o/suite2.log" 2>&1
echo "suite rc=$?"; tail -5 "$o/suite2.log"
