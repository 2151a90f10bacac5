"""A rank killed (SIGKILL) while the ranks replay a CUDA graph of all_reduce: the survivor must exit non-zero within
the device wait bound plus teardown, naming the peer, and nothing may hang.

    LD_PRELOAD=libmscclpp_nccl.so python3 torch_fault.py [--timeout 120]

This script is its own launcher (torchrun would stop the survivor as soon as the other rank dies, which is what
is under test): it starts two ranks with MSCCLPP_WAIT_TIMEOUT_MS=10000; rank 1 kills itself with SIGKILL after a
few replays; rank 0 keeps replaying. It prints each rank's exit status, how long rank 0 took to end after rank 1
died, and rank 0's last lines, and exits 0 only when rank 0 ended non-zero in time with our error naming rank 1
(from ncclGetLastError, through torch's watchdog or the failed synchronize).
"""

import argparse
import os
import signal
import subprocess
import sys
import time


def rank_main():
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    x = torch.ones(512, dtype=torch.float16, device=dev)
    big = torch.ones(8 << 20, dtype=torch.float16, device=dev)  # 16 MiB: runs on registered buffers
    for _ in range(3):
        dist.all_reduce(x)
        dist.all_reduce(big)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dist.all_reduce(x)
    for i in range(1_000_000):
        if rank == 1 and i == 20:
            torch.cuda.synchronize()
            print("rank 1: killing myself now", flush=True)
            with open(os.environ["FAULT_MARK"], "w") as f:
                f.write(str(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)
        x.fill_(1.0)
        g.replay()
        torch.cuda.synchronize()
    return 0


def main():
    if os.environ.get("FAULT_CHILD") == "1":
        return rank_main()
    p = argparse.ArgumentParser()
    p.add_argument("--timeout", type=float, default=120.0, help="the most seconds rank 0 may take after rank 1 died")
    args = p.parse_args()
    mark = f"/tmp/mscclpp-fault-{os.getpid()}"
    env = dict(os.environ, FAULT_CHILD="1", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(29500 + os.getpid() % 1000), FAULT_MARK=mark,
               MSCCLPP_WAIT_TIMEOUT_MS="10000", TORCH_NCCL_ASYNC_ERROR_HANDLING="1")
    procs = []
    for r in range(2):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        procs.append(subprocess.Popen([sys.executable, __file__], env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    start = time.time()
    out1, _ = procs[1].communicate(timeout=args.timeout + 120)
    killed_at = float(open(mark).read()) if os.path.exists(mark) else time.time()
    try:
        out0, _ = procs[0].communicate(timeout=max(1.0, args.timeout - (time.time() - killed_at)))
        rc0 = procs[0].returncode
    except subprocess.TimeoutExpired:
        procs[0].kill()
        out0, _ = procs[0].communicate()
        rc0 = None
    took = time.time() - killed_at
    print(f"rank 1 exit status {procs[1].returncode} (SIGKILL is -9); rank 0 exit status {rc0}, "
          f"{took:.1f} s after rank 1 died ({time.time() - start:.1f} s in all)")
    tail = out0.strip().splitlines()[-25:]
    print("rank 0, last lines:\n  " + "\n  ".join(tail))
    named = "peer rank 1" in out0
    ok = rc0 not in (None, 0) and took <= args.timeout and named
    print(f"{'ok' if ok else 'FAILED'}: rank 0 ended {'non-zero' if rc0 not in (None, 0) else 'with status ' + str(rc0)} "
          f"within {args.timeout:.0f} s: {took <= args.timeout}; the error names rank 1: {named}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
