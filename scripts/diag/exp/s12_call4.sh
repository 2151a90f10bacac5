#!/usr/bin/env bash
# Session check: torch collectives and timing (with and without LD_PRELOAD) on this machine, and where the
# standalone test's ranks stand 40 s in (threads' kernel wait channels, and gdb backtraces when gdb exists).
# Usage: scripts/diag/exp/s12_call4.sh BIN OUT
set -u
b=$(cd "$1" && pwd) o=$2
mkdir -p "$o"
o=$(cd "$o" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
nvidia-smi -L > "$o/gpus.txt" 2>&1
if [ -n "${SA:-1}" ]; then
  CUDA_VISIBLE_DEVICES=0 MSCCLPP_REQUIRE_NVRTC=1 timeout -k 5 ${SA_LIMIT:-60} "$b/tests/standalone_gpu" --include-ignored \
    > "$o/standalone.log" 2>&1 &
  sleep ${SA_PEEK:-40}
  for pid in $(pgrep -f "standalone_gpu two_ranks"); do
    echo "== pid $pid: $(tr '\0' ' ' < /proc/$pid/cmdline | head -c 200)"
    for t in /proc/$pid/task/*; do echo "$(cat $t/comm) $(cat $t/wchan) $(awk '{print $3}' $t/stat)"; done
    command -v gdb > /dev/null && timeout 30 gdb -p "$pid" -batch -ex "thread apply all bt 25" 2>&1 | grep -E "^#|^Thread" | head -150
  done > "$o/stacks.txt" 2>&1
  wait
  echo "standalone done"; grep -E "rank [01]: +[0-9.]+ s:" "$o/standalone.log" | tail -3
fi
BIN=$b timeout 300 bash scripts/diag/torch.sh ${STEPS:-collectives,timing} "$o/torch"
tail -3 "$o/torch/collectives-compare.log" 2>/dev/null
tail -48 "$o/torch/timing-compare.log" 2>/dev/null
rm -rf "$o"/torch/cache
