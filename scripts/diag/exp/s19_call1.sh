#!/usr/bin/env bash
# Session 19, call 1 (4 GPUs): torch start-up at 4 ranks with and without the library (2 alternations, set-up phases
# traced); the copy-engine all-reduce `allreduce_port_pipelined` beside the default selection and NCCL at
# 64 MiB-1 GiB (in place), and with 2 and 4 instances; `reducescatter_pipelined` and `allgather_allpairs` by name at
# 64 MiB-1 GiB beside NCCL. Everything packed into one archive after each step.
# Usage: scripts/diag/exp/s19_call1.sh BIN OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
A=$3
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1,2,3
init=$here/../torch_init.py
for i in 1 2; do
  run init-nccl-$i 90 torchrun --nproc-per-node 4 "$init" --label "nccl $i"
  LD_PRELOAD=$b/nccl/libmscclpp_nccl.so MSCCLPP_TRACE_STARTUP=1 run init-ours-$i 90 \
    torchrun --nproc-per-node 4 "$init" --label "ours $i"
done
grep -h "^init" "$o"/init-*.log
grep -h "startup pid" "$o/init-ours-2.log" | head -60
pack "$A"
bench() {
  local name=$1 c=$2; shift 2
  MSCCLPP_CACHE_DIR=$o/cache run $name 120 $mpi 4 "$b/mscclpp" bench $c "$@" --nccl --csv "$o/$name.csv"
  grep -E "^ *[0-9]" "$o/$name.log" | head -12
  pack "$A"
}
bench ar-default allreduce --in-place --sizes 64M:1G:x4
bench ar-portpipe allreduce --in-place --program allreduce_port_pipelined --sizes 64M:1G:x4
for i in 2 4; do
  MSCCLPP_CACHE_DIR=$o/cache run test-portpipe-i$i 120 $mpi 4 "$b/mscclpp" test allreduce_port_pipelined \
    --in-place --size 256M,1G --graph --runs 20 --instances $i
  grep -iE "us|PASS|FAIL|error" "$o/test-portpipe-i$i.log" | head -8
  pack "$A"
done
bench rs-pipelined reducescatter --program reducescatter_pipelined --sizes 64M:1G:x2
bench ag-allpairs allgather --program allgather_allpairs --sizes 64M:1G:x2
rm -rf "$o"/cache*
pack "$A"
