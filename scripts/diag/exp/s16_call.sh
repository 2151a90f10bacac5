#!/usr/bin/env bash
# Session 16's checks: GPU-suite parts at a rank count, then `mscclpp bench` runs beside NCCL with the shipped tables.
# Usage: scripts/diag/exp/s16_call.sh BIN OUT
#   PARTS="matrix-a matrix-b"  suite parts (none: skip the suite); RANKS (default 4); SUITE_S (its deadline, 300)
#   BENCH="4:allreduce:1K:1G:x4 2:allgather:1M:64M:x2 ..."  ranks:collective:sizes (all-reduce in place); LIMIT (560)
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
if [ -n "${PARTS:-}" ]; then
  s=${SUITE_S:-300}
  run suite-${RANKS:-4}r $((s + 20)) "$b/xtask" gpu run --bin "$b" --ranks ${RANKS:-4} --deadline-s $s \
    $(for p in $PARTS; do echo --part $p; done) --out "$o/suite-${RANKS:-4}r"
  grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-${RANKS:-4}r/summary.md" | head -20
fi
export MSCCLPP_FIXED_KERNELS=
for job in ${BENCH:-}; do
  n=${job%%:*} rest=${job#*:}
  c=${rest%%:*} sizes=${rest#*:}
  ip=; [ $c = allreduce ] && ip=--in-place
  devs=0,1; [ "$n" = 4 ] && devs=0,1,2,3
  name=bench-${n}r-$c-${sizes//:/_}
  CUDA_VISIBLE_DEVICES=$devs MSCCLPP_CACHE_DIR=$o/cache$n run $name 150 $mpi $n "$b/mscclpp" bench $c $ip \
    --sizes $sizes --nccl --csv "$o/$name.csv"
done
grep -h "speedup\|^ *[0-9]" "$o"/bench-*.log 2>/dev/null | head -90
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz $(ls -d *.log *.csv *.txt mpi suite-* 2>/dev/null) && rm -rf *.log *.csv suite-*
