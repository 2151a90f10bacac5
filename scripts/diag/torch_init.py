"""Start-up cost through torch: init_process_group, then the first all_reduce (8 KiB fp16), each timed on every
rank (the slowest printed by rank 0). Run it under torchrun with and without LD_PRELOAD=libmscclpp_nccl.so, with
MSCCLPP_TRACE_STARTUP=1 to see the library's set-up phases on stderr.

    torchrun --nproc-per-node N torch_init.py [--label NAME]
"""

import argparse
import os
import sys
import threading
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--label", default="")
    args = p.parse_args()
    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", os.environ["RANK"]))
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    torch.ones(1, device=dev)  # the CUDA context outside the measured span
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    dist.init_process_group("nccl", device_id=dev)
    t1 = time.perf_counter()
    x = torch.ones(4096, dtype=torch.float16, device=dev)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    y = torch.ones(4096, dtype=torch.float16, device=dev)
    dist.all_reduce(y)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    ok = bool((x == dist.get_world_size()).all() and (y == dist.get_world_size()).all())
    ms = torch.tensor([(t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, 0.0 if ok else 1.0], device=dev)
    dist.all_reduce(ms, op=dist.ReduceOp.MAX)
    if dist.get_rank() == 0:
        a, b, c, bad = ms.tolist()
        print(f"init {args.label}: init_process_group {a:.1f} ms, first all_reduce {b:.1f} ms, second {c:.2f} ms, "
              f"total {a + b:.1f} ms (slowest rank){'' if bad == 0 else ' WRONG RESULT'}", flush=True)
    t = threading.Thread(target=dist.destroy_process_group, daemon=True)
    t.start()
    t.join(10)
    sys.stdout.flush()
    os._exit(0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
