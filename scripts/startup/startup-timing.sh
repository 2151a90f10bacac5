#!/usr/bin/env bash
# Where a warm start's time goes: interleaved rounds of bare mpirun, `mscclpp --version` (process start without
# CUDA), a minimal CUDA program (driver initialisation and a primary context) and the 1 KiB all-reduce job with
# MSCCLPP_TRACE_STARTUP=1 (one line per start-up phase), two ranks sharing GPU 0 unless GPUS=2.
# Usage: scripts/startup/startup-timing.sh BIN_DIR OUT_FILE [ROUNDS]
set -u
bin=$1 out=$2 rounds=${3:-10}
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
[ "${GPUS:-1}" = 2 ] || export MSCCLPP_SHARED_GPU=1
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I/usr/local/cuda/include "$here/cuda_init.c" -o "$tmp/cuda_init" -lcuda 2>>"$out" ||
  echo "cuda_init: cannot build (no cuda.h or libcuda); that row is missing" >>"$out"
mpi=(mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES -x MSCCLPP_SHARED_GPU
  -x MSCCLPP_TRACE_STARTUP -x MSCCLPP_CACHE_DIR)
export MSCCLPP_CACHE_DIR=$tmp/cache
# Warm the cache and the page cache once (not timed).
"${mpi[@]}" "$bin/mscclpp" test allreduce_oneshot_ll --size 1K --iters 1 --no-timing >/dev/null 2>&1
time_it() { # name, command...
  local name=$1 t0 t1 rc
  shift
  t0=$(date +%s.%N)
  "$@" >"$tmp/last.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  printf 'timing: %-22s %8.1f ms rc=%d\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) * 1000 }')" \
    "$rc" >>"$out"
  if [ "$name" = "mscclpp test traced" ]; then grep '^startup' "$tmp/last.log" | sort -s -k3,3 >>"$out"; fi
}
echo "commit: $(cat "$bin/MANIFEST" 2>/dev/null | head -1)" >>"$out"
for r in $(seq 1 "$rounds"); do
  echo "round $r" >>"$out"
  time_it "mpirun true" "${mpi[@]}" true
  time_it "mscclpp --version" "${mpi[@]}" "$bin/mscclpp" --version
  [ -x "$tmp/cuda_init" ] && time_it "cuda_init" "${mpi[@]}" "$tmp/cuda_init"
  time_it "mscclpp test" "${mpi[@]}" "$bin/mscclpp" test allreduce_oneshot_ll --size 1K --iters 1 --no-timing
  MSCCLPP_TRACE_STARTUP=1 time_it "mscclpp test traced" "${mpi[@]}" "$bin/mscclpp" test allreduce_oneshot_ll \
    --size 1K --iters 1 --no-timing
done
echo "medians (ms):" >>"$out"
for name in "mpirun true" "mscclpp --version" "cuda_init" "mscclpp test" "mscclpp test traced"; do
  grep "^timing: $name  " "$out" | awk '{for(i=1;i<=NF;i++) if($i=="ms") print $(i-1)}' | sort -n |
    awk -v n="$name" '{a[NR]=$1} END {if (NR) printf "  %-22s %8.1f  (n=%d, min %.1f, max %.1f)\n", n, (NR%2? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2), NR, a[1], a[NR]}' >>"$out"
done
