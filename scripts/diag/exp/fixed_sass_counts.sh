#!/usr/bin/env bash
# For every program of the embedded header: its first entry point's SASS instructions and its global/generic loads
# and stores, compiled from SOURCE and from the same source with `kLocsFixed` forced false (reference locations read
# from the records), one line per program: HASH ENTRY new: INSTR LOADS STORES old: INSTR LOADS STORES. Environment
# as nvrtc_sass.py (LD_LIBRARY_PATH with libnvrtc, NVDISASM_BIN).
# Usage: scripts/diag/exp/fixed_sass_counts.sh [SOURCE]   (default: mscclpp-sys/cuda/execution_kernel.cu)
set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
src=${1:-$root/mscclpp-sys/cuda/execution_kernel.cu}
header=$root/mscclpp-sys/cuda/include/mscclpp/interp_fixed.hpp
work=$(mktemp -d)
sed 's/static constexpr bool kLocsFixed = kRefsFixed \&\& LOCS != kLocsDynamic;/static constexpr bool kLocsFixed = false;/' \
  "$src" > "$work/old.cu"
cmp -s "$src" "$work/old.cu" && { echo "$src has no kLocsFixed line to turn off"; exit 1; }
count() { echo "$(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$1") $(grep -cE '(LD|LDG)\.E(\.U8|\.U16)? ' "$1") $(grep -cE '(ST|STG)\.E(\.U8|\.U16)? ' "$1")"; }
for h in $(grep -oE "^struct FixedProgram_[0-9a-f]+" "$header" | sed 's/struct FixedProgram_//'); do
  entry=$(grep -oE "MSCCLPP_FIXED_KERNEL\(mscclpp_fixed_${h}_[a-z0-9]+_ll(16|128)(_t512)?," "$header" | head -1 |
    sed -E "s/.*mscclpp_fixed_${h}_//; s/,$//")
  python3 "$here/nvrtc_sass.py" "$src" "$work/new" --fixed "$h" "$entry" > /dev/null
  python3 "$here/nvrtc_sass.py" "$work/old.cu" "$work/old" --fixed "$h" "$entry" > /dev/null
  echo "$h $entry new: $(count "$work/new.sass") old: $(count "$work/old.sass")"
done
rm -rf "$work"
