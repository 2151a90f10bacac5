#!/usr/bin/env bash
# Session check: symmetric windows (standalone library and torch) and the <=512-thread entry points at 2 ranks.
# Usage: scripts/diag/exp/s12_call1.sh BIN OUT
set -u
b=$1 o=$2
mkdir -p "$o"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L > "$o/gpus.txt" 2>&1
(cd "$b" && sha256sum MANIFEST) > "$o/manifest.sha" 2>&1
cp "$b/MANIFEST" "$o/" 2>/dev/null
BIN=$b timeout 420 bash scripts/diag/torch.sh ${STEPS:-standalone,collectives} "$o/torch"
[ -n "${M6:-1}" ] && NPS=2 timeout 200 bash scripts/diag/exp/measure6.sh "$b" "$o/m6"
rm -rf "$o"/torch/cache
