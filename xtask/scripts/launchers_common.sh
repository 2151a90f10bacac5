# Shared by the `launchers` steps: $B is the folder of the collected binaries; one GPU means shared-GPU mode.
set -u
B="$1"; shift
T=$(mktemp -d)
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -lt 2 ]; then export MSCCLPP_SHARED_GPU=1 CUDA_VISIBLE_DEVICES=0; fi
# No launcher variables of the suite's own leak into a launch that must find its own.
unset MSCCLPP_RANK MSCCLPP_WORLD_SIZE MSCCLPP_LOCAL_RANK MSCCLPP_MASTER_ADDR MSCCLPP_MASTER_PORT MSCCLPP_JOB_ID \
  RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT PMI_RANK PMI_SIZE
# Fail with a line saying why the launch could not run at all (never a silent pass).
cannot() { echo "SKIP launchers $1: $2"; exit 3; }
