#!/usr/bin/env bash
# libmscclpp_nccl.so under torchrun on the GPU host, each step with its own time limit and log.
# Usage: scripts/diag/torch.sh STEPS OUT_DIR
#   STEPS: comma-separated, from
#     standalone  the library without NCCL, 2 ranks on GPU 0 (the `standalone_gpu` test binary)
#     window      the library without NCCL, a symmetric window on GPUs 0 and 1 (the same binary)
#     collectives torch_collectives.py with LD_PRELOAD (MSCCLPP_NCCL_LOG=info), then without, then the comparison
#     collectives-device-id   the same with init_process_group(device_id=...) (nonblocking communicators)
#     fault       torch_fault.py: rank 1 killed during graph replays; rank 0 must end non-zero in time
#     timing      torch_timing.py without LD_PRELOAD, then with, then the comparison (speed-ups and targets)
#     hosttime    host time per call inside the library, ours and forwarded to NCCL (small sizes)
# Environment: NP (ranks, default 2), BIN (folder with nccl/libmscclpp_nccl.so, the scripts and
#              tests/standalone_gpu; default .gpu-bin), RUNS (timing runs per row, default 15).
set -u
steps=$1 out=$2
np=${NP:-2} bin=${BIN:-.gpu-bin} runs=${RUNS:-15}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$(cd "$bin" && pwd)
export MSCCLPP_WAIT_TIMEOUT_MS=${MSCCLPP_WAIT_TIMEOUT_MS:-20000} MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000
export MSCCLPP_CACHE_DIR=${MSCCLPP_CACHE_DIR:-$out/cache}
. "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
lib=$bin/nccl/libmscclpp_nccl.so
step() {
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$out/$name.log" 2>&1
  rc=$?
  echo "$name: rc=$rc in $(( $(date +%s) - t0 )) s"
}
tr() { torchrun --nproc-per-node "$np" --master-port $((29500 + RANDOM % 1000)) "$@"; }
for s in ${steps//,/ }; do
  case $s in
    standalone)
      step standalone 300 env CUDA_VISIBLE_DEVICES=0 MSCCLPP_REQUIRE_NVRTC=1 "$bin/tests/standalone_gpu" \
        two_ranks_share_a_gpu_without_a_real_nccl --exact --include-ignored ;;
    window)
      step window 240 env CUDA_VISIBLE_DEVICES=0,1 "$bin/tests/standalone_gpu" \
        a_symmetric_window_on_two_gpus_without_a_real_nccl --exact --include-ignored ;;
    collectives)
      step collectives-mscclpp 420 env LD_PRELOAD="$lib" MSCCLPP_NCCL_LOG=info \
        bash -c "$(declare -f tr); np=$np; tr $bin/nccl/torch_collectives.py --json $out/c-mscclpp.json"
      step collectives-nccl 420 bash -c "$(declare -f tr); np=$np; tr $bin/nccl/torch_collectives.py --json $out/c-nccl.json"
      step collectives-compare 60 python3 "$bin/nccl/torch_collectives.py" --compare "$out/c-nccl.json" "$out/c-mscclpp.json" ;;
    collectives-device-id)
      step collectives-device-id-mscclpp 420 env LD_PRELOAD="$lib" MSCCLPP_NCCL_LOG=info \
        bash -c "$(declare -f tr); np=$np; tr $bin/nccl/torch_collectives.py --device-id --json $out/d-mscclpp.json"
      step collectives-device-id-nccl 420 bash -c "$(declare -f tr); np=$np; tr $bin/nccl/torch_collectives.py --device-id --json $out/d-nccl.json"
      step collectives-device-id-compare 60 python3 "$bin/nccl/torch_collectives.py" --compare "$out/d-nccl.json" "$out/d-mscclpp.json" ;;
    fault)
      step fault 300 env LD_PRELOAD="$lib" MSCCLPP_NCCL_LOG=info python3 "$bin/nccl/torch_fault.py" ;;
    timing)
      step timing-nccl 420 bash -c "$(declare -f tr); np=$np; tr $bin/nccl/torch_timing.py --runs $runs --json $out/t-nccl.json"
      step timing-mscclpp 420 env LD_PRELOAD="$lib" MSCCLPP_NCCL_LOG=info \
        bash -c "$(declare -f tr); np=$np; tr $bin/nccl/torch_timing.py --runs $runs --json $out/t-mscclpp.json"
      step timing-compare 60 python3 "$bin/nccl/torch_timing.py" --compare "$out/t-nccl.json" "$out/t-mscclpp.json" ;;
    hosttime)
      # The host time per call inside the library's collective functions (MSCCLPP_NCCL_LOG=info prints it at exit):
      # ours, then every call forwarded (NCCL's own host time, through the same measurement), small sizes.
      step hosttime-mscclpp 300 env LD_PRELOAD="$lib" MSCCLPP_NCCL_LOG=info \
        bash -c "$(declare -f tr); np=$np; tr $bin/nccl/torch_timing.py --runs $runs --max-size 64K --json $out/h-mscclpp.json"
      step hosttime-nccl 300 env LD_PRELOAD="$lib" MSCCLPP_NCCL_LOG=info MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION=all \
        bash -c "$(declare -f tr); np=$np; tr $bin/nccl/torch_timing.py --runs $runs --max-size 64K --json $out/h-nccl.json"
      grep -h "host time per call" "$out"/hosttime-*.log | sort | uniq ;;
    *) echo "unknown step $s" ;;
  esac
done
