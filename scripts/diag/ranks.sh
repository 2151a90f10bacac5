#!/usr/bin/env bash
# Diagnosis and tuning runs at N ranks (one GPU each) on the GPU host, each step with its own time limit and log.
# Usage: scripts/diag/ranks.sh STEPS OUT_DIR
#   STEPS: comma-separated, from
#     ab       `mscclpp bench` of the Simple band with the binaries of $OLD (before) and $NEW (after), in one run
#     programs the large-message programs one by one (`--program`, NCCL beside them), with every binary folder of
#              $BINS (space-separated, e.g. "old align new"; each a folder under .gpu-bin, `new` meaning $NEW);
#              PROGRAM_JOBS replaces the list ("COLLECTIVE PROGRAM SIZES [--in-place]", separated by `;`)
#     ncu      one launch of the interpreter per binary under Nsight Compute on rank 0: global load/store
#              instructions and bytes (one pass, no replay; the other ranks wait for it within the wait timeout)
#     tune     `mscclpp tune` of all-reduce (in place), all-gather and reduce-scatter, 1 KiB-1 GiB, beside NCCL,
#              into $OUT_DIR/cache/tuned (budgets TUNE_BUDGET_AR/AG/RS seconds)
#     bench    `mscclpp bench` of the three collectives, 1 KiB-1 GiB, beside NCCL, with the shipped tables
#              (CSV, JSON and PNG into OUT_DIR; CUDA_VISIBLE_DEVICES narrows the GPUs, e.g. NP=2 on GPUs 0,1)
# Environment: NP (ranks, default 4), TUNE_TBS (the tuner's thread-block totals, default 8,16,32,64,128),
#              NEW (folder of the binaries under test, default .gpu-bin),
#              OLD (folder of the binaries before the change, for `ab` and `ncu`).
set -u
steps=$1 out=$2
np=${NP:-4} new=${NEW:-.gpu-bin} old=${OLD:-}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MSCCLPP_WAIT_TIMEOUT_MS=${MSCCLPP_WAIT_TIMEOUT_MS:-20000} MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000
export MSCCLPP_CACHE_DIR=${MSCCLPP_CACHE_DIR:-$out/cache}
. "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
if [ -z "${MSCCLPP_NCCL_LIB_PATH:-}" ]; then
  MSCCLPP_NCCL_LIB_PATH=$(python3 -c 'import nvidia.nccl, os; p = nvidia.nccl.__path__[0]; print(os.path.join(p, "lib", "libnccl.so.2"))' 2>/dev/null)
  [ -e "$MSCCLPP_NCCL_LIB_PATH" ] || MSCCLPP_NCCL_LIB_PATH=$(find / -name libnccl.so.2 -not -path '*/proc/*' 2>/dev/null | head -1)
  export MSCCLPP_NCCL_LIB_PATH
fi
mpi=(mpirun --allow-run-as-root --bind-to none -np "$np" -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST
  -x NVSHMEM_DISABLE_NVLS -x MSCCLPP_CACHE_DIR -x MSCCLPP_WAIT_TIMEOUT_MS -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS
  -x LD_LIBRARY_PATH -x MSCCLPP_NCCL_LIB_PATH)
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && mpi+=(-x CUDA_VISIBLE_DEVICES)
# step NAME LIMIT_S COMMAND...: runs with a time limit, output into OUT_DIR/NAME.log, a status line on stdout.
step() {
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s)
  { echo "# $name: $*"; echo "# $(date -u +%FT%TZ), $np ranks"; } >>"$out/$name.log"
  timeout -k 5 "$limit" "$@" >>"$out/$name.log" 2>&1
  rc=$?
  echo "step $name rc=$rc $(($(date +%s) - t0)) s"
  tail -n 3 "$out/$name.log" | sed 's/^/    /'
}
{ nvidia-smi -L; nvidia-smi topo -m; "$new/mscclpp" --version; } >"$out/host.txt" 2>&1
echo "NCCL: $MSCCLPP_NCCL_LIB_PATH" >>"$out/host.txt"
has() { case ",$steps," in *",$1,"*) return 0 ;; esac; return 1; }

if has ab; then
  for which in old new; do
    bin=$old
    [ $which = new ] && bin=$new
    [ -n "$bin" ] || continue
    step "ab-$which" 150 "${mpi[@]}" "$bin/mscclpp" bench allreduce --in-place --sizes 1M,4M,16M,64M,256M --runs 20 \
      --nccl --csv "$out/ab-$which-allreduce.csv"
    step "ab-$which" 120 "${mpi[@]}" "$bin/mscclpp" bench reducescatter --sizes 1M,16M,256M --runs 20 --nccl \
      --csv "$out/ab-$which-reducescatter.csv"
  done
fi

if has programs; then
  for which in ${BINS:-new}; do
    bin=.gpu-bin/$which
    [ "$which" = new ] && bin=$new
    jobs=${PROGRAM_JOBS:-"allreduce allreduce_twoshot 16M,64M,256M --in-place;allreduce allreduce_rsag 16M,64M --in-place;\
reducescatter reducescatter 16M,64M,256M;allreduce allreduce_staged 4M,16M,64M,256M --in-place;\
reducescatter reducescatter_staged 16M,64M,256M"}
    IFS=';' read -ra job_list <<<"$jobs"
    for job in "${job_list[@]}"; do
      set -- $job
      "$bin/mscclpp" list 2>/dev/null | grep -q "^$2 " || continue  # a program this build does not have
      step "programs-$which" 90 "${mpi[@]}" "$bin/mscclpp" bench "$1" --program "$2" --sizes "$3" ${4:-} --runs 20 \
        --nccl --csv "$out/programs-$which-$2.csv"
    done
  done
fi

if has ncu; then
  metrics=smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum
  metrics=$metrics,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
  for which in old new; do
    bin=$old
    [ $which = new ] && bin=$new
    [ -n "$bin" ] || continue
    # Rank 0 under ncu, the others plain; one interpreter launch after the checked warm-up ones.
    wrap="$out/ncu-wrap.sh"
    cat >"$wrap" <<EOF
#!/usr/bin/env bash
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then
  exec ncu --clock-control none --cache-control none --replay-mode kernel -k regex:mscclpp_interp --launch-skip 3 \
    --launch-count 1 --metrics $metrics "\$@"
fi
exec "\$@"
EOF
    chmod +x "$wrap"
    step "ncu-$which" 120 "${mpi[@]}" "$wrap" "$bin/mscclpp" test allreduce_twoshot --size 64M --in-place --iters 8 \
      --no-timing
  done
fi

if has tune; then
  common=(--nccl --runs 5 --thread-blocks "${TUNE_TBS:-8,16,32,64,128}" --threads 256,512,1024)
  step tune-allreduce "$((${TUNE_BUDGET_AR:-150} + 60))" "${mpi[@]}" "$new/mscclpp" tune allreduce --in-place \
    --sizes 1K:1G --budget-s "${TUNE_BUDGET_AR:-150}" "${common[@]}"
  step tune-allgather "$((${TUNE_BUDGET_AG:-100} + 60))" "${mpi[@]}" "$new/mscclpp" tune allgather \
    --sizes 1K:1G --budget-s "${TUNE_BUDGET_AG:-100}" "${common[@]}"
  step tune-reducescatter "$((${TUNE_BUDGET_RS:-100} + 60))" "${mpi[@]}" "$new/mscclpp" tune reducescatter \
    --sizes 1K:1G --budget-s "${TUNE_BUDGET_RS:-100}" "${common[@]}"
  cp "$MSCCLPP_CACHE_DIR"/tuned/*.json "$out/" 2>/dev/null
fi

# The same tuning with 2 ranks on GPUs 0 and 1 (of a host whose pairs are all linked alike, this is the 2-GPU
# machine), into the same cache directory.
if has tune2; then
  common=(--nccl --runs 5 --thread-blocks 8,16,32,64,128 --threads 256,512,1024)
  mpi2=("${mpi[@]}")
  mpi2[5]=2
  for c in "allreduce --in-place" allgather reducescatter; do
    set -- $c
    step "tune2-$1" 200 env CUDA_VISIBLE_DEVICES=0,1 "${mpi2[@]}" -x CUDA_VISIBLE_DEVICES "$new/mscclpp" tune $c \
      --sizes 1K:1G --budget-s 140 "${common[@]}"
  done
  cp "$MSCCLPP_CACHE_DIR"/tuned/*.json "$out/" 2>/dev/null
fi

if has bench; then
  for c in "allreduce --in-place" allgather reducescatter; do
    set -- $c
    name=bench-${np}ranks-$1
    step "$name" 240 "${mpi[@]}" "$new/mscclpp" bench $c --sizes "${BENCH_SIZES:-1K:1G}" --nccl \
      --csv "$out/$name.csv" --json "$out/$name.json" --plot "$out/$name.png"
  done
fi
