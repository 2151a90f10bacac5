#!/usr/bin/env bash
# Session check at 4 ranks: the GPU suite's parts that take a rank count and touch the drop-in and the Python module
# (python, nccl, tune), the allreduce figures and bad input (final) and the 4-rank corpus plans.
# Usage: scripts/diag/exp/s14_call1.sh BIN OUT   (PARTS, RANKS, LIMIT override)
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
nvidia-smi topo -m > "$o/topo.txt" 2>&1
parts=${PARTS:-python nccl tune final corpus}
timeout -k 10 $((${LIMIT:-540} + 20)) "$b/xtask" gpu run --bin "$b" --ranks ${RANKS:-4} --deadline-s ${LIMIT:-540} \
  $(for p in $parts; do echo --part $p; done) --out "$o/suite" > "$o/suite.log" 2>&1
echo "suite rc=$?"
tail -5 "$o/suite.log"
grep -E "FAIL|not passed" "$o"/suite/*.md 2>/dev/null | head -20
