#!/usr/bin/env bash
# Session check: the standalone library test (with progress on stderr) and the suite's matrix parts at 2 ranks.
# Usage: scripts/diag/exp/s12_call2.sh BIN OUT
set -u
b=$1 o=$2
mkdir -p "$o"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libnvrtc.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
done
CUDA_VISIBLE_DEVICES=0 MSCCLPP_REQUIRE_NVRTC=1 timeout -k 5 ${SA_LIMIT:-150} "$b/tests/standalone_gpu" --include-ignored \
  > "$o/standalone.log" 2>&1
echo "standalone rc=$?"
grep -E "rank [01]: +[0-9.]+ s:" "$o/standalone.log" | tail -6
[ -n "${PARTS:-matrix-a matrix-b}" ] && "$b/xtask" gpu run --bin "$b" $(for p in ${PARTS:-matrix-a matrix-b}; do echo --part $p; done) \
  --ranks 2 --out "$o/suite2" --deadline-s ${DEADLINE:-400} > "$o/suite2.log" 2>&1
echo "suite rc=$?"; tail -5 "$o/suite2.log"
