#!/usr/bin/env bash
# Two GPUs, what is left at the final library. WHAT=gibrest: the GPU suite's `gib` part for the programs earlier
# calls did not reach (GIB_PROGRAMS, default the three reduce-scatters s33 left). WHAT=peers: the peers' harness
# (examples/torch/peers.py: this library, NCCL, NCCL's symmetric kernels, torch symm_mem one-shot and two-shot) over
# the band where the ratios are closest, PEER_SIZES (default 2M:32M), PEER_ROUNDS rounds (default 11), into
# `peers-band.csv`/`.json`/`.log`. WHAT=artune: `mscclpp tune` of the all-reduce in place at 4, 8 and 16 MiB beside
# NCCL (`artune.json`, `artune.log`). WHAT=parts: the GPU suite's PARTS (default "soak-a soak-b") one after another.
# Several may be named ("gibrest peers"), run in that order. Use a fresh OUT for
# each call: a warm host keeps the folder, and ARCHIVE packs all of it.
# Usage: WHAT="gibrest|peers|artune|parts ..." [PARTS="..."] LIMIT=S scripts/diag/exp/s34_x2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
for what in ${WHAT:-gibrest}; do
case "$what" in
  gibrest)
    MSCCLPP_SUITE_PROGRAMS=${GIB_PROGRAMS:-reducescatter reducescatter_pipelined reducescatter_rotated} \
      suite_run gib "$(remaining 15)"
    grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-gib/summary.md" | head -8
    ;;
  peers)
    py=/tmp/mscclpp-python
    rm -rf "$py"
    python3 -m pip install -q --no-deps --no-index --target "$py" "$b"/python/*.whl "$b"/python/wheels/*.whl \
      > "$o/peers-install.log" 2>&1 || { echo "peers: the wheel did not install"; cat "$o/peers-install.log"; }
    PYTHONPATH=$py MSCCLPP_CACHE_DIR=$o/cache run peers-band 300 torchrun --nproc-per-node 2 \
      "$b/python/examples/peers.py" --sizes "${PEER_SIZES:-2M:32M}" --rounds "${PEER_ROUNDS:-11}" \
      --csv "$o/peers-band.csv" --json "$o/peers-band.json"
    grep -vE "^(W|\*)" "$o/peers-band.log" | tail -14
    ;;
  parts)
    for p in ${PARTS:-soak-a soak-b}; do
      suite_run "$p" "$(remaining 15)"
      grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-$p/summary.md" | head -6
    done
    ;;
  artune)
    run artune 240 "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --sizes 4M,8M,16M --thread-blocks 32,64,128 \
      --threads 512,1024 --nccl --out "$o/artune.json"
    tail -8 "$o/artune.log"
    ;;
esac
done
rm -rf "$o"/cache
pack "$A"
