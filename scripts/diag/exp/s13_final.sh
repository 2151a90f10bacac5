#!/usr/bin/env bash
# Session check at the final commit: the NCCL-ABI library's standalone tests (two ranks on one GPU; the symmetric
# window on two), torch's collectives through it (every value checked), the fault check (a killed rank named),
# and the Python examples (the guide's three approaches, the native algorithm, the DSL program) first.
# Usage: scripts/diag/exp/s13_final.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
rm -rf /tmp/mscclpp-python
python3 -m pip install -q --no-deps --no-index --target /tmp/mscclpp-python "$b"/python/*.whl > "$o/pip.log" 2>&1
for s in native_kernel dsl_program customized_comm default_algorithms plan_based; do
  arg=; [ $s = native_kernel ] && arg=$b/custom_kernel.cu
  PYTHONPATH=/tmp/mscclpp-python MSCCLPP_CACHE_DIR=$o/cache timeout 90 torchrun --nproc-per-node 2 \
    --master-port $((29600 + RANDOM % 300)) "$b/python/examples/$s.py" $arg > "$o/$s.log" 2>&1
  echo "$s rc=$? ($(grep -c ': ok' "$o/$s.log") checks)"
done
BIN=$b timeout 150 bash scripts/diag/torch.sh standalone,window "$o/nccl" | tail -2
grep -h "checks passed\|test result" "$o"/nccl/standalone.log "$o"/nccl/window.log | sort | uniq -c
BIN=$b timeout 200 bash scripts/diag/torch.sh fault "$o/nccl"
tail -4 "$o/nccl/fault.log"
export MSCCLPP_WAIT_TIMEOUT_MS=20000 MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000
timeout 240 env LD_PRELOAD="$b/nccl/libmscclpp_nccl.so" MSCCLPP_NCCL_LOG=info MSCCLPP_CACHE_DIR=$o/cache \
  torchrun --nproc-per-node 2 --master-port 29711 "$b/nccl/torch_collectives.py" --json "$o/c-mscclpp.json" \
  > "$o/collectives-mscclpp.log" 2>&1
echo "collectives rc=$?"; grep -E "checks|FAIL|passed" "$o/collectives-mscclpp.log" | tail -4
rm -rf "$o/cache" "$o"/nccl/cache
