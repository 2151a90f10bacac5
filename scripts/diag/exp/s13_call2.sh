#!/usr/bin/env bash
# Session check: the standalone symmetric-window test with linear references, then the launchers part (the netns
# step now runs the two-node all-reduce, its shape taken from the namespaces' host ids).
# Usage: scripts/diag/exp/s13_call2.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
MSCCLPP_REQUIRE_NVRTC=1 timeout -k 5 ${SA_LIMIT:-150} "$b/tests/standalone_gpu" \
  a_symmetric_window_on_two_gpus_without_a_real_nccl --exact --include-ignored --nocapture > "$o/standalone-window.log" 2>&1
echo "window test rc=$?"; grep -E "took|checks passed|test result|panicked" "$o/standalone-window.log" | tail -30
timeout 480 "$b/xtask" gpu run --part launchers --bin "$b" --out "$o/launchers" --logs "$o/launchers-logs" > "$o/launchers.log" 2>&1
echo "launchers rc=$?"; tail -20 "$o/launchers.log"
grep -h "launchers: netns\|RESULT\|PASS\|FAIL\|SKIP" "$o"/launchers-logs/* 2>/dev/null | tail -20
