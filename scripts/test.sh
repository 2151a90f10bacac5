#!/usr/bin/env bash
# The project's test command (README, "Quick start"): every CPU layer, the trybuild suite and the NVRTC
# compile checks of the device code. Needs no GPU. Installs NVRTC 13.0 from PyPI into .venv-cuda on first use.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv-cuda/bin/python ]; then
  python3 -m venv .venv-cuda
  .venv-cuda/bin/pip install -q "nvidia-cuda-nvrtc==13.0.*"
fi
# --- NCCL-ABI library (owner: mscclpp-nccl): the real nccl.h and libnccl.so.2 of NCCL 2.28.9, for the ABI check
# --- (mscclpp-nccl/tests/abi.rs compiles tests/c/abi_check.c with `cc` against them; no GPU needed).
if ! ls .venv-cuda/lib/python3*/site-packages/nvidia/nccl/include/nccl.h >/dev/null 2>&1; then
  .venv-cuda/bin/pip install -q "nvidia-nccl-cu13==2.28.9"
fi
NV="$(.venv-cuda/bin/python -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))')/nvidia/cu13"
export LD_LIBRARY_PATH="$NV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The device-code compile tests fail (instead of skipping) when NVRTC cannot be loaded, and the build fails when
# it cannot embed the kernels (mscclpp-sys/build.rs compiles them ahead of time with this NVRTC).
export MSCCLPP_REQUIRE_NVRTC=1
export MSCCLPP_REQUIRE_EMBEDDED=1
export NCCL_NVLS_ENABLE=0

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The API docs build without a broken or private intra-doc link.
RUSTDOCFLAGS="-D warnings" cargo doc -q --workspace --no-deps
cargo test --workspace

# --- Python module (owner: python): the abi3 wheel built by maturin, installed into .venv-cuda, and its pytest
# --- suite without the `gpu` and `torch` tests: torch cannot be installed here (PyPI's torch imports only with
# --- several GB of CUDA wheels beside it, and the CPU-only index is not reachable), so those run in the GPU
# --- suite's `python` part. The count of passed tests is checked, so a suite that silently shrinks fails.
.venv-cuda/bin/pip install -q "maturin>=1.9.4,<2" "pytest>=7"
rm -f target/wheels/mscclpp-*.whl
timeout 1200 .venv-cuda/bin/maturin build -q -m mscclpp-python/Cargo.toml -o target/wheels
.venv-cuda/bin/pip install -q --force-reinstall --no-deps target/wheels/mscclpp-*.whl
PYTEST_LOG=target/pytest-python.log
# From the repository root, so the installed wheel is imported (not the source folder mscclpp-python/mscclpp).
timeout 600 .venv-cuda/bin/python -m pytest -q -rs -p no:cacheprovider -m "not gpu and not torch" mscclpp-python/tests \
  | tee "$PYTEST_LOG"
PASSED=$(grep -Eo '[0-9]+ passed' "$PYTEST_LOG" | tail -1 | grep -Eo '[0-9]+' || echo 0)
if [ "$PASSED" -lt 23 ] || grep -Eq '[0-9]+ (failed|skipped|error)' "$PYTEST_LOG"; then
  echo "python tests: expected at least 23 passed and none failed or skipped (got: $(tail -1 "$PYTEST_LOG"))" >&2
  exit 1
fi

# --- Fuzzing (owner: reliability): each target for a bounded time (stable toolchain, debug build from the test
# --- run above). A crash exits non-zero and leaves the input in target/fuzz-crashes/; results/2026-11-24-6d56eb0-1xH100/reliability.md
# --- says how to turn it into a regression input (mscclpp-fuzz/regressions/<target>/).
for t in plan registry verify bootstrap; do
  cargo run -q -p mscclpp-fuzz -- "$t" --seconds 45 --max-len 16384
done

# --- GPU runtime features (owner: runtime). The default build needs neither MPI nor libibverbs; these keep the
# --- `mpi` (rsmpi: needs mpicc + libclang, installed by .ci/run) and `ib` (libibverbs loaded at run time)
# --- features compiling, lint-clean and tested.
cargo clippy -p mscclpp-sys -p mscclpp-exec --features mscclpp-exec/mpi,mscclpp-exec/ib --all-targets -- -D warnings
cargo test -p mscclpp-sys -p mscclpp-exec --features mscclpp-exec/mpi,mscclpp-exec/ib
