#!/usr/bin/env bash
# Session check: the standalone library test, the torch timing table (with the symmetric-window rows) with and
# without LD_PRELOAD, and the peers' table.
# Usage: scripts/diag/exp/s12_call3.sh BIN OUT
set -u
b=$(cd "$1" && pwd) o=$2
mkdir -p "$o"
o=$(cd "$o" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
nvidia-smi -L > "$o/gpus.txt" 2>&1
if [ -n "${SA:-1}" ]; then
  CUDA_VISIBLE_DEVICES=0 MSCCLPP_REQUIRE_NVRTC=1 timeout -k 5 ${SA_LIMIT:-100} "$b/tests/standalone_gpu" --include-ignored \
    > "$o/standalone.log" 2>&1
  echo "standalone rc=$?"
  grep -E "rank [01]: +[0-9.]+ s:" "$o/standalone.log" | tail -4
fi
if [ -n "${TIMING:-1}" ]; then
  RUNS=${RUNS:-9} BIN=$b timeout 400 bash scripts/diag/torch.sh timing "$o/torch"
  tail -45 "$o/torch/timing-compare.log"
fi
if [ -n "${PEERS:-1}" ]; then
  rm -rf /tmp/mscclpp-python
  python3 -m pip install -q --no-deps --no-index --target /tmp/mscclpp-python "$b"/python/*.whl > "$o/pip.log" 2>&1
  PYTHONPATH=/tmp/mscclpp-python timeout 200 torchrun --nproc-per-node 2 --master-port 29877 \
    "$b/python/examples/peers.py" --sizes ${PEER_SIZES:-1K:64M} --runs 15 --csv "$o/peers.csv" --json "$o/peers.json" \
    > "$o/peers.log" 2>&1
  echo "peers rc=$?"; tail -25 "$o/peers.log"
  "$b/mscclpp" plot "$o/peers.csv" -o "$o/peers.png" > "$o/plot.log" 2>&1; echo "plot rc=$?"
fi
rm -rf "$o"/torch/cache
