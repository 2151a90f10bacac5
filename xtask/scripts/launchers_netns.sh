# Two "hosts": network namespaces joined by a veth pair (10.231.0.1 <-> 10.231.0.2). Rank 0 in one, rank 1 in the
# other, each with its own host id, so the bootstrap and the Ethernet transport of the port channels cross the
# veth interface: port_channel checks every slice and measures the bandwidth. Traffic stays between the two
# namespaces; both are deleted on exit, whatever happens.
[ "$(id -u)" -eq 0 ] || cannot netns "needs root to create network namespaces (ip netns add); run the suite as root"
command -v ip >/dev/null || cannot netns "no \`ip\` (iproute2) on PATH"
NA="mscclpp-a-$$"; NB="mscclpp-b-$$"
cleanup() { ip netns del "$NA" 2>/dev/null; ip netns del "$NB" 2>/dev/null; }
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$NA" 2>"$T/err" && ip netns add "$NB" 2>>"$T/err" || cannot netns "ip netns add failed: $(tr '\n' ' ' <"$T/err")"
ip link add "va$$" netns "$NA" type veth peer name "vb$$" netns "$NB" 2>"$T/err" \
  || cannot netns "creating the veth pair failed: $(tr '\n' ' ' <"$T/err")"
ip netns exec "$NA" true 2>"$T/err" || cannot netns "ip netns exec failed: $(tr '\n' ' ' <"$T/err")"
ip -n "$NA" addr add 10.231.0.1/24 dev "va$$" && ip -n "$NB" addr add 10.231.0.2/24 dev "vb$$" || exit 1
for n in "$NA" "$NB"; do ip -n "$n" link set lo up || exit 1; done
ip -n "$NA" link set "va$$" up && ip -n "$NB" link set "vb$$" up || exit 1
echo "launchers: netns $NA (10.231.0.1) <-> $NB (10.231.0.2) over veth va$$/vb$$"
export MSCCLPP_WORLD_SIZE=2 MSCCLPP_MASTER_ADDR=10.231.0.1 MSCCLPP_MASTER_PORT=$((20000 + RANDOM % 20000))
export MSCCLPP_RESULT_PREFIX=netns_ MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000
ip netns exec "$NA" env MSCCLPP_RANK=0 MSCCLPP_LOCAL_RANK=0 MSCCLPP_HOSTID=netns-a \
  timeout 300 "$B/port_channel" >"$T/a.log" 2>&1 &
PA=$!
ip netns exec "$NB" env MSCCLPP_RANK=1 MSCCLPP_LOCAL_RANK=1 MSCCLPP_HOSTID=netns-b \
  timeout 300 "$B/port_channel" >"$T/b.log" 2>&1 &
PB=$!
wait $PA; A=$?; wait $PB; C=$?
cat "$T/a.log"; tail -n 5 "$T/b.log"
echo "launchers: netns exit=$A,$C; traffic on the veth (rx/tx bytes of rank 0's end): $(ip -n "$NA" -s link show "va$$" | awk 'f{print $1; f=0} /RX:|TX:/{f=1}' | tr '\n' '/')"
[ $A -eq 0 ] && [ $C -eq 0 ] || { echo "launchers: FAIL the job across the namespaces"; exit 1; }
grep -q "^RESULT netns_" "$T/a.log" || { echo "launchers: FAIL no bandwidth figure"; exit 1; }
echo "launchers: netns PASS"
