#!/usr/bin/env bash
# Session 25 (2 GPUs): the GPU suite's correctness matrices `matrix-a` and `matrix-b` whole (every default,
# port-channel and tuned-table-only program; 4 element types, 5 sizes, both placements, eager and graph). Everything
# packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s25_final_a.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
suite matrix-a "$(remaining 300)"
suite matrix-b "$(remaining 15)"
