#!/usr/bin/env bash
# Session 20, call 3 (4 GPUs): the GPU suite's `runtime` part (2 ranks, GPUs 0,1) in the background while the
# `python` part runs at 4 ranks, then `gib` at 4 ranks narrowed to allreduce_port and allreduce_port_pipelined
# until the call's deadline. Everything packed into ARCHIVE after each step.
# Usage: scripts/diag/exp/s20_call3.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$(unpack "$1")" "$2"
A=$3
mpi_jobs
CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 260 "$b/xtask" gpu run --bin "$b" --ranks 2 --deadline-s 240 \
  --part runtime --out "$o/suite-runtime" > "$o/suite-runtime.log" 2>&1 &
rt=$!
export CUDA_VISIBLE_DEVICES=0,1,2,3
suite python 200
wait $rt
grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-runtime/summary.md" | head -12
pack "$A"
left=$((${LIMIT:-560} - ($(date +%s) - t_start) - 15))
MSCCLPP_SUITE_PROGRAMS="allreduce_port allreduce_port_pipelined" suite gib $left
rm -rf "$o"/cache*
pack "$A"
