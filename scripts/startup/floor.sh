#!/usr/bin/env bash
# The CUDA floor of start-up, step by step (see cuda_init.c): one process alone, then two under mpirun, with a
# normal exit and with _exit. Usage: scripts/startup/floor.sh OUT_FILE [ROUNDS]
set -u
out=$1 rounds=${2:-10}
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I/usr/local/cuda/include "$here/cuda_init.c" -o "$tmp/cuda_init" -lcuda || exit 1
nvidia-smi --query-gpu=name,persistence_mode,driver_version --format=csv >>"$out" 2>&1
mpi=(mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES)
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) * 1000 }'; }
for r in $(seq 1 "$rounds"); do
  for variant in "one:" "one:-x" "two:" "two:-x"; do
    n=${variant%%:*} flag=${variant#*:}
    t0=$(date +%s.%N)
    if [ "$n" = one ]; then "$tmp/cuda_init" -v $flag 2>"$tmp/e"; else "${mpi[@]}" "$tmp/cuda_init" -v $flag 2>"$tmp/e"; fi
    t1=$(date +%s.%N)
    echo "floor: $n process(es) ${flag:-normal-exit} total $(ms "$t0" "$t1") ms | $(tr '\n' ' ' <"$tmp/e")" >>"$out"
  done
done
