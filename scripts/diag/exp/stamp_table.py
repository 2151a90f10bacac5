#!/usr/bin/env python3
"""The markdown table of interp_cost's stamped `allreduce_staged` runs (stamp_hand.py's HANDSTAMP lines and
stamp_ops.py's STAMP lines, blocks 0 and the last): the median SM cycles of each phase over every print of the
logs DIR/stamps-[VARIANT-]SIZE-*.log, per variant of the interpreter; waits are left out (ranks sharing a GPU wait
for each other's time slices).

usage: stamp_table.py DIR [VARIANT...]   (no variant: DIR/stamps-SIZE-*.log)"""
import glob, re, statistics, sys

PHASES = ["stage", "put", "barrier", "signal", "wait", "barrier", "res", "barrier", "signal", "wait"]


def prints(files, pattern, skip_ops):
    out = []
    for f in files:
        for line in open(f):
            m = re.match(pattern, line)
            if m:
                rest = [int(x) for x in m.group(2).split()]
                out.append([int(m.group(1))] + (rest[:9] if skip_ops else rest))
    return out


def row(name, runs):
    med = [statistics.median(r[k] for r in runs) for k in range(len(PHASES))]
    cells = ["–" if PHASES[k] == "wait" else "%.0f" % v for k, v in enumerate(med)]
    total = sum(v for k, v in enumerate(med) if PHASES[k] != "wait")
    return "| %s | %d | %s | %.0f |" % (name, len(runs), " | ".join(cells), total)


d, variants = sys.argv[1], sys.argv[2:] or [""]
for size in ["1M", "4M"]:
    print("| %s | prints | %s | sum without waits |" % (size, " | ".join(PHASES)))
    print("| --- |" + " ---: |" * (len(PHASES) + 2))
    for v in variants:
        files = sorted(glob.glob("%s/stamps-%s%s-*.log" % (d, v + "-" if v else "", size)))
        hand = prints(files, r"HANDSTAMP block \d+: stage (\d+) \| (.*) cyc", False)
        interp = prints(files, r"STAMP block \d+ ops 9: stage (\d+) \| (.*) cyc", True)
        if not hand or not interp:
            sys.exit("no stamps in %s" % files)
        print(row("hand-written" + (" (%s run)" % v if v else ""), hand))
        print(row("interpreter" + (" `%s`" % v if v else ""), interp))
    print()
