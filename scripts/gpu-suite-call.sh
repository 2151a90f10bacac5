#!/usr/bin/env bash
# Several parts of the GPU suite in one device call, within a deadline, with every log packed into one file.
#
#   scripts/gpu-suite-call.sh BIN_DIR SECONDS PART [PART ...]
#
# Runs each PART (runtime, matrix-a, matrix-b, gib, corpus, final, extra; see scripts/gpu-suite.sh) in order, each
# limited to what is left of SECONDS, its logs in $LOGS/PART (default /tmp/gpu-logs). After every part the whole
# log folder is packed into $OUT/gpu-logs.tgz, so a call cut short still returns every log written so far (the
# device host returns at most 8 files per call: several parts' separate logs would exceed it). Prints one line per
# part and per step verdict. A part that would get under 30 s is not started. Exits non-zero if any part failed or
# was not run.
#
# Example (2xH200, every part but extra, about 12 minutes: two calls):
#   scripts/gpu-suite-call.sh .gpu-bin 560 runtime matrix-a matrix-b final corpus
#   scripts/gpu-suite-call.sh .gpu-bin 560 gib
set -uo pipefail

BIN="${1:?usage: gpu-suite-call.sh BIN_DIR SECONDS PART...}"
BUDGET="${2:?usage: gpu-suite-call.sh BIN_DIR SECONDS PART...}"
shift 2
LOGS="${LOGS:-/tmp/gpu-logs}"
DEST="${OUT:-.}"
HERE="$(dirname "$0")"
mkdir -p "$LOGS" "$DEST"
t0=$(date +%s)
rc=0
pack() { tar czf "$DEST/gpu-logs.tgz" -C "$LOGS" . ; }
for part in "$@"; do
  left=$((BUDGET - ($(date +%s) - t0) - 10))
  if [ "$left" -lt 30 ]; then
    echo "part $part: not started (${left}s left)"
    rc=1
    continue
  fi
  s=$(date +%s)
  if [ "$part" = runtime ]; then
    cmd=(bash "$HERE/gpu-suite.sh" "$BIN" "$LOGS/$part" runtime)
  else
    cmd=(bash "$HERE/gpu-suite-executor.sh" "$BIN" "$LOGS/$part" "$part")
  fi
  # The part runs in a session of its own: at the deadline every process of it is stopped, also the ones the
  # suite's per-step `timeout` put into process groups of their own (mpirun and its ranks), so nothing keeps
  # running into the next part or writing into its log.
  setsid "${cmd[@]}" >"$LOGS/$part.out" 2>&1 &
  pid=$!
  r=
  while kill -0 "$pid" 2>/dev/null; do
    if [ $(($(date +%s) - s)) -ge "$left" ]; then
      pkill -TERM -s "$pid" 2>/dev/null
      sleep 3
      pkill -KILL -s "$pid" 2>/dev/null
      r=124
      break
    fi
    sleep 1
  done
  wait "$pid" 2>/dev/null
  r="${r:-$?}"
  pkill -KILL -s "$pid" 2>/dev/null # anything left behind by a part that ended
  [ "$r" -ne 0 ] && rc=1
  echo "part $part: rc=$r $(($(date +%s) - s))s$([ "$r" -eq 124 ] && echo ' (cut by the deadline)')"
  grep -E '^--- |^=== passed|summary:|FAILED' "$LOGS/$part.out" | sed 's/^/  /'
  pack
done
exit "$rc"
