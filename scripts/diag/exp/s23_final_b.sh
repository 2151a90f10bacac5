#!/usr/bin/env bash
# Session 23, final call B (2 GPUs): the GPU suite's `nccl` part (torch through the NCCL-ABI library, whose shipped
# table now runs the LL128 two-shot at 512 KiB-4 MiB on 2 x H200) and `python` part (the peers harness,
# examples/torch/peers.py, among its steps) at 2 ranks. Everything packed into ARCHIVE after each step.
# Usage: LIMIT=S scripts/diag/exp/s23_final_b.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
suite nccl 200
suite python "$(remaining 8)"
