#!/usr/bin/env bash
# Session 23, the LL128 two-shot with the interpreter's LL128 groups (2 GPUs): interp_cost of
# `allreduce_twoshot_ll128` and of the staged Simple two-shot (256 KiB-16 MiB / 1-16 MiB, checked);
# `mscclpp bench allreduce` of the LL128 program alone, fp16 in place, NCCL beside; `mscclpp tune allreduce`
# 256 KiB-16 MiB (its rows go into the shipped table of the host's GPU). Everything packed into ARCHIVE.
# Usage: LIMIT=S scripts/diag/exp/s23_call2.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
export CUDA_VISIBLE_DEVICES=0,1 RANKS=2
run interp-ll128 60 "$mpi" 2 "$b/interp_cost" 256K:16M:x2 allreduce_twoshot_ll128
run interp-staged 60 "$mpi" 2 "$b/interp_cost" 1M:16M:x2 allreduce_staged
grep -h "^PASS\|FAIL\|rror" "$o"/interp-*.log | sed 's/checks=6 //'
export MSCCLPP_CACHE_DIR=$o/cache
run bench-ll128 60 "$mpi" 2 "$b/mscclpp" bench allreduce --in-place --dtype f16 --sizes 256K:16M --nccl \
  --program allreduce_twoshot_ll128 --csv "$o/bench-ll128.csv"
grep -E "^ *[0-9]" "$o/bench-ll128.log" | awk '{print $1, $4, $9, $14, $16}'
pack "$A"
run tune-ar 200 "$mpi" 2 "$b/mscclpp" tune allreduce --in-place --dtype f16 --sizes 256K:16M --nccl \
  --thread-blocks 32,64,128 --threads 256,512 --budget-s 170 --out "$o/tuned-ar.json"
tail -n 10 "$o/tune-ar.log"
rm -rf "$o"/cache
pack "$A"
