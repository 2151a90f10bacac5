#!/usr/bin/env bash
# Where the interpreter's time goes, and what NVLink patterns reach between the GPUs of this host.
# Usage: scripts/diag/exp/measure.sh BIN_DIR OUT_DIR
set -u
bin=$1 out=$2
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MSCCLPP_WAIT_TIMEOUT_MS=20000 MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000 MSCCLPP_CACHE_DIR=/tmp/mscclpp-cache
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
ngpu=$(nvidia-smi -L | wc -l)
python3 scripts/diag/exp/make_variants.py mscclpp-sys/cuda/execution_kernel.cu "$out/var" examples/interp_cost.cu
for f in scripts/diag/exp/*.cu; do
  case $f in */nvlink_probe.cu) continue ;; esac
  cp "$f" "$out/var/"
done
run() {  # run NAME LIMIT NP COMMAND...
  local name=$1 limit=$2 np=$3 t0=$(date +%s)
  shift 3
  local vis=0,1
  [ "$np" -ge 4 ] && vis=0,1,2,3
  echo "# $*" >>"$out/$name.log"
  CUDA_VISIBLE_DEVICES=$vis timeout -k 5 "$limit" mpirun --allow-run-as-root --bind-to none -np "$np" \
    -x NCCL_NVLS_ENABLE -x MSCCLPP_WAIT_TIMEOUT_MS -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS -x MSCCLPP_CACHE_DIR \
    -x LD_LIBRARY_PATH -x CUDA_VISIBLE_DEVICES -x MSCCLPP_INTERPRETER_SOURCE -x INTERP_COST_HAND_SOURCE \
    "$@" >>"$out/$name.log" 2>&1
  echo "$name rc=$? $(($(date +%s) - t0)) s"
}
if [ -n "${PROBE:-1}" ] && [ "$ngpu" -ge 2 ]; then
  nvcc -O3 -arch=sm_90 scripts/diag/exp/nvlink_probe.cu -o /tmp/nvlink_probe && \
    timeout 120 /tmp/nvlink_probe 256 >"$out/nvlink_probe-${ngpu}gpu.log" 2>&1
  echo "probe rc=$?"
fi
for np in ${NPS:-2 4}; do
  [ "$np" -le "$ngpu" ] || continue
  export MSCCLPP_INTERPRETER_SOURCE= INTERP_COST_HAND_SOURCE=
  unset MSCCLPP_INTERPRETER_SOURCE INTERP_COST_HAND_SOURCE
  run "interp-np$np-embedded" 120 "$np" "$bin/interp_cost" 1K,4K,64K,256K
  for v in ${VARIANTS-base}; do
    MSCCLPP_INTERPRETER_SOURCE=$out/var/$v.cu run "interp-np$np-$v" 120 "$np" "$bin/interp_cost" 1K,64K
  done
  for s in 1K 64K; do
    MSCCLPP_INTERPRETER_SOURCE=$out/var/prof.cu INTERP_COST_HAND_SOURCE=$out/var/hand_prof.cu \
      run "interp-np$np-prof-$s" 120 "$np" "$bin/interp_cost" "$s"
  done
done
rm -rf /tmp/mscclpp-cache
