"""Two network namespaces joined by a veth pair, without `ip`: the `launchers` part's two "hosts" on one machine.
Needs root and pyroute2 (pure Python; importable straight from its wheel on PYTHONPATH).

  veth.py up TAG              namespaces mscclpp-a-TAG (10.231.0.1/24 on va-TAG) and mscclpp-b-TAG (10.231.0.2/24
                              on vb-TAG), loopback and veth up
  veth.py exec TAG a|b CMD... run CMD inside one of them
  veth.py stats TAG           rx/tx bytes of the a end
  veth.py down TAG            delete both namespaces (the veth pair goes with them)

Neither namespace has a route anywhere else: the traffic stays between the two.
"""
import os
import sys

from pyroute2 import IPRoute, NetNS, netns


def names(tag):
    return {
        "a": (f"mscclpp-a-{tag}", f"va-{tag}"[:15], "10.231.0.1"),
        "b": (f"mscclpp-b-{tag}", f"vb-{tag}"[:15], "10.231.0.2"),
    }


def up(tag):
    ns = names(tag)
    for name, _, _ in ns.values():
        netns.create(name)
    with IPRoute() as ipr:
        ipr.link("add", ifname=ns["a"][1], kind="veth", peer=ns["b"][1])
        for name, ifname, _ in ns.values():
            ipr.link("set", index=ipr.link_lookup(ifname=ifname)[0], net_ns_fd=name)
    for name, ifname, addr in ns.values():
        with NetNS(name) as n:
            n.link("set", index=n.link_lookup(ifname="lo")[0], state="up")
            idx = n.link_lookup(ifname=ifname)[0]
            n.addr("add", index=idx, address=addr, prefixlen=24)
            n.link("set", index=idx, state="up")
    print("veth: " + " <-> ".join(f"{n} ({a} on {i})" for n, i, a in ns.values()))


def down(tag):
    for name, _, _ in names(tag).values():
        try:
            netns.remove(name)
        except Exception:  # noqa: BLE001 (already gone)
            pass


def stats(tag):
    name, ifname, _ = names(tag)["a"]
    with NetNS(name) as n:
        link = n.get_links(n.link_lookup(ifname=ifname)[0])[0]
        s = link.get_attr("IFLA_STATS64")
        print(f"rx {s['rx_bytes']} B / tx {s['tx_bytes']} B")


def main():
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] in ("up", "down", "stats"):
        {"up": up, "down": down, "stats": stats}[args[0]](args[1])
    elif len(args) >= 4 and args[0] == "exec" and args[2] in ("a", "b"):
        netns.setns(names(args[1])[args[2]][0])
        os.execvp(args[3], args[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
