"""In-place all-reduce against every peer a torch user can pick, in one run and one harness: this library
(``mscclpp.torch.CustomizedComm``), torch.distributed on NCCL, NCCL's symmetric kernels (a tensor from an
``ncclMemAlloc`` pool registered as a symmetric window), and torch symm_mem's one-shot and two-shot kernels.

Each method runs in a CUDA graph of ``--calls`` calls on a side stream after one eager warm-up call (torch's
warm-up-then-capture pattern); a timing is the median over ``--runs`` replays of µs per call, the slowest rank's,
and the figure the median of ``--rounds`` such timings, each round running every size and method in turn.
Every method's result is checked against the exact sum before it is timed. fp16, except symm_mem (bf16: torch
2.11 has no fp16 kernels for it; the same bytes move). A method this host or this torch cannot run (an API that
is missing, an allocator that is refused) is left out with its reason; the others still run. NVLink multicast
stays off (``NCCL_NVLS_ENABLE=0``, ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``, set here when the launcher did not).

    torchrun --nproc-per-node N examples/torch/peers.py [--sizes 1K:256M] [--rounds 3] [--csv F] [--json F]

``mscclpp plot F.csv -o F.png`` draws the table (latency and bus bandwidth, one line per method).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Callable, Optional

for _name, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                      ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_name, _value)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import mscclpp  # noqa: E402
import mscclpp.torch as mt  # noqa: E402
from _common import SHARED_GPU, pattern, setup, summed  # noqa: E402

METHODS = ["mscclpp", "nccl", "nccl_symm", "symm_one_shot", "symm_two_shot"]


def sizes(spec: str) -> list[int]:
    """``A:B`` doubling from A to B (suffixes K, M, G), or a comma-separated list."""
    def one(s: str) -> int:
        s = s.strip().upper()
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
        return int(s[:-1] if mult > 1 else s) * mult
    if ":" in spec:
        lo, hi = (one(p) for p in spec.split(":", 1))
        out = []
        while lo <= hi:
            out.append(lo)
            lo *= 2
        return out
    return [one(p) for p in spec.split(",")]


def timed(fn: Callable[[], None], calls: int, runs: int) -> float:
    """Median µs per call over ``runs`` replays of a graph of ``calls`` calls, the slowest rank's."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(runs):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000 / calls)
    mine = torch.tensor([statistics.median(samples)], dtype=torch.float64, device="cuda")
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    return float(mine.item())


def exact(name: str, got: torch.Tensor, n: int, world: int, rank: int) -> Optional[str]:
    """None when ``got`` is the sum of every rank's pattern, else what is wrong (the same verdict on every rank)."""
    torch.cuda.synchronize()
    want = summed(n, world, got.dtype, got.device)
    bad = int((got.float() != want.float()).sum().item())
    flag = torch.tensor([bad], dtype=torch.int64, device=got.device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    worst = int(flag.item())
    return None if worst == 0 else f"{name}: {worst} wrong element(s) on the worst rank"


class Method:
    """One way to all-reduce a tensor of ``n`` elements in place: ``buffer(n)`` gives the tensor it runs on (filled
    with this rank's pattern by the harness), ``call(x)`` all-reduces it. ``why`` says why it cannot run here."""

    def __init__(self, name: str, dtype: torch.dtype):
        self.name, self.dtype, self.why = name, dtype, None

    def buffer(self, n: int) -> torch.Tensor:
        raise NotImplementedError

    def call(self, x: torch.Tensor) -> None:
        raise NotImplementedError


class Ours(Method):
    def __init__(self, device: torch.device):
        super().__init__("mscclpp", torch.float16)
        self.device = device
        self.comm = mt.CustomizedComm(mscclpp.CommGroup.from_env())

    def buffer(self, n: int) -> torch.Tensor:
        return torch.empty(n, dtype=self.dtype, device=self.device)

    def call(self, x: torch.Tensor) -> None:
        self.comm.all_reduce(x)


class Nccl(Method):
    def __init__(self, device: torch.device):
        super().__init__("nccl", torch.float16)
        self.device = device

    def buffer(self, n: int) -> torch.Tensor:
        return torch.empty(n, dtype=self.dtype, device=self.device)

    def call(self, x: torch.Tensor) -> None:
        dist.all_reduce(x)


class NcclSymmetric(Method):
    """NCCL on a tensor inside a symmetric window: one tensor of the largest size from an ``ncclMemAlloc`` pool,
    registered with ``register_mem_pool(pool, symm=True)``; each size runs on a view of its head (the same offset
    on every rank)."""

    def __init__(self, device: torch.device, largest: int):
        super().__init__("nccl_symm", torch.float16)
        backend = dist.group.WORLD._get_backend(device)
        allocator = getattr(backend, "mem_allocator", None)
        if allocator is None or not hasattr(backend, "register_mem_pool"):
            raise RuntimeError("this torch's ProcessGroupNCCL has no mem_allocator/register_mem_pool")
        self.pool = torch.cuda.MemPool(allocator)
        with torch.cuda.use_mem_pool(self.pool):
            self.whole = torch.empty(largest // 2, dtype=self.dtype, device=device)
        try:
            backend.register_mem_pool(self.pool, symm=True)
        except TypeError:
            raise RuntimeError("this torch's register_mem_pool takes no symm argument")

    def buffer(self, n: int) -> torch.Tensor:
        return self.whole[:n]

    def call(self, x: torch.Tensor) -> None:
        dist.all_reduce(x)


class SymmMem(Method):
    """torch symm_mem: a symmetric tensor per size (``symm_mem.empty`` + ``rendezvous``); the one-shot op writes a
    new tensor, which the harness copies back (a device copy inside the graph, as a user of the op would do), the
    two-shot op works in place."""

    def __init__(self, device: torch.device, two_shot: bool):
        super().__init__("symm_two_shot" if two_shot else "symm_one_shot", torch.bfloat16)
        import torch.distributed._symmetric_memory as symm_mem

        self.symm_mem, self.device, self.two_shot = symm_mem, device, two_shot
        self.group = dist.group.WORLD.group_name
        op = "two_shot_all_reduce_" if two_shot else "one_shot_all_reduce"
        if not hasattr(torch.ops.symm_mem, op):
            raise RuntimeError(f"this torch has no torch.ops.symm_mem.{op}")
        self.op = getattr(torch.ops.symm_mem, op)

    def buffer(self, n: int) -> torch.Tensor:
        t = self.symm_mem.empty(n, dtype=self.dtype, device=self.device)
        self.symm_mem.rendezvous(t, self.group)
        return t

    def call(self, x: torch.Tensor) -> None:
        if self.two_shot:
            self.op(x, "sum", self.group)
        else:
            x.copy_(self.op(x, "sum", self.group))


def make(name: str, device: torch.device, largest: int) -> Method:
    if name == "mscclpp":
        return Ours(device)
    if name == "nccl":
        return Nccl(device)
    if name == "nccl_symm":
        return NcclSymmetric(device, largest)
    return SymmMem(device, two_shot=name == "symm_two_shot")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1K:256M")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--csv", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    rank, world, device = setup()
    if SHARED_GPU:
        print("peers.py needs a GPU per rank (NCCL refuses two ranks on one GPU)", flush=True)
        return 2
    wanted = sizes(args.sizes)
    methods: list[Method] = []
    skipped: dict[str, str] = {}
    for name in args.methods.split(","):
        try:
            methods.append(make(name, device, max(wanted)))
        except Exception as e:  # a peer this host or torch cannot run: left out, with the reason
            skipped[name] = f"{type(e).__name__}: {e}"
    # Rounds: every size and method timed once per round, in turn, so that a drift of the host (clocks, other
    # jobs) falls on every method alike; a method's figure is the median of its rounds.
    samples: dict[tuple[int, str], list[float]] = {}
    for rnd in range(args.rounds):
        for size in wanted:
            for m in methods:
                if m.why is not None:
                    continue
                n = size // torch.tensor([], dtype=m.dtype).element_size()
                try:
                    x = m.buffer(n)
                    x.copy_(pattern(n, rank, m.dtype, device))
                    m.call(x)
                    wrong = exact(f"{m.name} {size} B", x, n, world, rank)
                    if wrong is not None:
                        m.why = wrong
                        continue
                    samples.setdefault((size, m.name), []).append(timed(lambda: m.call(x), args.calls, args.runs))
                except Exception as e:
                    m.why = f"at {size} B: {type(e).__name__}: {e}"
            if rank == 0:
                cells = "  ".join(f"{m.name} {samples[(size, m.name)][-1]:.2f}" for m in methods
                                  if len(samples.get((size, m.name), [])) == rnd + 1)
                print(f"round {rnd + 1}: {size:>11} B  {cells}", flush=True)
    table: list[dict] = []
    for size in wanted:
        row: dict = {"bytes": size, "collective": "allreduce", "world": world}
        for m in methods:
            got = samples.get((size, m.name), [])
            # A method that failed at some point is left out at every size (its reason is printed below).
            if m.why is None and got:
                row[f"{m.name}_us"] = statistics.median(got)
        table.append(row)
    for m in methods:
        if m.why is not None:
            skipped[m.name] = m.why
    if rank == 0:
        names = [m for m in args.methods.split(",")]
        print(f"\nall_reduce in place, {world} ranks, CUDA graphs of {args.calls} calls, median of {args.runs} "
              f"replays, slowest rank, median of {args.rounds} rounds, us per call (fp16; symm_mem bf16)")
        print(f"{'bytes':>11}" + "".join(f"{n:>15}" for n in names))
        for row in table:
            print(f"{row['bytes']:>11}" + "".join(
                f"{row[f'{n}_us']:>15.2f}" if f"{n}_us" in row else f"{'-':>15}" for n in names))
        for name, why in skipped.items():
            print(f"{name}: left out: {why}")
        if args.csv:
            with open(args.csv, "w") as f:
                f.write(",".join(["bytes", "collective", "world"] + [f"{n}_us" for n in names]) + "\n")
                for row in table:
                    cells = [str(row["bytes"]), "allreduce", str(world)]
                    cells += [f"{row[f'{n}_us']:.3f}" if f"{n}_us" in row else "" for n in names]
                    f.write(",".join(cells) + "\n")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"world": world, "calls": args.calls, "runs": args.runs, "rounds": args.rounds, "rows": table,
                           "left_out": skipped, "torch": torch.__version__}, f, indent=1)
    ours_ran = any("mscclpp_us" in row for row in table) or "mscclpp" not in args.methods.split(",")
    return 0 if ours_ran else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # A bounded exit: destroy_process_group can hang on this torch and NCCL.
    os._exit(code)
