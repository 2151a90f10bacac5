#!/usr/bin/env bash
# One GPU, two ranks sharing it (`MSCCLPP_SHARED_GPU=1`: correctness and host time only). WHAT=a: the host time of
# the 1 GiB checks, `mscclpp test reducescatter --size 1G` in f16 (both placements, eager and graph, one checked
# launch per mode and 3 timed runs, as the `gib` part runs it) with the `mscclpp` of BASE (an xz of the binary before
# the pinned host buffer, default .gpu-pack/mscclpp-base.xz) and with PACK's, then the `gib` part's commands for the
# programs it had not reached at two GPUs (reduce-scatter; GIB_PROGRAMS), then the `shared-gpu` part.
# WHAT=b: the suite's PARTS (default "soak-a soak-b") one after another within the call. WHAT=c: the same four 1 GiB
# cases with the `mscclpp` of FILL (an xz, default .gpu-pack/mscclpp-fill.xz: the faster fills), PACK's and BASE's,
# one after another (`gib1-fill.log`, `gib1-pinned.log`, `gib1-base.log`). Everything into ARCHIVE.
# Usage: WHAT=a|b|c [BASE=F] [FILL=F] [GIB_PROGRAMS="..."] [PARTS="..."] LIMIT=S scripts/diag/exp/s34_one.sh PACK OUT ARCHIVE
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../gpu_env.sh"
start "$@"
shared_jobs
export RANKS=2 MSCCLPP_CACHE_DIR=$o/cache
# `unxz XZ EXE`: the binary in XZ written to EXE, executable (the host has python3, not always xz).
unxz() {
  python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "$1" "$2" \
    && chmod +x "$2"
}
# `gib1 NAME EXE`: the four f16 cases of a 1 GiB reduce-scatter with EXE into $o/NAME.log, each result line printed.
gib1() {
  run "$1" 150 "$shared" "$2" test reducescatter --size 1G --dtype f16 --both-placements --eager-and-graph \
    --iters 1 --runs 3
  grep -hE "^(PASS|FAIL)|rror" "$o/$1.log" | cut -c1-150 | sed "s/^/$1: /"
}
case "${WHAT:-a}" in
  a)
    base=/tmp/mscclpp-base
    unxz "${BASE:-.gpu-pack/mscclpp-base.xz}" "$base"
    "$base" --version > "$o/version-base.txt" 2>&1
    gib1 gib1-base-1 "$base"
    gib1 gib1-new-1 "$b/mscclpp"
    for p in ${GIB_PROGRAMS:-reducescatter reducescatter_pipelined reducescatter_rotated}; do
      run "gib-$p" 200 "$shared" "$b/mscclpp" test "$p" --size 1G --dtype f16,bf16,f32,i32 --both-placements \
        --eager-and-graph --iters 1 --runs 3
      echo "gib-$p: $(grep -c '^PASS' "$o/gib-$p.log") PASS, $(grep -c '^FAIL' "$o/gib-$p.log") FAIL, \
$(grep -c 'bit-exact' "$o/gib-$p.log") bit-exact"
    done
    suite_run shared-gpu "$(remaining 10)"
    grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-shared-gpu/summary.md" | head -6
    ;;
  c)
    for v in base fill; do
      xz=${BASE:-.gpu-pack/mscclpp-base.xz}
      [ "$v" = fill ] && xz=${FILL:-.gpu-pack/mscclpp-fill.xz}
      unxz "$xz" "/tmp/m-$v"
    done
    gib1 gib1-fill /tmp/m-fill
    gib1 gib1-pinned "$b/mscclpp"
    gib1 gib1-base /tmp/m-base
    ;;
  b)
    for p in ${PARTS:-soak-a soak-b}; do
      suite_run "$p" "$(remaining 15)"
      grep -hE "passed:|FAIL|NOT RUN|CUT" "$o/suite-$p/summary.md" | head -6
    done
    ;;
esac
rm -rf "$o"/cache
pack "$A"
