# Two "hosts": network namespaces joined by a veth pair (10.231.0.1 <-> 10.231.0.2), made by netns/veth.py
# (pyroute2, so no `ip` is needed). Rank 0 in one, rank 1 in the other, each with its own host id and its
# namespace's interface, so the bootstrap and the Ethernet transport of the port channels cross the veth: a
# checked all-reduce over port channels, the two-node hierarchical all-reduce (checked), then port_channel checks
# every slice and measures the bandwidth.
# Traffic stays between the two namespaces; both are deleted on exit, whatever happens.
[ "$(id -u)" -eq 0 ] || cannot netns "needs root to create network namespaces; run the suite as root"
WHL=$(ls "$B"/netns/pyroute2-*.whl 2>/dev/null | head -n 1)
[ -n "$WHL" ] || cannot netns "no pyroute2 wheel in $B/netns (cargo xtask gpu collect downloads it)"
export PYTHONPATH="$WHL${PYTHONPATH:+:$PYTHONPATH}"
V="python3 $B/netns/veth.py"
TAG=$$
cleanup() { $V down "$TAG"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
$V up "$TAG" 2>"$T/err" || cannot netns "creating the namespaces failed: $(tail -n 3 "$T/err" | tr '\n' ' ')"
export MSCCLPP_WORLD_SIZE=2 MSCCLPP_MASTER_ADDR=10.231.0.1 MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000
pair() { # name limit program args...
  local name=$1 limit=$2; shift 2
  export MSCCLPP_MASTER_PORT=$((20000 + RANDOM % 20000))
  MSCCLPP_RANK=0 MSCCLPP_LOCAL_RANK=0 MSCCLPP_HOSTID=netns-a MSCCLPP_SOCKET_IFNAME="va-$TAG" \
    timeout "$limit" $V exec "$TAG" a "$@" >"$T/a.log" 2>&1 &
  local pa=$!
  MSCCLPP_RANK=1 MSCCLPP_LOCAL_RANK=1 MSCCLPP_HOSTID=netns-b MSCCLPP_SOCKET_IFNAME="vb-$TAG" \
    timeout "$limit" $V exec "$TAG" b "$@" >"$T/b.log" 2>&1 &
  local pb=$!
  wait $pa; local a=$?; wait $pb; local c=$?
  cat "$T/a.log"; tail -n 5 "$T/b.log"
  echo "launchers: netns $name exit=$a,$c"
  [ $a -eq 0 ] && [ $c -eq 0 ]
}
# allreduce_port is declared for one node: its one-node plan (--ranks-per-node 2), whose port channels cross the veth.
pair "allreduce_port (checked)" 120 "$B/mscclpp" test allreduce_port --size 1M --iters 20 --ranks-per-node 2 \
  || { echo "launchers: FAIL the all-reduce across the namespaces"; exit 1; }
# A program declared for two nodes (nodes = 2): ranks per node come from the ranks' host ids (one per namespace),
# so `mscclpp test` builds the two-node plan without being told.
pair "allreduce_two_nodes (two nodes, checked)" 120 "$B/mscclpp" test allreduce_two_nodes --size 1M --iters 20 \
  || { echo "launchers: FAIL the two-node all-reduce across the namespaces"; exit 1; }
pair "port_channel" 300 env MSCCLPP_RESULT_PREFIX=netns_ "$B/port_channel" \
  || { echo "launchers: FAIL port_channel across the namespaces"; exit 1; }
echo "launchers: netns traffic on rank 0's end of the veth: $($V stats "$TAG")"
grep -q "^RESULT netns_" "$T/a.log" || { echo "launchers: FAIL no bandwidth figure"; exit 1; }
echo "launchers: netns PASS"
