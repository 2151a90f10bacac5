#!/usr/bin/env python3
"""Merge rows measured by `mscclpp tune` into a shipped table (mscclpp-exec/tables/*.json).

Usage: merge_tuned.py TABLE SOURCE...   SOURCE: a table `mscclpp tune --out` wrote, or a `mscclpp tune` log (its
printed table). A source row replaces the table's row of the same collective, type, placement and size; rows the
sources do not name stay. Only rows where ours ran (`USE ours`) are taken from a log.
"""
import json
import sys

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def rows_of_log(path):
    rows = []
    for line in open(path):
        f = line.split()
        if len(f) != 14 or f[0] not in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast"):
            continue
        col, dtype, place, num, unit, program, tb, _x, threads, inst, us, nccl, _speed, use = f
        if use != "ours":
            continue
        rows.append({"collective": col, "dtype": dtype, "inplace": place == "in", "size": int(num) * UNITS[unit],
                     "program": program, "instances": int(inst), "thread_blocks": int(tb),
                     "threads_per_block": int(threads), "us": float(us), "nccl_us": float(nccl)})
    return rows


def main():
    table_path, sources = sys.argv[1], sys.argv[2:]
    table = json.load(open(table_path))
    key = lambda r: (r["collective"], r["dtype"], r["inplace"], r["size"])
    merged = {key(r): r for r in table["rows"]}
    for src in sources:
        if src.endswith(".json"):
            new = json.load(open(src))["rows"]
        else:
            new = rows_of_log(src)
        if not new:
            sys.exit(f"{src}: no rows")
        for r in new:
            merged[key(r)] = r
        print(f"{src}: {len(new)} rows")
    table["rows"] = sorted(merged.values(), key=lambda r: (r["collective"], r["dtype"], not r["inplace"], r["size"]))
    with open(table_path, "w") as out:
        json.dump(table, out, indent=2)
        out.write("\n")


if __name__ == "__main__":
    main()
