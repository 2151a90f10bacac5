"""Timing table of torch.distributed all_reduce, all_gather_into_tensor and reduce_scatter_tensor (fp16, 1 KiB to
256 MiB, eager and CUDA graph): run it with and without LD_PRELOAD=libmscclpp_nccl.so.

    torchrun --nproc-per-node 2 torch_timing.py [--json PATH] [--runs 15] [--max-size 256M]

Eager: the wall time per call of 200 back-to-back calls on the default stream (host and GPU together); graph: one
replay of a graph of 10 calls captured with torch.cuda.graph(g) (its own capture stream, after the eager calls),
between two CUDA events; symm: the graph row of all_reduce on a tensor inside a symmetric window (one ncclMemAlloc
pool registered with register_mem_pool(pool, symm=True), sizes up to 16 MiB): NCCL's symmetric kernels without the
library, ours zero copy in the window with it. The figure is the median over runs, the slowest rank's. Sizes are the bytes of the
largest buffer (all_reduce's tensor, all_gather's output, reduce_scatter's input). Rank 0 prints the table and the
time of init_process_group plus a first all_reduce. `--compare NCCL.json OURS.json` prints the speed-ups.
"""

import argparse
import json
import os
import statistics
import sys
import time


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1].upper()] if s[-1].upper() in units else int(s)


def target(op, size, mode):
    """The speed-up over torch without the library that each row aims for (fp16, in place, same run)."""
    if op == "all_reduce" and mode == "graph":
        return 1.5 if size <= 256 << 10 else 1.2 if size <= 16 << 20 else 1.0
    if mode == "graph":
        return 1.2 if size <= 1 << 20 else 1.0
    if mode == "symm":
        return 1.2
    return 1.0


def compare(nccl_path, ours_path):
    with open(nccl_path) as f:
        ja = json.load(f)
    with open(ours_path) as f:
        jb = json.load(f)
    a = {(r["op"], r["bytes"], r["mode"]): r["us"] for r in ja["rows"]}
    b = {(r["op"], r["bytes"], r["mode"]): r["us"] for r in jb["rows"]}
    print(f"init_process_group + first all_reduce: NCCL {ja['init_ms']:.1f} ms, ours {jb['init_ms']:.1f} ms, "
          f"added {jb['init_ms'] - ja['init_ms']:.1f} ms (target: at most 200 ms)")
    print(f"{'op':<24} {'bytes':>10} {'mode':>6} {'nccl us':>9} {'ours us':>9} {'speed-up':>9} {'target':>7}")
    worst, missed = None, 0
    for key in sorted(a, key=lambda k: (k[0], k[2], k[1])):
        if key not in b:
            continue
        ratio = a[key] / b[key]
        worst = ratio if worst is None else min(worst, ratio)
        want = target(*key)
        mark = "" if ratio >= want else "  MISSED"
        missed += ratio < want
        print(f"{key[0]:<24} {key[1]:>10} {key[2]:>6} {a[key]:>9.2f} {b[key]:>9.2f} {ratio:>8.2f}x {want:>6.2f}x{mark}")
    if worst is None:
        print("FAILED: no common rows")
        return 1
    print(f"slowest ratio: {worst:.2f}x; {missed} rows below their target")
    return 0


def graph_us(dist, torch, dev, fn, calls, runs):
    """Microseconds per call of `fn` in a CUDA graph: `calls` calls captured with torch.cuda.graph(g) (its own
    capture stream), replayed on the default stream between two CUDA events; the median over `runs` replays, the
    slowest rank's. Each timed replay follows an untimed one queued right before it: the ranks leave that one
    together (its last collective ends on both), so the timed one starts alike on every GPU instead of carrying the
    ranks' host skew after the barrier (microseconds, a large part of a 10-call replay at small sizes)."""
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    times = []
    for _ in range(runs):
        dist.barrier()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        g.replay()
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / calls)
    med = torch.tensor([statistics.median(times)], device=dev)
    dist.all_reduce(med, op=dist.ReduceOp.MAX)
    return med.item()


def symmetric_rows(dist, torch, dev, sizes, calls, runs, rows):
    """all_reduce graph rows on views of one tensor in an ncclMemAlloc pool registered as a symmetric window (the
    same offset on every rank); what happened, in words."""
    largest = max((s for s in sizes if s <= 16 << 20), default=0)
    if not largest:
        return "no size up to 16 MiB"
    try:
        backend = dist.group.WORLD._get_backend(dev)
        pool = torch.cuda.MemPool(backend.mem_allocator)
        with torch.cuda.use_mem_pool(pool):
            whole = torch.ones(largest // 2, dtype=torch.float16, device=dev)
        backend.register_mem_pool(pool, symm=True)
    except Exception as e:  # an older torch: say so in the table instead of failing the whole run
        return f"not measured: {e!r}"
    for size in sizes:
        if size > largest:
            continue
        t = whole[: size // 2]
        for _ in range(3):
            dist.all_reduce(t)
        us = graph_us(dist, torch, dev, lambda t=t: dist.all_reduce(t), calls, runs)
        rows.append({"op": "all_reduce", "bytes": size, "mode": "symm", "us": us})
    return f"all_reduce in one {largest}-byte ncclMemAlloc pool registered with symm=True"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--max-size", default="256M")
    p.add_argument("--eager-calls", type=int, default=200, help="back-to-back calls per eager run")
    p.add_argument("--compare", nargs=2, metavar=("NCCL", "OURS"), help="print the speed-up of OURS over NCCL")
    args = p.parse_args()
    if args.compare:
        return compare(*args.compare)

    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    torch.ones(1, device=dev)  # CUDA context outside the measured span
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    dist.init_process_group("nccl", device_id=dev)
    first = torch.ones(4096, dtype=torch.float16, device=dev)
    dist.all_reduce(first)
    torch.cuda.synchronize()
    init_ms = torch.tensor([(time.perf_counter() - t0) * 1000.0], device=dev)
    dist.all_reduce(init_ms, op=dist.ReduceOp.MAX)
    calls = 10
    sizes = []
    s = 1 << 10
    while s <= parse_size(args.max_size):
        sizes.append(s)
        s *= 4
    rows = []

    def buffers(op, size):
        n = size // 2
        if op == "all_reduce":
            t = torch.ones(n, dtype=torch.float16, device=dev)
            return lambda: dist.all_reduce(t)
        if op == "all_gather_into_tensor":
            out = torch.empty(n, dtype=torch.float16, device=dev)
            inp = torch.ones(n // world, dtype=torch.float16, device=dev)
            return lambda: dist.all_gather_into_tensor(out, inp)
        inp = torch.ones(n, dtype=torch.float16, device=dev)
        out = torch.empty(n // world, dtype=torch.float16, device=dev)
        return lambda: dist.reduce_scatter_tensor(out, inp)

    # Warm-up (clocks, allocator, every size's first call) outside the measured rows.
    for op in ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"]:
        for size in sizes:
            fn = buffers(op, size)
            for _ in range(3):
                fn()
    warm = buffers("all_reduce", 1024)
    for _ in range(2000):  # a count, not a time: every rank must make the same calls
        warm()
    torch.cuda.synchronize()
    for op in ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"]:
        for size in sizes:
            fn = buffers(op, size)
            # Eager: wall time per call of back-to-back calls on the default stream, as a training loop issues
            # them (the host path counts when it is slower than the GPU).
            for _ in range(3):
                fn()
            times = []
            for _ in range(args.runs):
                dist.barrier()
                torch.cuda.synchronize()
                t = time.perf_counter()
                for _ in range(args.eager_calls):
                    fn()
                torch.cuda.synchronize()
                times.append((time.perf_counter() - t) * 1e6 / args.eager_calls)
            med = torch.tensor([statistics.median(times)], device=dev)
            dist.all_reduce(med, op=dist.ReduceOp.MAX)
            rows.append({"op": op, "bytes": size, "mode": "eager", "us": med.item()})
            # Graph: torch.cuda.graph(g) on its own capture stream after the eager calls above, replayed on the
            # default stream; CUDA events around one replay of `calls` calls.
            rows.append({"op": op, "bytes": size, "mode": "graph", "us": graph_us(dist, torch, dev, fn, calls, args.runs)})
    symm_note = symmetric_rows(dist, torch, dev, sizes, calls, args.runs, rows)
    if rank == 0:
        preload = os.environ.get("LD_PRELOAD", "")
        print(f"# torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}, {world} ranks, "
              f"LD_PRELOAD={preload or '(none)'}, median of {args.runs} runs (eager: {args.eager_calls} calls, "
              f"graph: {calls}), slowest rank, us/call")
        print(f"init_process_group + first all_reduce (8 KiB): {init_ms.item():.1f} ms (slowest rank)")
        print(f"{'op':<24} {'bytes':>10} {'eager':>10} {'graph':>10} {'symm':>10}")
        for op in ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"]:
            for size in sizes:
                got = {r["mode"]: r["us"] for r in rows if r["op"] == op and r["bytes"] == size}
                cells = [f"{got[m]:>10.2f}" if m in got else f"{'-':>10}" for m in ("eager", "graph", "symm")]
                print(f"{op:<24} {size:>10} {' '.join(cells)}")
        print(f"symm rows: {symm_note}")
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as f:
                json.dump({"preload": preload, "init_ms": init_ms.item(), "rows": rows}, f)
    import threading

    t = threading.Thread(target=dist.destroy_process_group, daemon=True)
    t.start()
    t.join(20)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
