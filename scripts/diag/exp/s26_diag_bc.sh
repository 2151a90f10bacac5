#!/usr/bin/env bash
# Session 26 diagnosis (2 GPUs): where `broadcast` loses to the memory-channel put at 64-256 MiB. `mscclpp bench
# broadcast` with the shipped table on its plan-specialised program and on the generic interpreter
# (MSCCLPP_FIXED_KERNELS=off), then `memory_channel_bw` again in the same call. Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s26_diag_bc.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
for mode in "" off; do
  MSCCLPP_FIXED_KERNELS=$mode run bench-bc-fixed${mode:+-$mode} 60 "$mpi" 2 "$b/mscclpp" bench broadcast --dtype f16 \
    --sizes 16M:256M --nccl --csv "$o/bench-bc-fixed${mode:+-$mode}.csv"
  grep -E "^ *[0-9]" "$o/bench-bc-fixed${mode:+-$mode}.log" | awk '{print $1, $4, $9, $14, $15, $16}'
done
run mcbw 60 "$mpi" 2 "$b/memory_channel_bw" 268435456
grep -E "put +uni" "$o/mcbw.log" | tail -3
pack "$A"
