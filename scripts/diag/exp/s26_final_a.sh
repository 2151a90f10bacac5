#!/usr/bin/env bash
# Session 26 final (2 GPUs): the correctness matrices at the final code, `matrix-a` (every default, port-channel and
# tuned-table-only program at two ranks) then `matrix-b`. Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s26_final_a.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
suite matrix-a "$(remaining 150)"
suite matrix-b "$(remaining 15)"
