#!/usr/bin/env bash
# Session check: where the standalone test's window call stops (start-up marks, the main threads' system calls),
# then the torch examples of the guide and the peers' table.
# Usage: scripts/diag/exp/s12_call5.sh BIN OUT
set -u
b=$(cd "$1" && pwd) o=$2
mkdir -p "$o"
o=$(cd "$o" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
nvidia-smi -L > "$o/gpus.txt" 2>&1
if [ -n "${SA:-1}" ]; then
  CUDA_VISIBLE_DEVICES=0 MSCCLPP_REQUIRE_NVRTC=1 MSCCLPP_TRACE_STARTUP=1 timeout -k 5 ${SA_LIMIT:-50} \
    "$b/tests/standalone_gpu" --include-ignored > "$o/standalone.log" 2>&1 &
  sleep ${SA_PEEK:-38}
  for pid in $(pgrep -f "standalone_gpu two_ranks"); do
    echo "== pid $pid"
    for t in /proc/$pid/task/*; do echo "$(cat $t/comm) $(awk '{print $3}' $t/stat) syscall: $(cat $t/syscall 2>&1)"; done
  done > "$o/stacks.txt" 2>&1
  wait
  grep -E "rank [01]: +[0-9.]+ s:|ms.*(window|context|executor|frontend)" "$o/standalone.log" | tail -24
  cat "$o/stacks.txt"
fi
rm -rf /tmp/mscclpp-python
python3 -m pip install -q --no-deps --no-index --target /tmp/mscclpp-python "$b"/python/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/mscclpp-python MSCCLPP_CACHE_DIR=$o/cache
for s in customized_comm default_algorithms plan_based native_kernel; do
  arg=; [ $s = native_kernel ] && arg=$b/custom_kernel.cu
  timeout 90 torchrun --nproc-per-node 2 --master-port $((29600 + RANDOM % 300)) "$b/python/examples/$s.py" $arg \
    > "$o/$s.log" 2>&1
  echo "$s rc=$?"; grep -c ": ok" "$o/$s.log"
done
timeout 150 torchrun --nproc-per-node 2 --master-port 29977 "$b/python/examples/peers.py" --sizes ${PEER_SIZES:-1K:64M} \
  --runs 15 --csv "$o/peers.csv" --json "$o/peers.json" > "$o/peers.log" 2>&1
echo "peers rc=$?"; tail -22 "$o/peers.log"
"$b/mscclpp" plot "$o/peers.csv" -o "$o/peers.png" > "$o/plot.log" 2>&1; echo "plot rc=$?"
rm -rf "$o/cache"
