#!/usr/bin/env bash
# Session 24, final call B (2 GPUs): the GPU suite's `nccl` part (torch through the NCCL-ABI library and its shipped
# table) and `python` part (the peers harness, examples/torch/peers.py, among its steps) at 2 ranks. Everything
# packed into ARCHIVE after each step.
# Usage: LIMIT=S scripts/diag/exp/s24_final_b.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
suite nccl 200
suite python "$(remaining 8)"
