"""Every torch.distributed collective through the NCCL backend, checked value by value; run it with and without
LD_PRELOAD=libmscclpp_nccl.so and compare the two JSON files it writes.

    torchrun --nproc-per-node 2 torch_collectives.py --json /tmp/run.json [--device-id]
    python3 torch_collectives.py --compare /tmp/nccl.json /tmp/mscclpp.json

Eager calls allocate fresh tensors each time (the caching allocator hands out reused pieces) and free them
between calls, up to 256 MiB. CUDA graphs are captured the five ways torch users and serving engines do:
torch.cuda.graph(g) after eager warm-up on the default stream; warm-up and capture on one side stream; a size
never called eagerly; several sizes in one memory pool, captured largest first and replayed in any order (vLLM);
and a capture on one stream while another stream runs eager collectives. Every graph is replayed with new
inputs and every value compared. With the library preloaded, each call's path (zero copy, registered, staged,
window, NCCL) is read from its counters and checked against what the library says it takes (its window and this
machine's tuned table). A small tensor-parallel MLP (fixed random weights) records its output, which --compare
checks with allclose. Each rank writes JSON_PATH.rank<r>; the exit status is non-zero if any check failed. The
script ends with a bounded destroy_process_group (20 s), then exits.
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
        # The path checks exist only in a run with the library.
        names_a = [c["name"] for c in a["checks"] if not c["name"].startswith("path ")]
        names_b = [c["name"] for c in b["checks"] if not c["name"].startswith("path ")]
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


def bounded_exit(code):
    """destroy_process_group can hang for over 30 s on this torch and NCCL: give it 20 s, then exit anyway."""
    import threading

    import torch.distributed as dist

    t = threading.Thread(target=dist.destroy_process_group, daemon=True)
    t.start()
    t.join(20)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


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

    # Which path ran, read from the library's counters (with LD_PRELOAD only), and whether the library says it
    # takes the call (its window and this machine's tuned table): ours must have run exactly where it says so.
    f16 = torch.float16
    lib = None
    if "libmscclpp_nccl" in os.environ.get("LD_PRELOAD", ""):
        import ctypes

        lib = ctypes.CDLL(None)
        lib.mscclpp_nccl_path_counts.restype = ctypes.c_size_t
        lib.mscclpp_nccl_would_run.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_int]
    op_index = {"all_reduce": 0, "all_gather_into_tensor": 1, "reduce_scatter_tensor": 2, "broadcast": 3}
    nccl_type = {torch.float16: 6, torch.bfloat16: 9, torch.float32: 7}
    routes = ["zero-copy", "registered", "staged", "window", "nccl"]
    nroutes = len(routes)

    def counts():
        if lib is None:
            return [0] * 4 * nroutes
        import ctypes

        n = lib.mscclpp_nccl_path_counts(None, 0)
        buf = (ctypes.c_uint64 * n)()
        lib.mscclpp_nccl_path_counts(buf, n)
        return list(buf)

    paths = []

    def check_route(name, op, piece_bytes, dt, before, after):
        if lib is None:
            return
        row = op_index[op] * nroutes
        took = [routes[i] for i in range(nroutes) if after[row + i] > before[row + i]]
        want_ours = lib.mscclpp_nccl_would_run(op_index[op], world, piece_bytes, nccl_type[dt]) == 1
        ran_ours = bool(took) and "nccl" not in took
        paths.append({"name": name, "op": op, "bytes": piece_bytes, "took": took, "ours_expected": want_ours})
        record(f"path {name}: {'+'.join(took) or 'none'} (library says {'ours' if want_ours else 'nccl'})",
               bool(took) and ran_ours == want_ours)

    def collective(op, n, dt):
        """(input, output, run, piece bytes, want(k) on the device) for n elements of one rank's piece."""
        if op == "all_reduce":
            t = torch.empty(n, dtype=dt, device=dev)
            return t, t, lambda: dist.all_reduce(t), n * t.element_size(), lambda k: gsum(n, k, dt)
        if op == "all_gather_into_tensor":
            i, o = torch.empty(n, dtype=dt, device=dev), torch.empty(n * world, dtype=dt, device=dev)
            return i, o, lambda: dist.all_gather_into_tensor(o, i), n * i.element_size(), \
                lambda k: torch.cat([gpat(n, r, dt, k) for r in range(world)])
        i, o = torch.empty(n * world, dtype=dt, device=dev), torch.empty(n, dtype=dt, device=dev)
        return i, o, lambda: dist.reduce_scatter_tensor(o, i), n * o.element_size(), \
            lambda k: gsum(n * world, k, dt)[rank * n:(rank + 1) * n]

    def gpat(n, r, dt, salt):
        i = torch.arange(n, device=dev, dtype=torch.int64)
        return (((i * 7 + r * 3 + salt) % 5) + 1).to(dt)

    def gsum(n, salt, dt):
        acc = torch.zeros(n, device=dev, dtype=torch.float32)
        for r in range(world):
            acc += gpat(n, r, torch.float32, salt)
        return acc.to(dt)

    def fill(inp, salt):
        inp.copy_(gpat(inp.numel(), rank, inp.dtype, salt))

    def gexpect(name, got, want):
        bad = got.float() != want.float()
        if bool(bad.any()):
            i = int(bad.flatten().nonzero()[0])
            record(name, False, f"element {i}: got {got.flatten()[i].item()}, want {want.flatten()[i].item()}")
        else:
            record(name, True)

    def replay_checks(name, g, inp, out, want, replays=3):
        for k in range(replays):
            fill(inp, 10 + k)
            g.replay()
            torch.cuda.synchronize()
            gexpect(f"{name} replay {k}", out, want(10 + k))

    # Eager on buffers of every size class up to 256 MiB (zero copy, registered, staged or NCCL, by size).
    for op in ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"]:
        for nbytes in [1 << 10, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28]:
            n = nbytes // 2 if op != "all_gather_into_tensor" else nbytes // 2 // world
            inp, out, run, piece, want = collective(op, n, f16)
            for k in range(2):
                fill(inp, k)
                before = counts()
                run()
                after = counts()
                torch.cuda.synchronize()
                gexpect(f"eager {op} f16 {nbytes} B call {k}", out, want(k))
                if k == 0:
                    check_route(f"eager {op} f16 {nbytes} B", op, piece, f16, before, after)
            del inp, out, run

    # CUDA graphs, the five ways torch users capture collectives.
    def pattern_default(op, n, dt):
        """Eager warm-up on the default stream, then torch.cuda.graph(g) on its own capture stream."""
        inp, out, run, piece, want = collective(op, n, dt)
        for k in range(2):
            fill(inp, k)
            run()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        before = counts()
        with torch.cuda.graph(g):
            run()
        check_route(f"graph default-stream warm-up {op} {dt} n={n}", op, piece, dt, before, counts())
        replay_checks(f"graph default-stream warm-up {op} {dt} n={n}", g, inp, out, want)

    def pattern_side(op, n, dt):
        """Warm-up and capture on one side stream."""
        inp, out, run, piece, want = collective(op, n, dt)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for k in range(2):
                fill(inp, k)
                run()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        before = counts()
        with torch.cuda.graph(g, stream=s):
            run()
        check_route(f"graph side stream {op} {dt} n={n}", op, piece, dt, before, counts())
        replay_checks(f"graph side stream {op} {dt} n={n}", g, inp, out, want)

    def pattern_cold(op, n, dt):
        """A size captured with no eager call of it before."""
        inp, out, run, piece, want = collective(op, n, dt)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        before = counts()
        with torch.cuda.graph(g):
            run()
        check_route(f"graph cold {op} {dt} n={n}", op, piece, dt, before, counts())
        replay_checks(f"graph cold {op} {dt} n={n}", g, inp, out, want)

    def pattern_pool(op, ns, dt):
        """vLLM: graphs of several sizes in one memory pool, captured largest first, replayed in any order."""
        pool = torch.cuda.graph_pool_handle()
        graphs = []
        for n in sorted(ns, reverse=True):
            inp, out, run, piece, want = collective(op, n, dt)
            fill(inp, 0)
            run()
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            before = counts()
            with torch.cuda.graph(g, pool=pool):
                run()
            check_route(f"graph pool {op} {dt} n={n}", op, piece, dt, before, counts())
            graphs.append((n, g, inp, out, want))
        order = [graphs[i % len(graphs)] for i in (2, 0, 1, 1, 0, 2)]
        for j, (n, g, inp, out, want) in enumerate(order):
            replay_checks(f"graph pool {op} {dt} n={n} (turn {j})", g, inp, out, want, replays=1)

    def pattern_concurrent(op, n, dt):
        """Capture on one stream while another thread runs an eager collective of the same communicator on another
        stream (the capture in thread-local mode, so the other thread's calls are allowed; the calls are issued in
        the same order on every rank: the captured one, then the eager one)."""
        import threading

        inp, out, run, piece, want = collective(op, n, dt)
        y_in, y_out, y_run, y_piece, y_want = collective(op, n, dt)
        s2 = torch.cuda.Stream()
        for k in range(2):
            fill(inp, k)
            run()
        with torch.cuda.stream(s2):
            fill(y_in, 0)
            y_run()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        seen = []

        def eager():
            try:
                torch.cuda.set_device(dev)
                with torch.cuda.stream(s2):
                    fill(y_in, 5)
                    before = counts()
                    y_run()
                    seen.append((before, counts()))
                s2.synchronize()
            except Exception as e:
                seen.append(e)

        with torch.cuda.graph(g, capture_error_mode="thread_local"):
            run()
            t = threading.Thread(target=eager)
            t.start()
            t.join(60)
        if len(seen) != 1 or isinstance(seen[0], Exception):
            record(f"eager during a capture {op} {dt} n={n}", False, repr(seen))
        else:
            check_route(f"eager during a capture {op} {dt} n={n}", op, y_piece, dt, *seen[0])
            gexpect(f"eager during a capture {op} {dt} n={n}", y_out, y_want(5))
        replay_checks(f"graph beside eager calls {op} {dt} n={n}", g, inp, out, want)

    for op in ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"]:
        sizes = [512, 1 << 15, 1 << 19, 1 << 23]
        for n in sizes:
            try:
                pattern_default(op, n, f16)
                pattern_side(op, n, f16)
                pattern_cold(op, n, f16)
                pattern_concurrent(op, n, f16)
            except Exception as e:  # a failed capture is a failed check, not a crashed run
                record(f"graph patterns {op} n={n}", False, repr(e))
        for dt in [torch.bfloat16, torch.float32]:
            for n in [512, 1 << 19]:
                try:
                    pattern_default(op, n, dt)
                except Exception as e:
                    record(f"graph default-stream warm-up {op} {dt} n={n}", False, repr(e))
        try:
            pattern_pool(op, [256, 1 << 14, 1 << 20], f16)
        except Exception as e:
            record(f"graph pool {op}", False, repr(e))
    for n in [255, 4096, 65536]:
        b = torch.empty(n, dtype=f16, device=dev)
        for k in range(2):
            b.copy_(gpat(n, rank, f16, k))
            dist.broadcast(b, src=0)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            dist.broadcast(b, src=0)
        for k in range(3):
            b.copy_(gpat(n, rank, f16, 20 + k))
            g.replay()
            torch.cuda.synchronize()
            gexpect(f"graph broadcast f16 n={n} replay {k}", b, gpat(n, 0, f16, 20 + k))
        del g

    # Symmetric windows, the way torch asks NCCL for them: one ncclMemAlloc pool (the backend's mem_allocator)
    # registered with register_mem_pool(pool, symm=True); collectives on views at the same offsets on every rank,
    # in place and out of place, eager and in a graph. With the library, calls our window path takes run zero
    # copy there ("window"); the LL plans run zero copy anyway.
    def window_checks():
        backend = dist.group.WORLD._get_backend(dev)
        pool = torch.cuda.MemPool(backend.mem_allocator)
        span = (1 << 23) * world  # fp16 elements: a reduce-scatter's 16 MiB piece times the ranks
        with torch.cuda.use_mem_pool(pool):
            whole = torch.zeros(2 * span, dtype=f16, device=dev)
        backend.register_mem_pool(pool, symm=True)
        for op in ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"]:
            for nbytes in [1 << 10, 1 << 16, 1 << 20, 1 << 22, 1 << 24]:
                n = nbytes // 2 if op != "all_gather_into_tensor" else nbytes // 2 // world
                for inplace in (True, False):
                    if op == "all_reduce":
                        # In place only (torch's all_reduce): the second run at another offset of the window.
                        at = 0 if inplace else span + 4096
                        i = o = whole[at:at + n]
                        run = (lambda i=i: dist.all_reduce(i))
                        piece, want = n * 2, (lambda k, n=n: gsum(n, k, f16))
                    elif op == "all_gather_into_tensor":
                        o = whole[span:span + n * world]
                        i = o[rank * n:(rank + 1) * n] if inplace else whole[:n]
                        run = (lambda i=i, o=o: dist.all_gather_into_tensor(o, i))
                        piece = n * 2
                        want = lambda k, n=n: torch.cat([gpat(n, r, f16, k) for r in range(world)])
                    else:
                        i = whole[:n * world]
                        o = i[rank * n:(rank + 1) * n] if inplace else whole[span:span + n]
                        run = (lambda i=i, o=o: dist.reduce_scatter_tensor(o, i))
                        piece = n * 2
                        want = lambda k, n=n: gsum(n * world, k, f16)[rank * n:(rank + 1) * n]
                    name = f"window {op} f16 {nbytes} B {'in place' if inplace else 'out of place'}"
                    for k in range(2):
                        fill(i, k)
                        before = counts()
                        run()
                        after = counts()
                        torch.cuda.synchronize()
                        gexpect(f"{name} eager call {k}", o, want(k))
                        if k == 0:
                            check_route(name, op, piece, f16, before, after)
                    g = torch.cuda.CUDAGraph()
                    before = counts()
                    with torch.cuda.graph(g):
                        run()
                    check_route(f"{name} graph", op, piece, f16, before, counts())
                    replay_checks(f"{name} graph", g, i, o, want)
                    del g
        return pool, whole

    window_keep = None  # the pool stays registered (and alive) to the end of the run
    try:
        window_keep = window_checks()
    except Exception as e:
        record("symmetric window checks", False, repr(e))

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

    if lib is not None and rank == 0:
        print("# path per call (from the library's counters; 'library says' = its window and tuned table)")
        for pth in paths:
            print(f"{pth['name']:<70} {'+'.join(pth['took']) or 'none':<12} "
                  f"{'ours' if pth['ours_expected'] else 'nccl'}")
        c = counts()
        for op, i in op_index.items():
            print(f"# {op}: " + ", ".join(f"{c[i * nroutes + j]} {routes[j]}" for j in range(nroutes)))
    del window_keep
    failed = sum(not c["ok"] for c in checks)
    print(f"rank {rank}: {len(checks) - failed}/{len(checks)} checks passed "
          f"(torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}, device_id={args.device_id}, "
          f"LD_PRELOAD={os.environ.get('LD_PRELOAD', '')})", flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(f"{args.json}.rank{rank}", "w") as f:
            json.dump({"rank": rank, "world": world, "device_id": args.device_id, "checks": checks, "mlp": mlp,
                       "preload": os.environ.get("LD_PRELOAD", "")}, f)
    return bounded_exit(1 if failed or not checks else 0)


if __name__ == "__main__":
    sys.exit(main())
