#!/usr/bin/env bash
# The executor part of the GPU suite, on a host with 2 GPUs (NVLink multicast off): every default algorithm
# over dtypes x sizes x {in place, out of place} x {eager, graph of 10 launches replayed 10 times}, every
# 2-rank corpus plan (switch plans through the emulation), the seed AllGather, examples/allreduce under mpirun,
# one run under torchrun, the bad-input checks, and NCCL figures side by side.
#
#   scripts/gpu-suite-executor.sh [BIN_DIR] [LOG_DIR] [PART]
#
# BIN_DIR holds `mscclpp` and `allreduce` (release, stripped; see "Build"); LOG_DIR receives
# executor-suite.log. PART: all (default: every part but extra; longer than one 10-minute device call), defaults
# (= matrix-a + matrix-b), matrix-a, matrix-b, gib (the 1 GiB cases), corpus, final (figures, NCCL, launchers, bad
# input), extra. Each fits one 10-minute device call.
#
# Build (on a machine with Rust):
#   export CARGO_TARGET_DIR=/work/targets/exec
#   cargo build --release -p mscclpp-cli --bin mscclpp && cargo build --release -p mscclpp --example allreduce
#   mkdir -p .gpu-exec && cp $CARGO_TARGET_DIR/release/mscclpp $CARGO_TARGET_DIR/release/examples/allreduce .gpu-exec/
#   strip .gpu-exec/mscclpp .gpu-exec/allreduce   (.gpu-exec is listed in .git/info/exclude; carry it)
set -uo pipefail

BIN="${1:-.gpu-exec}"
LOGDIR="${2:-${OUT:-results}}"
PART="${3:-all}"
mkdir -p "$LOGDIR"
LOG="$LOGDIR/executor-suite.log"
: >"$LOG"

# Never use NVLink multicast on shared hosts; ranks from MSCCLPP_SUITE_RANKS (default 2); $MPI.
source "$(dirname "$0")/gpu-env.sh"

pass=0
fail=0
failed=()
log() { echo "$*" | tee -a "$LOG"; }

# step NAME TIMEOUT COMMAND...: passes when the command exits 0.
step() {
  local name="$1" limit="$2"
  shift 2
  log ""
  log "=== $name: $*"
  local t0=$(date +%s%N)
  timeout "$limit" "$@" >>"$LOG" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 )); local dt="$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  if [ $rc -eq 0 ]; then pass=$((pass + 1)); log "--- PASS $name (${dt}s)"; else
    fail=$((fail + 1)); failed+=("$name"); log "--- FAIL $name (rc=$rc, ${dt}s)"; fi
}

# expect_fail NAME TIMEOUT PATTERN COMMAND...: passes when the command fails and its output matches PATTERN.
expect_fail() {
  local name="$1" limit="$2" pat="$3"
  shift 3
  log ""
  log "=== $name (must fail with /$pat/): $*"
  local out
  out=$(timeout "$limit" "$@" 2>&1)
  local rc=$?
  echo "$out" | tail -n 8 >>"$LOG"
  if [ $rc -ne 0 ] && echo "$out" | grep -Eq "$pat"; then pass=$((pass + 1)); log "--- PASS $name (rc=$rc)"; else
    fail=$((fail + 1)); failed+=("$name"); log "--- FAIL $name (rc=$rc)"; fi
}

log "# executor GPU suite $(date -u +%FT%TZ) commit=$(cat "$BIN/COMMIT" 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1 | tee -a "$LOG"
which mpirun torchrun 2>&1 | tee -a "$LOG"

# Compile the interpreter once (both ranks then load the cubin from the cache).
step "warm-up: compile the interpreter" 300 $MPI "$BIN/mscclpp" test allreduce_twoshot --size 1K --iters 1 --no-timing

SIZES="1K,4K+16,1M,1M+48,64M"
# The correctness matrix: every default algorithm x {f16, bf16, f32, i32} x SIZES (where the plan admits the
# size) x {in place, out of place} x {eager, a graph of 10 launches replayed 10 times}; instances and threads
# per block chosen by the registry per size. Every launch before the timing, and one after it, is checked bit
# for bit against the CPU reference (integers) or within the dtype's tolerance. Split in two halves so each fits
# one 10-minute device call.
matrix() {
  for a in "$@"; do
    step "default $a" 600 $MPI "$BIN/mscclpp" test "$a" --size "$SIZES" --dtype f16,bf16,f32,i32 \
      --both-placements --eager-and-graph --iters 10 --runs 10
  done
}
if [ "$PART" = all ] || [ "$PART" = defaults ] || [ "$PART" = matrix-a ]; then
  matrix allreduce_oneshot_ll allreduce_twoshot allgather_allpairs allgather_allpairs_ll
fi
if [ "$PART" = all ] || [ "$PART" = defaults ] || [ "$PART" = matrix-b ]; then
  matrix reducescatter reducescatter_ll alltoall broadcast
  step "default seed_allgather" 300 $MPI "$BIN/mscclpp" test seed_allgather --size "$SIZES" --dtype f16,i32 \
    --in-place --eager-and-graph --iters 10 --runs 10
fi

if [ "$PART" = all ] || [ "$PART" = gib ]; then
  # 1 GiB: every default whose range admits it, every dtype, both placements, eager and graph; one checked
  # launch per mode (each check recomputes 1 GiB on the host), timing from 3 runs of one launch.
  # MSCCLPP_SUITE_GIB narrows the list (to split this part over several device calls).
  for a in ${MSCCLPP_SUITE_GIB:-allreduce_twoshot allgather_allpairs reducescatter alltoall broadcast}; do
    step "1 GiB $a" 300 $MPI "$BIN/mscclpp" test "$a" --size 1G --dtype f16,bf16,f32,i32 --both-placements \
      --eager-and-graph --iters 1 --runs 3
  done
fi

if [ "$PART" = all ] || [ "$PART" = corpus ]; then
  for f in tests/corpus/mscclpp/generated/*.json tests/corpus/mscclpp/upstream/*.json; do
    case "$f" in *unit__* | *multi_node__*) continue ;; esac
    n=$(python3 -c "import json,sys; p=json.load(open('$f')); print(len(p['gpus']))" 2>/dev/null || echo 0)
    [ "$n" = "$RANKS" ] || continue
    step "corpus $(basename "$f")" 120 $MPI "$BIN/mscclpp" test "$f" --size 1M,64K --dtype f16,f32 --eager-and-graph
  done
fi

if [ "$PART" = all ] || [ "$PART" = final ]; then
  # The figures (medians of 30 timed runs, CUDA graphs of 10 launches, registry-chosen instances and threads),
  # NCCL in the same call, the launchers, and the bad-input checks.
  step "perf allreduce small (tuned)" 120 $MPI "$BIN/mscclpp" test allreduce_oneshot_ll --size 1K,4K,16K,64K \
    --dtype f16 --in-place --graph --iters 10 --runs 30
  step "perf allreduce large (tuned)" 180 $MPI "$BIN/mscclpp" test allreduce_twoshot --size 1M,64M,256M \
    --dtype f16 --in-place --graph --iters 10 --runs 10
  step "NCCL allreduce (torch.distributed)" 200 torchrun --nproc-per-node "$RANKS" scripts/gpu-suite-executor-nccl.py
  step "torchrun allreduce_twoshot" 120 torchrun --no-python --nproc-per-node "$RANKS" "$BIN/mscclpp" test \
    allreduce_twoshot --size 1M,64M --dtype f16 --graph
  for s in 1024 65536 268435456; do
    step "example allreduce $s" 120 $MPI "$BIN/allreduce" "$s"
  done
  expect_fail "plan for another world size" 60 "is for 4 ranks" $MPI "$BIN/mscclpp" test \
    tests/corpus/mscclpp/generated/single_node__allreduce__n4.json --size 1M
  expect_fail "size outside the plan's range" 60 "outside the plan.s range" $MPI "$BIN/mscclpp" test \
    allreduce_oneshot_ll --size 64M --in-place --no-timing
  expect_fail "a size the chunk math cannot split" 60 "cannot (be )?split|not a multiple" $MPI "$BIN/mscclpp" test \
    allreduce_twoshot --size 1K+2 --no-timing
  expect_fail "more thread blocks than multiprocessors" 60 "multiprocessors" $MPI "$BIN/mscclpp" test \
    allreduce_twoshot --instances 200 --size 200K --no-timing
  expect_fail "a rank that never calls" 90 "did not arrive|missing|timed out" env MSCCLPP_BOOTSTRAP_TIMEOUT_MS=5000 \
    mpirun --allow-run-as-root -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS \
    -np $((RANKS - 1)) "$BIN/mscclpp" test allreduce_twoshot --size 1M : -np 1 sleep 20
fi

if [ "$PART" = extra ]; then
  # Instance sweeps behind the registry's tables (medians of 10 timed runs).
  for i in 1 4 8; do
    step "perf oneshot_ll x$i" 120 $MPI "$BIN/mscclpp" test allreduce_oneshot_ll --instances "$i" \
      --size 1K,4K,16K,64K --dtype f16 --in-place --graph --iters 10 --runs 10
  done
  for i in 16 32 64; do
    step "perf twoshot x$i" 180 $MPI "$BIN/mscclpp" test allreduce_twoshot --instances "$i" --size 1M,64M,256M \
      --dtype f16 --in-place --graph --iters 10 --runs 10
  done
  step "example allreduce 256 MiB twoshot x32" 120 $MPI "$BIN/allreduce" 268435456 allreduce_twoshot 32
fi

log ""
log "# summary: $pass passed, $fail failed"
for f in "${failed[@]}"; do log "#   FAILED: $f"; done
grep -E "^(PASS|FAIL|SKIP) |^allreduce plan=|^NCCL " "$LOG" >"$LOGDIR/executor-figures.txt" 2>/dev/null || true
[ "$fail" -eq 0 ]
