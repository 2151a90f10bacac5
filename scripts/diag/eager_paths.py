"""Where an eager torch collective's time goes, with or without LD_PRELOAD=libmscclpp_nccl.so.

    torchrun --nproc-per-node N eager_paths.py [--cases all_reduce:4K,all_reduce:4M,...] [--calls 200] [--runs 7]

For each case (fp16; sizes are the largest buffer's bytes): the wall time per call of CALLS back-to-back calls on
the default stream (host and GPU together, as torch_timing.py's eager rows), the host time per call of the same
loop before its synchronize (the enqueue side alone, while the GPU still runs), and, from torch.profiler over 50
calls, the GPU kernels of the collective: their median duration and the median time from one kernel's start to the
next one's (the GPU's period; when it exceeds the duration, the GPU waited between calls). Medians over runs, the
slowest rank's. With the library, each case's route (from its counters) and, under MSCCLPP_NCCL_LOG=info, its host
time per call and route so far (cumulative over the cases; rank 0's) are printed after the table.
"""

import argparse
import os
import statistics
import sys
import time


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cases", default="all_reduce:4K,all_reduce:1M,all_reduce:4M,all_reduce:16M,"
                   "reduce_scatter_tensor:64K,all_gather_into_tensor:4M")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()

    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)

    def make(op, size):
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

    def slowest(v):
        t = torch.tensor([v], device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    lib = None
    if "libmscclpp_nccl" in os.environ.get("LD_PRELOAD", ""):
        import ctypes

        lib = ctypes.CDLL(None)
        lib.mscclpp_nccl_path_counts.restype = ctypes.c_size_t
        lib.mscclpp_nccl_host_times.restype = ctypes.c_size_t

    def counts():
        if lib is None:
            return []
        import ctypes

        buf = (ctypes.c_uint64 * 20)()
        lib.mscclpp_nccl_path_counts(buf, 20)
        return list(buf)

    def host_times():
        if lib is None:
            return ""
        import ctypes

        buf = ctypes.create_string_buffer(4096)
        lib.mscclpp_nccl_host_times(buf, 4096)
        return buf.value.decode()

    routes = ["zero-copy", "registered", "staged", "window", "nccl"]
    notes = []
    rows = []
    for case in args.cases.split(","):
        op, size = case.split(":")
        size = parse_size(size)
        fn = make(op, size)
        for _ in range(20):
            fn()
        before = counts()
        walls, enq = [], []
        for _ in range(args.runs):
            dist.barrier()
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(args.calls):
                fn()
            e = time.perf_counter()
            torch.cuda.synchronize()
            walls.append((time.perf_counter() - t) * 1e6 / args.calls)
            enq.append((e - t) * 1e6 / args.calls)
        after = counts()
        delta = [b - a for a, b in zip(before, after)]
        route = ", ".join(f"{r} {d}" for r, d in zip(routes * 4, delta) if d)
        notes.append(f"{op} {size}: {route or 'no counters (no library)'}; host time so far: {host_times() or '-'}")
        dist.barrier()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(50):
                fn()
            torch.cuda.synchronize()
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                   and ("mscclpp" in e.name or "nccl" in e.name.lower())]
        kernels.sort(key=lambda e: e.time_range.start)
        durs = [e.time_range.elapsed_us() for e in kernels]
        starts = [e.time_range.start for e in kernels]
        period = [b - a for a, b in zip(starts, starts[1:])]
        names = sorted({e.name for e in kernels})
        rows.append((op, size, slowest(statistics.median(walls)), slowest(statistics.median(enq)),
                     slowest(statistics.median(durs) if durs else -1), slowest(statistics.median(period) if period else -1),
                     len(kernels), ",".join(n[:40] for n in names)))
    if rank == 0:
        print(f"# {world} ranks, LD_PRELOAD={os.environ.get('LD_PRELOAD', '') or '(none)'}, {args.calls} calls, "
              f"median of {args.runs} runs, slowest rank, us")
        print(f"{'op':<24} {'bytes':>10} {'wall/call':>10} {'enqueue':>10} {'kernel':>10} {'period':>10} {'n':>4}  kernels")
        for op, size, w, e, d, per, n, names in rows:
            print(f"{op:<24} {size:>10} {w:>10.2f} {e:>10.2f} {d:>10.2f} {per:>10.2f} {n:>4}  {names}")
        for n in notes:
            print(n)
    sys.stdout.flush()
    import threading

    t = threading.Thread(target=dist.destroy_process_group, daemon=True)
    t.start()
    t.join(15)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
