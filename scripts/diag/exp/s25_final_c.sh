#!/usr/bin/env bash
# Session 25 (2 GPUs): the GPU suite's `nccl` part (torch through the NCCL-ABI library, broadcast among the
# collectives) and `python` part (the Python API and the peers harness). Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s25_final_c.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
suite nccl "$(remaining 300)"
suite python "$(remaining 15)"
