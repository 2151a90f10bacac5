"""Copy-engine peer write rates between the GPUs of one host, per pattern (what a port-channel program's puts meet).

Usage: python3 ce_probe.py [MiB per GPU, default 1024] [repetitions, default 7]
Patterns, each GPU moving the same number of bytes:
  ring      every GPU copies all of it to the next GPU (one stream), all GPUs at once
  rotated   every GPU copies 1/(n-1) of it to peer r+1, then r+2, ... on one stream (the rotated order)
  all       every GPU copies 1/(n-1) to every peer at once, one stream per peer
  pair      GPUs 0 and 1 copy to each other (the 2-GPU figure)
Prints the median GB/s per GPU (bytes each GPU sent / wall time). Uses cudaMemcpyAsync (copy engines) through
the CUDA runtime torch loads; no NVLink multicast.
"""

import statistics
import sys
import time

import torch

import cudart


rt = cudart.load()


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    n = torch.cuda.device_count()
    size = mib << 20
    for i in range(n):
        rt.cudaSetDevice(i)
        for j in range(n):
            if i != j:
                rt.cudaDeviceEnablePeerAccess(j, 0)  # 704 (already enabled) is fine
    src = [torch.empty(size, dtype=torch.uint8, device=f"cuda:{i}") for i in range(n)]
    dst = [torch.empty(size, dtype=torch.uint8, device=f"cuda:{i}") for i in range(n)]
    streams = [[torch.cuda.Stream(device=i) for _ in range(n)] for i in range(n)]
    part = size // (n - 1)

    def copy(i, j, off, nbytes, s):
        rc = rt.cudaMemcpyAsync(dst[j].data_ptr() + off, src[i].data_ptr() + off, nbytes, 4, streams[i][s].cuda_stream)
        if rc != 0:
            raise SystemExit(f"cudaMemcpyAsync {i}->{j}: error {rc}")

    def sync():
        for i in range(n):
            torch.cuda.synchronize(i)

    def pat_ring():
        for i in range(n):
            copy(i, (i + 1) % n, 0, size, 0)

    def pat_rotated():
        for k in range(1, n):
            for i in range(n):
                copy(i, (i + k) % n, (k - 1) * part, part, 0)

    def pat_all():
        for i in range(n):
            for k in range(1, n):
                copy(i, (i + k) % n, (k - 1) * part, part, k)

    def pat_pair():
        copy(0, 1, 0, size, 0)
        copy(1, 0, 0, size, 0)

    for name, fn, sent in (
        ("ring", pat_ring, size),
        ("rotated", pat_rotated, part * (n - 1)),
        ("all", pat_all, part * (n - 1)),
        ("pair", pat_pair, size),
    ):
        fn()
        sync()
        ts = []
        for _ in range(reps):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            ts.append(time.perf_counter() - t0)
        t = statistics.median(ts)
        print(f"ce_probe gpus={n} MiB={mib} pattern={name} GBps_per_gpu={sent / t / 1e9:.1f} ms={t * 1e3:.3f} min_ms={min(ts) * 1e3:.3f}")


if __name__ == "__main__":
    main()
