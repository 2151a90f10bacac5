#!/usr/bin/env bash
# Session step: tune all-reduce (in place), all-gather and reduce-scatter 1 KiB-1 GiB beside NCCL on this host's two
# GPUs, as docs/tune.md says tables to ship are made; the tables land in OUT.
# Usage: scripts/diag/exp/s13_tune.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
export MSCCLPP_CACHE_DIR=$o/cache
export MSCCLPP_NCCL_LIB_PATH=$(python3 -c 'import nvidia.nccl, os; d = os.path.join(list(nvidia.nccl.__path__)[0], "lib"); print(os.path.join(d, "libnccl.so.2"))' 2>/dev/null)
[ -e "$MSCCLPP_NCCL_LIB_PATH" ] || export MSCCLPP_NCCL_LIB_PATH=$(find / -name libnccl.so.2 2>/dev/null | head -n 1)
echo "NCCL: $MSCCLPP_NCCL_LIB_PATH"
run() { timeout "$1" mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE -x MSCCLPP_CACHE_DIR -x MSCCLPP_NCCL_LIB_PATH \
  -x LD_LIBRARY_PATH "$b/mscclpp" "${@:2}"; }
run 280 tune allreduce --in-place --nccl --sizes 1K:1G > "$o/tune-allreduce.log" 2>&1; echo "allreduce rc=$?"
run 280 tune allgather reducescatter --nccl --sizes 1K:1G > "$o/tune-ag-rs.log" 2>&1; echo "ag/rs rc=$?"
cp "$o"/cache/tuned/*.json "$o"/ 2>/dev/null; ls "$o"
tail -30 "$o/tune-allreduce.log"; tail -45 "$o/tune-ag-rs.log"
rm -rf "$o/cache"
