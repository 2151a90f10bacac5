#!/usr/bin/env bash
# Session 23, experiment: the LL128 two-shot prototype (scripts/diag/exp/ll128_proto.cu) as interp_cost's hand
# kernel, against the interpreted allreduce_staged (1-16 MiB, tuned grid and other grids) and allreduce_twoshot_ll
# (256 KiB-4 MiB); the plain hand kernels as the baseline. Usage: s23_ll128.sh OUT (from the repository root, with
# target/release/examples/interp_cost carried).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
o=$1; mkdir -p "$o"
nvidia-smi -L | tee "$o/gpus.txt"
export CUDA_VISIBLE_DEVICES=0,1 MSCCLPP_WAIT_TIMEOUT_MS=20000 MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000
B=target/release/examples/interp_cost
P=$here/ll128_proto.cu
for u in 1 4; do sed "s/^#define LL128_UNROLL 2/#define LL128_UNROLL $u/" "$P" > "/tmp/ll128_u$u.cu"; done
mpi() { timeout -k 5 "$1" mpirun --allow-run-as-root --bind-to none -np 2 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE \
  -x INTERP_COST_HAND_SOURCE -x MSCCLPP_WAIT_TIMEOUT_MS -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS -x CUDA_VISIBLE_DEVICES "${@:2}"; }
one() { # NAME LIMIT SOURCE ARGS...
  local name=$1 lim=$2 src=$3; shift 3
  INTERP_COST_HAND_SOURCE=$src mpi "$lim" "$B" "$@" > "$o/$name.log" 2>&1
  echo "== $name rc=$?"; grep -h "^PASS\|FAIL\|rror" "$o/$name.log" | sed 's/checks=6 //' | head -12
}
base() { local name=$1 lim=$2; shift 2; mpi "$lim" "$B" "$@" > "$o/$name.log" 2>&1; echo "== $name rc=$?"; grep -h "^PASS\|FAIL\|rror" "$o/$name.log" | sed 's/checks=6 //' | head -12; }
one ll128-staged-tuned 60 "$P" 1M:16M:x2 allreduce_staged
base staged-tuned 60 1M:16M:x2 allreduce_staged
for c in 64x512 128x512 128x1024 32x1024; do one "ll128-staged-$c" 50 "$P" 1M:16M:x2 allreduce_staged "$c"; done
one ll128-u1-128x512 50 /tmp/ll128_u1.cu 1M:16M:x2 allreduce_staged 128x512
one ll128-u4-128x512 50 /tmp/ll128_u4.cu 1M:16M:x2 allreduce_staged 128x512
one ll128-twoshot-tuned 50 "$P" 256K:4M:x2 allreduce_twoshot_ll
base twoshot-ll-tuned 50 256K:4M:x2 allreduce_twoshot_ll
one ll128-twoshot-64x512 50 "$P" 256K:4M:x2 allreduce_twoshot_ll 64x512
one ll128-64M 60 "$P" 32M:64M:x2 allreduce_staged 128x1024
