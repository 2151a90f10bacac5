#!/usr/bin/env bash
# Two 2-rank GPU-suite parts side by side: PART_A on GPUs 0,1 and PART_B on GPUs 2,3, each by DEADLINE_S seconds.
# Usage: PART_A=reliability PART_B=soak-a DEADLINE_S=300 scripts/diag/exp/s17_pairs.sh BIN OUT
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
s=${DEADLINE_S:-300}
CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 $((s + 20)) "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s $s \
  --part "$PART_A" --out "$o/suite-$PART_A" > "$o/suite-$PART_A.log" 2>&1 &
CUDA_VISIBLE_DEVICES=2,3 timeout -k 5 $((s + 20)) "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s $s \
  --part "$PART_B" --out "$o/suite-$PART_B" > "$o/suite-$PART_B.log" 2>&1 &
wait
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o"/suite-*/summary.md | head -20
cd "$o" && tar czf logs.tgz $(ls -d *.log suite-* mpi 2>/dev/null) && rm -rf *.log suite-* mpi
