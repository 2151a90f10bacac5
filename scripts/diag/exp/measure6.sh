#!/usr/bin/env bash
# The entry points for blocks of up to 512 threads: the interpreter's cost, a correctness sweep of the LL defaults
# (which run such blocks) and of one 1024-thread Simple program, and the small sizes against NCCL at 4 ranks.
# Usage: scripts/diag/exp/measure6.sh BIN_DIR OUT_DIR   (env NPS: rank counts, default "2 4")
set -u
bin=$1 out=$2
nps=${NPS:-2 4}
mkdir -p "$out"
NPS="$nps" PROBE= VARIANTS= bash scripts/diag/exp/measure.sh "$bin" "$out/interp"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MSCCLPP_WAIT_TIMEOUT_MS=20000
for np in $nps; do
  vis=0,1
  [ "$np" = 4 ] && vis=0,1,2,3
  for prog in allreduce_oneshot_ll allreduce_twoshot_ll allgather_allpairs_ll reducescatter_ll allreduce_rotated; do
    sizes=1K,64K,256K
    [ "$prog" = allreduce_twoshot_ll ] && sizes=256K,1M
    [ "$prog" = allreduce_rotated ] && sizes=1M,16M
    CUDA_VISIBLE_DEVICES=$vis timeout 60 mpirun --allow-run-as-root --bind-to none -np "$np" -x NCCL_NVLS_ENABLE \
      -x MSCCLPP_WAIT_TIMEOUT_MS -x CUDA_VISIBLE_DEVICES "$bin/mscclpp" test "$prog" --size "$sizes" \
      --dtype f16,bf16,f32,i32 --both-placements --eager-and-graph --iters 5 --runs 3 >>"$out/test-np$np.log" 2>&1
    echo "test np$np $prog rc=$?"
  done
done
BENCH_SIZES=1K:256K:x4 NP=${nps##* } NEW=$bin timeout 60 bash scripts/diag/ranks.sh bench "$out/bench" | grep '^step'
rm -rf "$out"/*/cache "$out"/interp/var
