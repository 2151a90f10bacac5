#!/usr/bin/env bash
# Session check: the standalone symmetric-window test (cuMemAlloc pass first, per-call timing), then the wheel's
# GPU tests and the torch examples the last runs did not reach (native kernel as an algorithm object, the Python
# DSL program, tuning, the timing table with the registry's selection).
# Usage: scripts/diag/exp/s13_call1.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
if [ -n "${SA:-1}" ]; then
  MSCCLPP_REQUIRE_NVRTC=1 MSCCLPP_TRACE_STARTUP=1 timeout -k 5 ${SA_LIMIT:-200} \
    "$b/tests/standalone_gpu" a_symmetric_window_on_two_gpus_without_a_real_nccl --exact --include-ignored --nocapture \
    > "$o/standalone-window.log" 2>&1
  echo "window test rc=$?"; grep -E "ms|checks passed|test result|panicked" "$o/standalone-window.log" | tail -30
fi
rm -rf /tmp/mscclpp-python
python3 -m pip install -q --no-deps --no-index --target /tmp/mscclpp-python "$b"/python/*.whl "$b"/python/wheels/*.whl \
  > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/mscclpp-python MSCCLPP_CACHE_DIR=$o/cache
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m pytest -q -rs -p no:cacheprovider -m "gpu or torch" "$b/python/tests" \
  > "$o/pytest.log" 2>&1
echo "pytest rc=$?"; tail -3 "$o/pytest.log"
for s in ${EXAMPLES:-native_kernel dsl_program tuning timing}; do
  arg=; [ $s = native_kernel ] && arg=$b/custom_kernel.cu
  [ $s = timing ] && arg="--json $o/timing.json"
  timeout ${EX_LIMIT:-200} torchrun --nproc-per-node 2 --master-port $((29600 + RANDOM % 300)) \
    "$b/python/examples/$s.py" $arg > "$o/$s.log" 2>&1
  echo "$s rc=$?"; grep -c ": ok\|passed" "$o/$s.log"; grep -E "FAIL|Error" "$o/$s.log" | head -5
done
tail -30 "$o/timing.log"
rm -rf "$o/cache"
