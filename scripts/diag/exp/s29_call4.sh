#!/usr/bin/env bash
# Session 29 (one GPU): the GPU suite's `one-gpu` part (the test binaries' GPU tests, NVRTC compiles, the
# single-GPU fault checks) on the binaries of `3353e06`. Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s29_call4.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0 RANKS=1
suite one-gpu "$(remaining 10)"
