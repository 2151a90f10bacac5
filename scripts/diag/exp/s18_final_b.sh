#!/usr/bin/env bash
# Session 18, final call B (2 GPUs): torch start-up with and without the library (3 alternations, the library's
# set-up phases traced), then `mscclpp bench` of the five collectives beside NCCL with the shipped tables, 1 KiB to
# 1 GiB, graphs (all-reduce in place in fp16, bf16 and f32; the others out of place in fp16), with CSV and PNG
# plots: the tables of results/bench-2xH200.md.
# Usage: scripts/diag/exp/s18_final_b.sh BIN OUT
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1
init=$here/../torch_init.py
for i in 1 2 3; do
  run init-nccl-$i 90 torchrun --nproc-per-node 2 "$init" --label "nccl $i"
  LD_PRELOAD=$b/nccl/libmscclpp_nccl.so MSCCLPP_TRACE_STARTUP=1 run init-ours-$i 90 \
    torchrun --nproc-per-node 2 "$init" --label "ours $i"
done
grep -h "^init" "$o"/init-*.log
grep -h "startup pid" "$o/init-ours-3.log" | sort | head -40
for job in allreduce:f16 allreduce:bf16 allreduce:f32 allgather:f16 reducescatter:f16 alltoall:f16 broadcast:f16; do
  c=${job%%:*} t=${job#*:}
  ip=; [ $c = allreduce ] && ip=--in-place
  name=bench-$c-$t
  MSCCLPP_CACHE_DIR=$o/cache run $name 100 $mpi 2 "$b/mscclpp" bench $c $ip --dtype $t --sizes 1K:1G --nccl \
    --csv "$o/$name.csv" --plot "$o/$name.png"
  grep -h "speedup\|^ *[0-9]" "$o/$name.log" | awk '{print $1, $4, $10, $15}' | tr '\n' ';' | cut -c1-400; echo
done
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz $(ls -d *.log *.txt mpi 2>/dev/null) && rm -rf *.log mpi
