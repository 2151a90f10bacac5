#!/usr/bin/env bash
# Two GPUs: the peers' harness (examples/torch/peers.py: this library, NCCL, NCCL's symmetric kernels, torch
# symm_mem one-shot and two-shot) over the band where the ratios are closest, PEER_SIZES (default 2M:32M),
# PEER_ROUNDS rounds (default 11), into `peers-band.csv`/`.json`/`.log`, packed into ARCHIVE. Use a fresh OUT for
# each call: a warm host keeps the folder, and ARCHIVE packs all of it. What else is left at the final library runs
# through the earlier scripts: the last `gib` programs and the soak parts with
# `MSCCLPP_SUITE_PROGRAMS="reducescatter reducescatter_pipelined reducescatter_rotated" WHAT=d PARTS=gib
# scripts/diag/exp/s31_x2.sh ...` and `WHAT=d PARTS="soak-a soak-b" scripts/diag/exp/s31_x2.sh ...`; the 4-16 MiB
# all-reduce tune with `WHAT=artune scripts/diag/exp/s32_x2.sh ...`.
# Usage: LIMIT=S scripts/diag/exp/s34_x2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
py=/tmp/mscclpp-python
rm -rf "$py"
python3 -m pip install -q --no-deps --no-index --target "$py" "$b"/python/*.whl "$b"/python/wheels/*.whl \
  > "$o/peers-install.log" 2>&1 || { echo "peers: the wheel did not install"; cat "$o/peers-install.log"; }
PYTHONPATH=$py MSCCLPP_CACHE_DIR=$o/cache run peers-band 300 torchrun --nproc-per-node 2 \
  "$b/python/examples/peers.py" --sizes "${PEER_SIZES:-2M:32M}" --rounds "${PEER_ROUNDS:-11}" \
  --csv "$o/peers-band.csv" --json "$o/peers-band.json"
grep -vE "^(W|\*)" "$o/peers-band.log" | tail -14
rm -rf "$o"/cache
pack "$A"
