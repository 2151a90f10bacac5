#!/usr/bin/env bash
# Session 27 final (2 GPUs): the GPU suite's `matrix-a` (every default, port-channel and tuned-table-only all-reduce
# and all-gather program at two ranks). Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s27_final_b.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
suite matrix-a "$(remaining 15)"
