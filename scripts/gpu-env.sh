# Environment shared by the GPU scripts (sourced, not run): never NVLink multicast on shared hosts, the kernel
# cache, bounded waits, the host's NVRTC, Open MPI as root, and the mpirun command line ($MPI, one rank per GPU:
# MSCCLPP_SUITE_RANKS, default 2; --bind-to none so each rank's host-side checking can use every core).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export MSCCLPP_CACHE_DIR="${MSCCLPP_CACHE_DIR:-/tmp/mscclpp-cache}"
export MSCCLPP_BOOTSTRAP_TIMEOUT_MS="${MSCCLPP_BOOTSTRAP_TIMEOUT_MS:-30000}"
export MSCCLPP_WAIT_TIMEOUT_MS="${MSCCLPP_WAIT_TIMEOUT_MS:-10000}"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libnvrtc.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RANKS="${MSCCLPP_SUITE_RANKS:-2}"
MPI="mpirun --allow-run-as-root --bind-to none -np $RANKS -x NCCL_NVLS_ENABLE -x MSCCLPP_CACHE_DIR -x MSCCLPP_WAIT_TIMEOUT_MS -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS -x LD_LIBRARY_PATH"
