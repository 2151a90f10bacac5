"""Would the copy engines carry a two-rank all-reduce's first phase faster than the SMs inside a CUDA graph? Both
GPUs of a 2-GPU host at once, each replaying a graph of N steps; a step is a copy-engine write of S bytes into
the other GPU's memory (cudaMemcpyAsync, peer access on), then (`copy+kernel`) a small kernel that depends on it,
as the reduction pass would. Prints the median microseconds per step over repeated replays, per S and pattern, and
the GB/s one direction carries. The staged all-reduce's SM puts move 8 MiB in 25.0 us (336 GB/s) at 16 MiB
(results/2026-11-29-2xH200-s31, x2e/). No NVLink multicast.

Usage: python3 ce_graph.py [steps per graph, default 20] [replays, default 30]"""

import statistics
import sys
import time

import torch

import cudart


rt = cudart.load()


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    replays = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    if torch.cuda.device_count() < 2:
        raise SystemExit("needs two GPUs")
    for i in (0, 1):
        rt.cudaSetDevice(i)
        rt.cudaDeviceEnablePeerAccess(1 - i, 0)  # 704 (already enabled) is fine
    top = 8 << 20
    src = [torch.ones(top, dtype=torch.uint8, device=f"cuda:{i}") for i in (0, 1)]
    dst = [torch.zeros(top, dtype=torch.uint8, device=f"cuda:{i}") for i in (0, 1)]
    small = [torch.zeros(1024, dtype=torch.float32, device=f"cuda:{i}") for i in (0, 1)]
    print(f"# {steps} steps per graph, {replays} replays; us per step (median), GB/s one direction")
    print("# pattern      size  us/step  GB/s")
    copy_sizes = (1 << 20, 2 << 20, 4 << 20, 8 << 20)
    # The kernel alone moves nothing: one size (the first) times it.
    for pattern, sizes in (("copy", copy_sizes), ("copy+kernel", copy_sizes), ("kernel", copy_sizes[:1])):
        for size in sizes:
            graphs = []
            for i in (0, 1):
                with torch.cuda.device(i):
                    s = torch.cuda.Stream()
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g, stream=s):
                        for _ in range(steps):
                            if pattern != "kernel":
                                rc = rt.cudaMemcpyAsync(dst[1 - i].data_ptr(), src[i].data_ptr(), size, 4,
                                                        torch.cuda.current_stream().cuda_stream)
                                if rc != 0:
                                    raise SystemExit(f"cudaMemcpyAsync {i}->{1 - i} in capture: error {rc}")
                            if pattern != "copy":
                                small[i].add_(1.0)
                    graphs.append(g)
            times = []
            for r in range(replays + 3):
                for i in (0, 1):
                    torch.cuda.synchronize(i)
                t0 = time.perf_counter()
                for g in graphs:
                    g.replay()
                for i in (0, 1):
                    torch.cuda.synchronize(i)
                if r >= 3:
                    times.append((time.perf_counter() - t0) / steps * 1e6)
            us = statistics.median(times)
            gbs = size / (us * 1e-6) / 1e9 if pattern != "kernel" else 0.0
            print(f"{pattern:12s} {size >> 20:4d}M  {us:7.2f}  {gbs:6.1f}")
    if not torch.equal(dst[0][:1024], torch.ones(1024, dtype=torch.uint8, device="cuda:0")):
        raise SystemExit("the copies did not land")
    print("PASS copies landed")


if __name__ == "__main__":
    main()
