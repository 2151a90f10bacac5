#!/usr/bin/env bash
# Session 24, final call C (2 GPUs): the GPU suite's `matrix-a` part narrowed to the LL128 all-reduces
# (MSCCLPP_SUITE_PROGRAMS), its `interp-cost` part (every LL program, the LL128 and the Simple all-reduces against
# their hand-written kernels) and its `runtime` part with the time left. Everything packed into ARCHIVE after each.
# Usage: LIMIT=S scripts/diag/exp/s24_final_c.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
MSCCLPP_SUITE_PROGRAMS="allreduce_oneshot_ll128 allreduce_twoshot_ll128" suite matrix-a 120
suite interp-cost 260
suite runtime "$(remaining 8)"
