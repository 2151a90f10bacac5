#!/usr/bin/env bash
# Session 17, call 1: can copy engines carry the 4-rank all-reduce at 1 GiB past the SM write rate?
# Copy-engine peer write rates per pattern (ce_probe.py), then `mscclpp bench` of allreduce_port against
# allreduce_rotated (the default there) and NCCL, 64 MiB-1 GiB, 4 ranks, in place.
# Usage: scripts/diag/exp/s17_call1.sh BIN OUT
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
session "$1" "$2"
mpi_jobs
run ce-probe-1g 120 python3 "$here/ce_probe.py" 1024 5
run ce-probe-256m 60 python3 "$here/ce_probe.py" 256 9
grep -h ce_probe "$o"/ce-probe-*.log
for prog in allreduce_port allreduce_rotated; do
  MSCCLPP_CACHE_DIR=$o/cache run bench-4r-$prog 150 $mpi 4 "$b/mscclpp" bench allreduce --in-place \
    --sizes 64M:1G:x4 --program $prog --nccl --csv "$o/bench-4r-$prog.csv"
  tail -n 8 "$o/bench-4r-$prog.log"
done
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz $(ls -d *.log *.csv mpi 2>/dev/null) && rm -rf *.log mpi
