#!/usr/bin/env bash
# Session 18, final call C (2 GPUs): the benches of call B whose files did not come back (reduce-scatter, all-to-all,
# broadcast in fp16, all-reduce in f32), the same commands; everything packed into one archive after each bench.
# Usage: scripts/diag/exp/s18_final_c.sh BIN OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
export CUDA_VISIBLE_DEVICES=0,1
for job in reducescatter:f16 alltoall:f16 broadcast:f16 allreduce:f32; do
  c=${job%%:*} t=${job#*:}
  ip=; [ $c = allreduce ] && ip=--in-place
  name=bench-$c-$t
  MSCCLPP_CACHE_DIR=$o/cache run $name 60 $mpi 2 "$b/mscclpp" bench $c $ip --dtype $t --sizes 1K:1G --nccl \
    --csv "$o/$name.csv" --plot "$o/$name.png"
  (cd "$o" && tar czf "$3" $(ls *.log *.csv *.png *.txt 2>/dev/null))
done
