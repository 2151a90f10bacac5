# Sourced by the diagnosis scripts on the GPU host: multicast off everywhere, and the CUDA toolkit's NVRTC on the
# loader path when the host has one (the library compiles device code with it).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libnvrtc.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
done
# A session script's start: `session BIN OUT` sets b (the binaries' folder) and o (the output folder, made), both
# absolute, and writes the GPUs into $o/gpus.txt.
session() {
  b=$(cd "$1" && pwd) o=$2
  mkdir -p "$o"
  o=$(cd "$o" && pwd)
  nvidia-smi -L > "$o/gpus.txt" 2>&1
}
