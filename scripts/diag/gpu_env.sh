# Sourced by the diagnosis scripts on the GPU host: multicast off everywhere, and the CUDA toolkit's NVRTC on the
# loader path when the host has one (the library compiles device code with it).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# This folder (the diagnosis scripts).
diag=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libnvrtc.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
done
# A session script's start: `session BIN OUT` sets b (the binaries' folder) and o (the output folder, made), both
# absolute, and writes the GPUs into $o/gpus.txt, the CLI's version into $o/version.txt and the binaries' manifest
# (the commit they were built from) into $o/MANIFEST.txt.
session() {
  b=$(cd "$1" && pwd) o=$2
  mkdir -p "$o"
  o=$(cd "$o" && pwd)
  nvidia-smi -L > "$o/gpus.txt" 2>&1
  "$b/mscclpp" --version > "$o/version.txt" 2>&1
  [ -e "$b/MANIFEST" ] && cp "$b/MANIFEST" "$o/MANIFEST.txt"
}
# `start PACK OUT ARCHIVE` (a session script's first step): `session` on the binaries unpacked from PACK into OUT,
# A=ARCHIVE (what `pack` writes), then `mpi_jobs`; prints the GPUs.
start() {
  session "$(unpack "$1")" "$2"
  A=$3
  mpi_jobs
  cat "$o/gpus.txt"
}
# `mpi_jobs` (after `session`): the environment of the mpirun jobs (timeouts, NCCL from torch's wheel) and
# $o/mpi, `mpi N COMMAND...` with it (a script, so `timeout` can run it; $mpi names it); `run NAME LIMIT COMMAND...`
# runs COMMAND into $o/NAME.log within LIMIT seconds and prints its exit status and seconds, or skips it when it
# would end more than $LIMIT seconds (default 560) after `mpi_jobs`.
mpi_jobs() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export MSCCLPP_WAIT_TIMEOUT_MS=20000 MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000
  MSCCLPP_NCCL_LIB_PATH=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  export MSCCLPP_NCCL_LIB_PATH
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
}
# `shared_jobs` (after `session`): two ranks on GPU 0 (`MSCCLPP_SHARED_GPU=1`; cycles and correctness only) and
# $o/shared, `shared COMMAND...` under mpirun with the variables of kernel experiments passed on ($shared names it).
shared_jobs() {
  export MSCCLPP_SHARED_GPU=1 CUDA_VISIBLE_DEVICES=0
  cat > "$o/shared" <<'EOS'
#!/usr/bin/env bash
exec mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x MSCCLPP_CACHE_DIR -x MSCCLPP_WAIT_TIMEOUT_MS \
  -x MSCCLPP_SHARED_GPU -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS -x LD_LIBRARY_PATH -x MSCCLPP_INTERPRETER_SOURCE \
  -x MSCCLPP_FIXED_KERNELS -x CUDA_VISIBLE_DEVICES -x INTERP_COST_HAND_SOURCE -x MSCCLPP_TRACE_STARTUP "$@"
EOS
  chmod +x "$o/shared"
  shared=$o/shared
}
run() {
  local name=$1 limit=$2 t0
  t0=$(date +%s)
  shift 2
  if [ $((t0 - t_start + limit)) -gt "${LIMIT:-560}" ]; then echo "$name skipped (deadline)"; return; fi
  timeout -k 5 "$limit" "$@" > "$o/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $(($(date +%s) - t0)) s"
}
# `unpack PACK`: the binaries' folder from a tar.xz of `xtask gpu collect`'s folder (carried packed: unpacked it is
# larger than a call may carry), unpacked once into /tmp/mscclpp-bin; prints that folder.
unpack() {
  local dir=/tmp/mscclpp-bin
  [ -x "$dir/mscclpp" ] || { mkdir -p "$dir" && python3 -c \
    "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$1" "$dir"; }
  echo "$dir"
}
# `pack ARCHIVE`: the logs, tables, figures and suite folders of $o into one archive (a call returns at most 8
# files from $OUT; the rest are lost).
pack() {
  (cd "$o" && tar czf "$1" $(ls -d *.log *.csv *.png *.json *.txt suite-* 2>/dev/null))
}
# `suite_run PART DEADLINE [GPUS]` (after `mpi_jobs`): the GPU suite's PART at $RANKS ranks (default 4) within
# DEADLINE seconds into $o/suite-PART (its log $o/suite-PART.log), on GPUS (CUDA_VISIBLE_DEVICES) when given;
# prints nothing, so two can run side by side (`&`, then `wait`).
suite_run() {
  local part=$1 s=$2
  (
    [ -n "${3:-}" ] && export CUDA_VISIBLE_DEVICES=$3
    timeout -k 5 $((s + 20)) "$b/xtask" gpu run --bin "$b" --ranks "${RANKS:-4}" --deadline-s "$s" --part "$part" \
      --out "$o/suite-$part" > "$o/suite-$part.log" 2>&1
  )
}
# `suite PART DEADLINE` (after `mpi_jobs`): `suite_run PART DEADLINE`, its pass/fail lines printed, then everything
# packed into $A.
suite() {
  suite_run "$1" "$2"
  grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-$1/summary.md" | head -12
  pack "$A"
}
# `remaining MARGIN` (after `mpi_jobs`): the seconds left before $LIMIT (default 560) since `mpi_jobs`, less MARGIN.
remaining() {
  echo $((${LIMIT:-560} - ($(date +%s) - t_start) - $1))
}
# `bench_sizes NAME LIMIT COLLECTIVE [ARGS...]` (after `mpi_jobs`): `mscclpp bench COLLECTIVE ARGS --sizes 1K:1G
# --nccl` at $RANKS ranks (default 4) within LIMIT seconds into $o/NAME.log, .csv and .png (plans cached in
# $o/cache); a line per size printed (bytes, ours µs, NCCL µs, speed-up, program), then everything packed into $A.
bench_sizes() {
  local name=$1 limit=$2
  shift 2
  MSCCLPP_CACHE_DIR=$o/cache run "$name" "$limit" "$mpi" "${RANKS:-4}" "$b/mscclpp" bench "$@" --sizes 1K:1G --nccl \
    --csv "$o/$name.csv" --plot "$o/$name.png"
  grep -E "^ *[0-9]" "$o/$name.log" | awk '{print $1, $4, $9, $14, $16}'
  pack "$A"
}
# `torch_init_runs N` (after `mpi_jobs`): `torch_init.py` at 2 ranks N times each way (NCCL, then the library with
# MSCCLPP_TRACE_STARTUP=1) into $o/init-nccl-I.log and $o/init-ours-I.log, their result lines printed, then
# everything packed into $A.
torch_init_runs() {
  local i
  for i in $(seq "$1"); do
    run init-nccl-$i 40 torchrun --nproc-per-node 2 "$diag/torch_init.py" --label nccl
    LD_PRELOAD=$b/nccl/libmscclpp_nccl.so MSCCLPP_TRACE_STARTUP=1 run init-ours-$i 40 \
      torchrun --nproc-per-node 2 "$diag/torch_init.py" --label ours
    grep -h "^init" "$o/init-nccl-$i.log" "$o/init-ours-$i.log"
  done
  pack "$A"
}
# `interp_allreduce` (after `mpi_jobs`): `interp_cost` at 2 ranks of the LL all-reduces (1 KiB-1 MiB), of the
# Simple two-shot at 128 x 256 and of the Simple programs the tables run, `allreduce_staged` and `allreduce_rsag`,
# with their tuned grids (1-64 MiB) into $o/interp-PROGRAM.log, their result lines printed.
interp_allreduce() {
  local p
  for p in allreduce_oneshot_ll allreduce_twoshot_ll; do run "interp-$p" 40 "$mpi" 2 "$b/interp_cost" 1K:1M:x4 "$p"; done
  run interp-allreduce_twoshot 50 "$mpi" 2 "$b/interp_cost" 1M:64M:x4 allreduce_twoshot 128x256
  for p in allreduce_staged allreduce_rsag; do run "interp-$p" 50 "$mpi" 2 "$b/interp_cost" 1M:64M:x4 "$p"; done
  grep -h "^PASS\|FAIL\|rror" "$o"/interp-*.log | head -40
}
