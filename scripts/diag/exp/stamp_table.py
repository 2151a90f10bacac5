#!/usr/bin/env python3
"""The markdown tables of interp_cost's stamped runs (stamp_hand.py's HANDSTAMP/TWOSTAMP lines and stamp_ops.py's
STAMP lines, blocks 0 and the last): the median SM cycles of each phase over every print of the logs, per variant
of the interpreter; waits are left out (ranks sharing a GPU wait for each other's time slices) unless `--waits`
(ranks on GPUs of their own: a wait is the time the peer's signal takes to come). `--sizes 4M,8M` for other sizes
than 1M and 4M.

`allreduce_staged` (the default) reads DIR/stamps-[VARIANT-]SIZE-*.log, or DIR/stamps-allreduce_staged-VARIANT-SIZE-*.log
when those exist; `--program allreduce_rsag` reads DIR/stamps-allreduce_rsag-VARIANT-SIZE-*.log against the
hand-written `twoshot_allreduce`.

usage: stamp_table.py DIR [--program NAME] [--waits] [--sizes A,B] [VARIANT...]"""
import glob, re, statistics, sys

# Per program: the phases (the hand-written kernel's stamps and the interpreter's operations line up), the hand
# kernel's print, the interpreter's operation count and how many of its operations the table shows.
PROGRAMS = {
    "allreduce_staged": (
        ["stage", "put", "barrier", "signal", "wait", "barrier", "res", "barrier", "signal", "wait"], "HANDSTAMP", 9),
    "allreduce_rsag": (["stage", "signal", "wait", "barrier", "pass", "barrier", "signal", "wait"], "TWOSTAMP", 8),
}


def prints(files, pattern, keep):
    """Every print of `pattern` in the files; two ranks' prints may share a line (one GPU each, one log), so
    they are found anywhere in the text and the numbers stop at the first that is not followed by a space."""
    out = []
    for f in files:
        for m in re.finditer(pattern, open(f).read()):
            rest = [int(x) for x in m.group(2).split()]
            out.append([int(m.group(1))] + rest[:keep])
    return out


def row(name, runs, phases, waits=False):
    med = [statistics.median(r[k] for r in runs) for k in range(len(phases))]
    cells = ["–" if phases[k] == "wait" and not waits else "%.0f" % v for k, v in enumerate(med)]
    total = sum(v for k, v in enumerate(med) if phases[k] != "wait" or waits)
    return "| %s | %d | %s | %.0f |" % (name, len(runs), " | ".join(cells), total)


args = sys.argv[1:]
d = args.pop(0)
program = "allreduce_staged"
waits, sizes = False, ["1M", "4M"]
while args[:1] in (["--program"], ["--waits"], ["--sizes"]):
    if args[0] == "--waits":
        waits, args = True, args[1:]
    elif args[0] == "--sizes":
        sizes, args = args[1].split(","), args[2:]
    else:
        program, args = args[1], args[2:]
variants = args or [""]
phases, hand_tag, n_ops = PROGRAMS[program]
for size in sizes:
    print("| %s | prints | %s | %s |" % (size, " | ".join(phases), "sum" if waits else "sum without waits"))
    print("| --- |" + " ---: |" * (len(phases) + 2))
    for v in variants:
        files = sorted(glob.glob("%s/stamps-%s-%s%s-*.log" % (d, program, v + "-" if v else "", size)))
        if not files and program == "allreduce_staged":
            files = sorted(glob.glob("%s/stamps-%s%s-*.log" % (d, v + "-" if v else "", size)))
        hand = prints(files, r"%s block \d+: stage (\d+) \| ((?:\d+ )+)cyc" % hand_tag, len(phases) - 1)
        interp = prints(files, r"(?<!HAND)STAMP block \d+ ops %d: stage (\d+) \| ((?:\d+ )+)cyc" % n_ops, len(phases) - 1)
        if not hand or not interp:
            sys.exit("no stamps in %s" % files)
        print(row("hand-written" + (" (%s run)" % v if v else ""), hand, phases, waits))
        print(row("interpreter" + (" `%s`" % v if v else ""), interp, phases, waits))
    print()
