"""Every torch.distributed collective through the NCCL backend, checked value by value; run it with and without
LD_PRELOAD=libmscclpp_nccl.so and compare the two JSON files it writes.

    torchrun --nproc-per-node 2 torch_collectives.py --json /tmp/run.json [--device-id]
    python3 torch_collectives.py --compare /tmp/nccl.json /tmp/mscclpp.json

Eager calls allocate fresh tensors each time (the caching allocator hands out reused pieces) and free them
between calls; the graph checks capture each collective in torch.cuda.graph and replay it several times with new
inputs. A small tensor-parallel MLP (fixed random weights) records its output, which --compare checks with
allclose. Each rank writes JSON_PATH.rank<r>; the exit status is non-zero if any check failed.
"""

import argparse
import json
import os
import sys


def compare(a_path, b_path):
    ok = True
    for r in range(64):
        a_file, b_file = f"{a_path}.rank{r}", f"{b_path}.rank{r}"
        if not os.path.exists(a_file) and not os.path.exists(b_file):
            if r == 0:
                print(f"FAILED: neither {a_file} nor {b_file} exists")
                return 1
            break
        with open(a_file) as f:
            a = json.load(f)
        with open(b_file) as f:
            b = json.load(f)
        names_a = [c["name"] for c in a["checks"]]
        names_b = [c["name"] for c in b["checks"]]
        if names_a != names_b:
            print(f"FAILED: rank {r}: the two runs made different checks")
            ok = False
        for run, data in (("a", a), ("b", b)):
            bad = [c for c in data["checks"] if not c["ok"]]
            if bad:
                print(f"FAILED: rank {r}, run {run}: {len(bad)} failed checks, first: {bad[0]}")
                ok = False
        import math

        ya, yb = a["mlp"], b["mlp"]
        worst = max(abs(x - y) / (1e-3 + abs(x)) for x, y in zip(ya, yb)) if ya else math.inf
        close = len(ya) == len(yb) and len(ya) > 0 and all(
            abs(x - y) <= 1e-2 + 1e-2 * abs(x) for x, y in zip(ya, yb)
        )
        print(f"{'ok' if close else 'FAILED'}: rank {r}: MLP outputs allclose ({len(ya)} values, worst rel {worst:.2e})")
        ok = ok and close
        print(f"rank {r}: run a: {sum(c['ok'] for c in a['checks'])}/{len(a['checks'])} checks passed; "
              f"run b: {sum(c['ok'] for c in b['checks'])}/{len(b['checks'])}")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json", help="write results to JSON.rank<r>")
    p.add_argument("--device-id", action="store_true", help="init_process_group(device_id=...): nonblocking comms")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = p.parse_args()
    if args.compare:
        return compare(*args.compare)

    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    ngpu = torch.cuda.device_count()
    dev = torch.device("cuda", local % ngpu)
    torch.cuda.set_device(dev)
    if args.device_id:
        dist.init_process_group("nccl", device_id=dev)
    else:
        dist.init_process_group("nccl")
    checks = []

    def record(name, ok, detail=""):
        checks.append({"name": name, "ok": bool(ok), "detail": detail})
        if not ok:
            print(f"rank {rank}: FAILED {name}: {detail}", flush=True)

    def expect(name, got, want, tol=0.0):
        got = got.float().cpu()
        want = want.float().cpu()
        if got.shape != want.shape:
            record(name, False, f"shape {tuple(got.shape)} != {tuple(want.shape)}")
            return
        diff = (got - want).abs()
        bad = diff > tol + tol * want.abs()
        if bool(bad.any()):
            i = int(bad.flatten().nonzero()[0])
            record(name, False, f"element {i}: got {got.flatten()[i].item()}, want {want.flatten()[i].item()}")
        else:
            record(name, True)

    def pattern(n, r, dtype, salt=0):
        # Small integers: exact in every type, sums and products of 2..8 ranks stay exact in fp16/bf16.
        i = torch.arange(n, device="cpu", dtype=torch.int64)
        v = ((i * 7 + r * 3 + salt) % 5) + 1
        return v.to(dtype).to(dev)

    ops = {
        "sum": (dist.ReduceOp.SUM, lambda xs: sum(xs[1:], xs[0])),
        "product": (dist.ReduceOp.PRODUCT, lambda xs: __import__("functools").reduce(lambda a, b: a * b, xs)),
        "min": (dist.ReduceOp.MIN, lambda xs: torch.stack(xs).min(0).values),
        "max": (dist.ReduceOp.MAX, lambda xs: torch.stack(xs).max(0).values),
        "avg": (dist.ReduceOp.AVG, lambda xs: sum(xs[1:], xs[0]) / len(xs)),
    }
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32}
    # Element counts: inside the library's window (up to 256 KiB) and beyond it (forwarded).
    counts = [1, 255, 4096, 65536, 1 << 20]

    # Eager: fresh tensors per call, freed between calls; a junk allocation shifts the allocator between ranks.
    junk = []
    for tname, dt in dtypes.items():
        for n in counts:
            for oname, (op, ref) in ops.items():
                if oname == "avg" and not dt.is_floating_point:
                    continue
                if oname == "product" and n > 4096:
                    continue
                if rank % 2 == 1:
                    junk.append(torch.empty(1 + n % 977, device=dev))
                x = pattern(n, rank, dt)
                dist.all_reduce(x, op=op)
                want = ref([pattern(n, r, torch.float32).cpu() for r in range(world)])
                expect(f"all_reduce {oname} {tname} n={n}", x, want, tol=1e-2 if oname == "avg" else 0.0)
                del x
        if len(junk) > 20:
            junk.clear()
    for tname, dt in dtypes.items():
        for n in counts[:-1] + [1 << 18]:
            x = pattern(n, rank, dt)
            out = torch.empty(n * world, dtype=dt, device=dev)
            dist.all_gather_into_tensor(out, x)
            expect(f"all_gather_into_tensor {tname} n={n}", out, torch.cat([pattern(n, r, dt).cpu() for r in range(world)]))
            outs = [torch.empty(n, dtype=dt, device=dev) for _ in range(world)]
            dist.all_gather(outs, x)
            expect(f"all_gather {tname} n={n}", torch.cat(outs), torch.cat([pattern(n, r, dt).cpu() for r in range(world)]))
            inp = pattern(n * world, rank, dt)
            rs = torch.empty(n, dtype=dt, device=dev)
            dist.reduce_scatter_tensor(rs, inp)
            full = sum(pattern(n * world, r, torch.float32).cpu() for r in range(world))
            expect(f"reduce_scatter_tensor sum {tname} n={n}", rs, full[rank * n:(rank + 1) * n])
            rs2 = torch.empty(n, dtype=dt, device=dev)
            dist.reduce_scatter_tensor(rs2, inp, op=dist.ReduceOp.MAX)
            full = torch.stack([pattern(n * world, r, torch.float32).cpu() for r in range(world)]).max(0).values
            expect(f"reduce_scatter_tensor max {tname} n={n}", rs2, full[rank * n:(rank + 1) * n])
            for src in range(world):
                b = pattern(n, rank, dt, salt=src)
                dist.broadcast(b, src=src)
                expect(f"broadcast src={src} {tname} n={n}", b, pattern(n, src, dt, salt=src).cpu())
            del x, out, outs, inp, rs, rs2
    for n in [world, 1024 * world, (1 << 20) * world]:
        x = pattern(n, rank, torch.float32)
        y = torch.empty_like(x)
        dist.all_to_all_single(y, x)
        chunk = n // world
        want = torch.cat([pattern(n, r, torch.float32).cpu()[rank * chunk:(rank + 1) * chunk] for r in range(world)])
        expect(f"all_to_all_single n={n}", y, want)
    for n in ([1, 4096, 1 << 20] if world > 1 else []):
        peer_next, peer_prev = (rank + 1) % world, (rank - 1) % world
        s = pattern(n, rank, torch.float32)
        r_ = torch.empty_like(s)
        if rank % 2 == 0:
            dist.send(s, peer_next)
            dist.recv(r_, peer_prev)
        else:
            dist.recv(r_, peer_prev)
            dist.send(s, peer_next)
        expect(f"send/recv n={n}", r_, pattern(n, peer_prev, torch.float32).cpu())
    dist.barrier()
    record("barrier", True)
    # Subgroups: every rank, and all ranks but rank 0 (rank 0 is not a member).
    for members in [list(range(world))] + ([list(range(1, world))] if world > 1 else []):
        g = dist.new_group(members)
        if rank in members:
            for n in [255, 1 << 20]:
                x = pattern(n, rank, torch.float32)
                dist.all_reduce(x, group=g)
                expect(f"new_group {members} all_reduce n={n}", x, sum(pattern(n, r, torch.float32).cpu() for r in members))
        else:
            record(f"new_group {members}: not a member", True)
        dist.barrier()

    # CUDA graphs: warm up eagerly on a side stream, capture, replay with new inputs.
    def graph_check(name, n, make_io, run, want_fn, replays=3):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        inp, out = make_io(n)
        with torch.cuda.stream(s):
            for _ in range(2):
                inp.copy_(pattern(inp.numel(), rank, inp.dtype, salt=99))
                run(inp, out)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            run(inp, out)
        ok = True
        for k in range(replays):
            inp.copy_(pattern(inp.numel(), rank, inp.dtype, salt=k))
            g.replay()
            torch.cuda.synchronize()
            want = want_fn(inp.numel(), k)
            before = len(checks)
            expect(f"graph {name} n={n} replay {k}", out, want)
            ok = ok and checks[before]["ok"]
        del g
        return ok

    f16 = torch.float16
    for n in [255, 4096, 65536, 1 << 20]:
        graph_check(
            "all_reduce sum f16", n,
            lambda n: (torch.empty(n, dtype=f16, device=dev),) * 2,
            lambda i, o: dist.all_reduce(i),
            lambda m, k: sum(pattern(m, r, torch.float32, salt=k).cpu() for r in range(world)),
        )
        graph_check(
            "all_gather_into_tensor f16", n,
            lambda n: (torch.empty(n, dtype=f16, device=dev), torch.empty(n * world, dtype=f16, device=dev)),
            lambda i, o: dist.all_gather_into_tensor(o, i),
            lambda m, k: torch.cat([pattern(m, r, torch.float32, salt=k).cpu() for r in range(world)]),
        )
        graph_check(
            "reduce_scatter_tensor f16", n,
            lambda n: (torch.empty(n * world, dtype=f16, device=dev), torch.empty(n, dtype=f16, device=dev)),
            lambda i, o: dist.reduce_scatter_tensor(o, i),
            lambda m, k: sum(pattern(m, r, torch.float32, salt=k).cpu() for r in range(world))[
                rank * (m // world):(rank + 1) * (m // world)],
        )
        graph_check(
            "broadcast f16", n,
            lambda n: (torch.empty(n, dtype=f16, device=dev),) * 2,
            lambda i, o: dist.broadcast(i, src=0),
            lambda m, k: pattern(m, 0, torch.float32, salt=k).cpu(),
        )

    # A small tensor-parallel MLP: column-parallel then row-parallel linear layers, all_reduce after each pair.
    gen = torch.Generator().manual_seed(1234)
    hidden, layers, batch = 256, 3, 8
    x = torch.randn(batch, hidden, generator=gen).to(dev, torch.float16)
    shard = 4 * hidden // world
    for _ in range(layers):
        w1 = (torch.randn(hidden, 4 * hidden, generator=gen) / hidden**0.5).to(torch.float16)
        w2 = (torch.randn(4 * hidden, hidden, generator=gen) / (4 * hidden) ** 0.5).to(torch.float16)
        w1s = w1[:, rank * shard:(rank + 1) * shard].contiguous().to(dev)
        w2s = w2[rank * shard:(rank + 1) * shard, :].contiguous().to(dev)
        y = torch.relu(x @ w1s) @ w2s
        dist.all_reduce(y)
        x = x + y
    torch.cuda.synchronize()
    mlp = x.float().flatten().cpu().tolist()
    record("mlp finite", all(v == v and abs(v) < 1e4 for v in mlp))

    failed = sum(not c["ok"] for c in checks)
    print(f"rank {rank}: {len(checks) - failed}/{len(checks)} checks passed "
          f"(torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}, device_id={args.device_id}, "
          f"LD_PRELOAD={os.environ.get('LD_PRELOAD', '')})", flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(f"{args.json}.rank{rank}", "w") as f:
            json.dump({"rank": rank, "world": world, "device_id": args.device_id, "checks": checks, "mlp": mlp,
                       "preload": os.environ.get("LD_PRELOAD", "")}, f)
    dist.destroy_process_group()
    return 1 if failed or not checks else 0


if __name__ == "__main__":
    sys.exit(main())
