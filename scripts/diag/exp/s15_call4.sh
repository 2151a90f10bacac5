#!/usr/bin/env bash
# Session 15, 2-rank runs on GPUs 0 and 1 (H200 or H100): with every LL program's specialised program embedded for
# both block-size classes, the small sizes re-tuned (1 KiB-1 MiB) and benched with that table beside NCCL (with
# BIG=1 to 1 GiB); the interpreter against the hand-written kernels (the LL programs 1 KiB-1 MiB at the tuned grids
# and at 1x256, the Simple all-reduces at 512 and 256 threads per block).
# Usage: scripts/diag/exp/s15_call4.sh BIN OUT
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../gpu_env.sh"
session "$1" "$2"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MSCCLPP_WAIT_TIMEOUT_MS=20000 MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000
export MSCCLPP_NCCL_LIB_PATH=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib", "libnccl.so.2"))' 2>/dev/null)
cat > "$o/mpi" <<'EOS'
#!/usr/bin/env bash
n=$1; shift
exec mpirun --allow-run-as-root --bind-to none -np "$n" -x NCCL_NVLS_ENABLE -x MSCCLPP_CACHE_DIR \
  -x MSCCLPP_WAIT_TIMEOUT_MS -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS -x LD_LIBRARY_PATH -x MSCCLPP_NCCL_LIB_PATH \
  -x MSCCLPP_FIXED_KERNELS -x CUDA_VISIBLE_DEVICES "$@"
EOS
chmod +x "$o/mpi"
mpi=$o/mpi
t_start=$(date +%s)
run() { local name=$1 limit=$2 t0=$(date +%s); shift 2
  if [ $(( t0 - t_start + limit )) -gt ${LIMIT:-560} ]; then echo "$name skipped (deadline)"; return; fi
  timeout -k 5 "$limit" "$@" > "$o/$name.log" 2>&1; local rc=$?
  echo "$name rc=$rc $(($(date +%s) - t0)) s"; }
"$b/mscclpp" --version > "$o/version.txt" 2>&1
cp "$b/MANIFEST" "$o/MANIFEST.txt"
export MSCCLPP_FIXED_KERNELS= MSCCLPP_CACHE_DIR=$o/cache2 CUDA_VISIBLE_DEVICES=0,1
run tune-2r-ar 100 $mpi 2 "$b/mscclpp" tune allreduce --in-place --sizes 1K:1M --nccl --budget-s 90 --out "$o/tuned-2r-ar.json"
run tune-2r-agrs 130 $mpi 2 "$b/mscclpp" tune allgather reducescatter --sizes 1K:1M --nccl --budget-s 120 --out "$o/tuned-2r-agrs.json"
top=1M; [ "${BIG:-0}" = 1 ] && top=1G
for c in allreduce allgather reducescatter; do
  ip=; [ $c = allreduce ] && ip=--in-place
  run bench-2r-$c 80 $mpi 2 "$b/mscclpp" bench $c $ip --sizes 1K:$top:x4 --nccl --csv "$o/bench-2r-$c.csv"
done
grep -h "    1024 " "$o"/bench-2r-*.log
for p in allreduce_oneshot_ll allreduce_twoshot_ll allgather_allpairs_ll reducescatter_ll; do
  run "interp-$p" 60 $mpi 2 "$b/interp_cost" 1K:1M:x4 $p
  run "interp-$p-1x256" 30 $mpi 2 "$b/interp_cost" 1K,4K $p 1x256
done
for c in 8x512 32x256; do run "interp-allreduce_rsag-$c" 60 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_rsag $c; done
for c in 32x512 128x256; do run "interp-allreduce_twoshot-$c" 60 $mpi 2 "$b/interp_cost" 1M:64M:x4 allreduce_twoshot $c; done
grep -h "PASS\|FAIL\|rror" "$o"/interp-*.log | head -70
rm -rf "$o"/cache*
cd "$o" && tar czf logs.tgz *.log *.csv *.json *.txt mpi && rm -rf *.log *.csv *.json
