"""Markdown tables from `mscclpp bench --csv` files and an `examples/torch/peers.py` CSV: one table per bench
(size, ours and NCCL in µs, speed-up, bus bandwidths, the program and grid), the speed-up range of each, and the
peers' table with each size's best peer and our ratio to it.

    python3 scripts/diag/bench_md.py --bench A.csv B.csv ... [--peers P.csv]
"""

import argparse
import csv


def human(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} B"


def bench_table(path):
    rows = [r for r in csv.DictReader(open(path)) if r["us"] and not r.get("skipped")]
    if not rows:
        return f"(no rows in {path})\n"
    r0 = rows[0]
    place = "in place" if r0["in_place"] == "true" else "out of place"
    sp = [float(r["speedup"]) for r in rows if r["speedup"]]
    wrong = sum(int(r["wrong"] or 0) for r in rows)
    out = [f"### {r0['collective']}, {r0['dtype']}, {place}, {r0['world']} ranks ({path.split('/')[-2]}/{path.split('/')[-1]})",
           "", f"Speed-up over NCCL {min(sp):.2f}–{max(sp):.2f}× over {len(sp)} sizes; {wrong} wrong elements.", "",
           "| size | ours µs | NCCL µs | speed-up | ours busbw GB/s | NCCL busbw GB/s | program (blocks × threads) |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        out.append(f"| {human(int(r['bytes']))} | {float(r['us']):.2f} | {float(r['nccl_us']):.2f} | "
                   f"{float(r['speedup']):.2f}× | {float(r['busbw_GBps']):.1f} | {float(r['nccl_busbw_GBps']):.1f} | "
                   f"`{r['program']}` ({r['thread_blocks']} × {r['threads']}) |")
    return "\n".join(out) + "\n"


def peers_table(path):
    rows = list(csv.DictReader(open(path)))
    peers = [k for k in rows[0] if k.endswith("_us") and k != "mscclpp_us"]
    out = ["| size | ours µs | " + " | ".join(p[:-3].replace("_", " ") + " µs" for p in peers) +
           " | best peer | ours / best |", "| --- " * (len(peers) + 4) + "|"]
    for r in rows:
        vals = {p: float(r[p]) for p in peers if r[p]}
        best = min(vals, key=vals.get)
        ours = float(r["mscclpp_us"])
        out.append(f"| {human(int(r['bytes']))} | {ours:.2f} | " +
                   " | ".join(f"{float(r[p]):.2f}" if r[p] else "–" for p in peers) +
                   f" | {best[:-3].replace('_', ' ')} | {vals[best] / ours:.2f}× |")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bench", nargs="*", default=[])
    p.add_argument("--peers")
    a = p.parse_args()
    for b in a.bench:
        print(bench_table(b))
    if a.peers:
        print(peers_table(a.peers))


if __name__ == "__main__":
    main()
