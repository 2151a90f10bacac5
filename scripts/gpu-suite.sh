#!/usr/bin/env bash
# The whole GPU suite, in one call, on a host with 2 GPUs: the runtime's test binaries (NVRTC compile, layout
# probe, bootstrap, ...), its fault checks and every example under mpirun and under torchrun --no-python; then the
# executor suite (scripts/gpu-suite-executor.sh: every default algorithm and 2-rank corpus plan through
# `mscclpp test`, examples/allreduce, bad-input checks, NCCL side by side).
#
#   scripts/gpu-suite.sh [BIN_DIR] [LOG_DIR] [PART]
#
# PART: all (default; runtime and every executor part: longer than one 10-minute device call), runtime, or one
# executor part: matrix-a, matrix-b (the two halves of the default-algorithm matrix; defaults = both), gib
# (1 GiB), corpus, final (figures, NCCL, launchers, bad input), extra (instance sweeps). One device call each;
# scripts/gpu-suite-call.sh runs several in one call and packs their logs into one file.
#
# BIN_DIR holds release binaries built elsewhere (see "Build" below); LOG_DIR receives gpu-suite.log and
# summary.md. Exits non-zero if any step fails.
#
# Build (on a machine with Rust):
#   export CARGO_TARGET_DIR=/work/targets/gpu
#   cargo build --release -p mscclpp-exec --examples
#   cargo test --release -p mscclpp-exec -p mscclpp-sys --no-run
#   scripts/gpu-suite.sh --collect .gpu-bin      # copies and strips them into .gpu-bin
set -uo pipefail

if [ "${1:-}" = "--collect" ]; then
  dest="${2:-.gpu-bin}"
  tdir="${CARGO_TARGET_DIR:-target}/release"
  mkdir -p "$dest/tests"
  for e in ping_pong memory_channel_bw port_channel custom_kernel gpu_checks; do
    cp "$tdir/examples/$e" "$dest/$e" && strip "$dest/$e"
  done
  for t in nvrtc_compile no_gpu bootstrap_loopback mscclpp_sys mscclpp_exec; do
    f=$(ls -t "$tdir"/deps/"$t"-* 2>/dev/null | grep -v '\.d$' | head -1)
    [ -n "$f" ] && cp "$f" "$dest/tests/$t" && strip "$dest/tests/$t"
  done
  cp examples/custom_kernel.cu "$dest/"
  cp "$tdir/mscclpp" "$dest/mscclpp" && strip "$dest/mscclpp"
  # Small-message variants for scripts/gpu-tune-small.sh: instances x threads per block.
  mkdir -p "$dest/tune"
  for i in 1 2 4 8; do
    for t in 1024 512 256; do
      "$tdir/mscclpp" plan allreduce_oneshot_ll --world-size 2 --instances "$i" --threads-per-block "$t" \
        --in-place --compact >"$dest/tune/oneshot_ll_x${i}_t${t}.json"
    done
  done
  cp "$tdir/examples/allreduce" "$dest/allreduce" && strip "$dest/allreduce"
  git rev-parse --short HEAD >"$dest/COMMIT" 2>/dev/null || true
  ls -la "$dest" "$dest/tests"
  exit 0
fi

BIN="${1:-.gpu-bin}"
LOGDIR="${2:-${OUT:-results}}"
PART="${3:-all}"
mkdir -p "$LOGDIR"
LOG="$LOGDIR/gpu-suite.log"
SUMMARY="$LOGDIR/summary.md"
: >"$LOG"

# Never use NVLink multicast on shared hosts (and the rest of the shared GPU environment).
source "$(dirname "$0")/gpu-env.sh"

pass=0
fail=0
failed=()
log() { echo "$*" | tee -a "$LOG"; }

# step NAME TIMEOUT COMMAND...
step() {
  local name="$1" limit="$2"
  shift 2
  log ""
  log "=== $name: $*"
  local t0=$(date +%s.%N)
  timeout --signal=KILL "$limit" bash -c '"$@"' _ "$@" >>"$LOG" 2>&1
  local rc=$?
  local t1=$(date +%s.%N)
  if [ $rc -eq 0 ]; then
    pass=$((pass + 1))
    log "--- PASS $name ($(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s)"
  else
    fail=$((fail + 1))
    failed+=("$name")
    log "--- FAIL $name (exit $rc)"
  fi
}

MPIRUN_CMD=""
if command -v mpirun >/dev/null 2>&1; then
  MPIRUN_CMD="mpirun --allow-run-as-root --bind-to none -np 2"
  for v in NCCL_NVLS_ENABLE LD_LIBRARY_PATH MSCCLPP_CACHE_DIR; do
    [ -n "${!v:-}" ] && MPIRUN_CMD="$MPIRUN_CMD -x $v"
  done
else
  log "# mpirun not found: the mpirun steps use this script's two-process launcher with OMPI_COMM_WORLD_* set"
fi
export MPIRUN_CMD

# Two processes with mpirun's variables, for hosts without mpirun.
fake_mpirun() {
  local pids=() rc=0
  for r in 0 1; do
    OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=$r MSCCLPP_JOB_ID="fake-$$" "$@" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}

# Run a command as 2 ranks under mpirun (or the fallback).
run2() {
  if [ -n "$MPIRUN_CMD" ]; then $MPIRUN_CMD "$@"; else fake_mpirun "$@"; fi
}
export -f run2 fake_mpirun

TORCHRUN=()
if command -v torchrun >/dev/null 2>&1; then
  TORCHRUN=(torchrun --no-python --standalone --nproc-per-node 2)
fi

log "# mscclpp GPU suite, $(date -u +%Y-%m-%dT%H:%M:%SZ), binaries from commit $(cat "$BIN/COMMIT" 2>/dev/null || echo unknown)"
log "# host: $(hostname), $(nproc) cores, kernel $(uname -r)"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader >>"$LOG" 2>&1
nvidia-smi topo -m >>"$LOG" 2>&1
log "# mpirun: $(mpirun --version 2>/dev/null | head -1 || echo none); torchrun: $(command -v torchrun || echo none)"
log "# NVRTC: $(ls /usr/local/cuda/lib64/libnvrtc.so.* 2>/dev/null | head -1)"

if [ "$PART" = all ] || [ "$PART" = runtime ]; then
# 1. Test binaries (CPU layers and NVRTC compile checks run here too; a GPU is present).
for t in "$BIN"/tests/*; do
  [ -x "$t" ] || continue
  step "test $(basename "$t")" 300 env MSCCLPP_REQUIRE_NVRTC=1 MSCCLPP_BOOTSTRAP_TIMEOUT_MS=2000 "$t" --test-threads=1
done

# 2. Faults and edges.
step "check wait-timeout" 60 env MSCCLPP_WAIT_TIMEOUT_MS=500 "$BIN/gpu_checks" wait-timeout
step "check nvls-disabled" 30 env MSCCLPP_DISABLE_NVLS=1 "$BIN/gpu_checks" nvls-disabled
step "check no-gpu" 30 env CUDA_VISIBLE_DEVICES= "$BIN/gpu_checks" no-gpu
step "check too-few-gpus" 30 "$BIN/gpu_checks" too-few-gpus
step "check no-nvrtc" 30 env MSCCLPP_NVRTC_PATH=/nonexistent/libnvrtc.so.13 "$BIN/gpu_checks" no-nvrtc
step "check syncer" 60 "$BIN/gpu_checks" syncer
step "check raw-buffer (2 ranks)" 120 run2 "$BIN/gpu_checks" raw-buffer

# 3. Examples under mpirun.
step "mpirun ping_pong" 120 run2 "$BIN/ping_pong"
step "mpirun memory_channel_bw" 300 run2 "$BIN/memory_channel_bw"
step "mpirun port_channel" 180 run2 "$BIN/port_channel"
step "mpirun port_channel (signal by copy)" 180 env MSCCLPP_PROXY_SIGNAL=copy MSCCLPP_RESULT_PREFIX=copy_signal_ \
  MPIRUN_CMD="${MPIRUN_CMD:+$MPIRUN_CMD -x MSCCLPP_PROXY_SIGNAL -x MSCCLPP_RESULT_PREFIX}" bash -c 'run2 "$@"' _ "$BIN/port_channel"
# Each rank claims another host: port channels go over the Ethernet transport.
step "mpirun port_channel (Ethernet: MSCCLPP_HOSTID per rank)" 240 env MSCCLPP_RESULT_PREFIX=ethernet_ \
  MPIRUN_CMD="${MPIRUN_CMD:+$MPIRUN_CMD -x MSCCLPP_RESULT_PREFIX}" bash -c 'run2 bash -c '"'"'MSCCLPP_HOSTID=host-$OMPI_COMM_WORLD_RANK exec "$0" "$@"'"'"' "$@"' _ "$BIN/port_channel"
step "mpirun custom_kernel" 120 run2 "$BIN/custom_kernel" "$BIN/custom_kernel.cu"

# 4. Examples under torchrun --no-python.
if [ ${#TORCHRUN[@]} -gt 0 ]; then
  export MSCCLPP_RESULT_PREFIX=torchrun_
  step "torchrun ping_pong" 120 "${TORCHRUN[@]}" "$BIN/ping_pong"
  step "torchrun memory_channel_bw (to 256 MiB)" 300 "${TORCHRUN[@]}" "$BIN/memory_channel_bw" 268435456
  step "torchrun port_channel" 180 "${TORCHRUN[@]}" "$BIN/port_channel"
  step "torchrun custom_kernel" 120 "${TORCHRUN[@]}" "$BIN/custom_kernel"
else
  fail=$((fail + 1))
  failed+=("torchrun missing")
  log "--- FAIL torchrun not found"
fi
fi

# 5. The executor suite.
if [ "$PART" != runtime ]; then
  step "executor suite ($PART)" 7200 bash "$(dirname "$0")/gpu-suite-executor.sh" "$BIN" "$LOGDIR" "$PART"
fi

{
  echo "# GPU suite summary"
  echo
  echo "- passed: $pass, failed: $fail"
  [ $fail -gt 0 ] && echo "- failed steps: ${failed[*]}"
  echo
  echo "| result | value | unit |"
  echo "| --- | ---: | --- |"
  grep '^RESULT ' "$LOG" | awk '{print "| " $2 " | " $3 " | " $4 " |"}'
} >"$SUMMARY"
log ""
log "=== passed $pass, failed $fail ${failed[*]:-}"
cat "$SUMMARY"
[ $fail -eq 0 ]
