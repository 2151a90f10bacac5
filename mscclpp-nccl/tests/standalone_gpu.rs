//! The accelerated path end to end without any real NCCL: two ranks (child processes of this test, sharing GPU 0
//! through `MSCCLPP_SHARED_GPU=1`) call the exported NCCL functions directly: our own unique id, init, every
//! accelerated collective inside the size window with values checked, both buffer paths (zero copy on the
//! application's buffers, and staged) on buffers freed and reallocated between calls, tiny all-reduces
//! (padded), broadcasts from each root, a call we do not take (an invalid usage that says why, since no
//! NCCL can take it), a CUDA graph replayed with new inputs, a skipped call whose device wait timeout
//! surfaces through `ncclCommGetAsyncError` and `ncclGetLastError`, destroy. A second test, on two GPUs, runs a
//! symmetric window (`ncclMemAlloc`, `ncclCommWindowRegister`) whose calls run a plan that addresses the caller's
//! buffers, zero copy.
//!
//! This is the check that also runs on a one-GPU host, where NCCL itself refuses two ranks on one GPU
//! ("Duplicate GPU detected"). Run it with `--include-ignored` (the GPU suite does).

use std::ffi::{CStr, c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mscclpp_exec::GpuBuffer;
use mscclpp_nccl::abi::{self, NcclComm, NcclUniqueId};
use mscclpp_nccl::exports as nccl;
use mscclpp_sys::driver::{Device, Graph, Stream};

const RANK_VAR: &str = "NCCL_SHIM_TEST_RANK";
const DIR_VAR: &str = "NCCL_SHIM_TEST_DIR";
const TEST: &str = "two_ranks_share_a_gpu_without_a_real_nccl";

#[test]
#[ignore = "needs a GPU (two ranks share GPU 0 through MSCCLPP_SHARED_GPU=1)"]
fn two_ranks_share_a_gpu_without_a_real_nccl() {
    two_ranks(TEST, &[("CUDA_VISIBLE_DEVICES", "0"), ("MSCCLPP_SHARED_GPU", "1")], rank_main);
}

#[test]
#[ignore = "needs two GPUs"]
fn a_symmetric_window_on_two_gpus_without_a_real_nccl() {
    two_ranks(WINDOW_TEST, &[], window_main);
}

const WINDOW_TEST: &str = "a_symmetric_window_on_two_gpus_without_a_real_nccl";

/// Run `main` as two ranks: this test binary again, once per rank, with `env` (as the parent when already a rank).
fn two_ranks(test: &str, env: &[(&str, &str)], main: fn(usize, &Path) -> usize) {
    if let (Ok(rank), Ok(dir)) = (std::env::var(RANK_VAR), std::env::var(DIR_VAR)) {
        let rank: usize = rank.parse().expect("rank");
        let passed = main(rank, Path::new(&dir));
        println!("rank {rank}: {passed} checks passed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("mscclpp-nccl-standalone-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let exe = std::env::current_exe().expect("test binary");
    let children: Vec<_> = (0..2)
        .map(|r| {
            let mut c = Command::new(&exe);
            c.args([test, "--exact", "--include-ignored", "--nocapture", "--test-threads=1"])
                .env(RANK_VAR, r.to_string())
                .env(DIR_VAR, &dir)
                .env("MSCCLPP_BOOTSTRAP_TIMEOUT_MS", "20000")
                .env("MSCCLPP_WAIT_TIMEOUT_MS", "5000")
                .env_remove("MSCCLPP_NCCL_LIB_PATH")
                .env_remove("LD_PRELOAD");
            // The library picks rank mod visible GPUs; shared, both ranks' buffers are on GPU 0.
            for (k, v) in env {
                c.env(k, v);
            }
            c.spawn().expect("spawning a rank")
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(240);
    for (r, mut c) in children.into_iter().enumerate() {
        loop {
            if let Some(status) = c.try_wait().expect("waiting") {
                assert!(status.success(), "rank {r} failed ({status}); its output is above");
                break;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                panic!("rank {r} did not finish within 240 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn last_error() -> String {
    // SAFETY: ncclGetLastError returns a NUL-terminated string that stays valid (kept history).
    unsafe { CStr::from_ptr(nccl::ncclGetLastError(std::ptr::null_mut())) }.to_string_lossy().into_owned()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn read_f32(buf: &GpuBuffer, n: usize) -> Vec<f32> {
    let mut b = vec![0u8; n * 4];
    buf.read(0, &mut b).expect("read");
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Element i of rank r: small integers, exact in f32 sums.
fn pattern(n: usize, r: usize, salt: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 + r * 3 + salt) % 11) as f32).collect()
}

fn unique_id(rank: usize, dir: &Path) -> NcclUniqueId {
    let file = dir.join("id");
    let mut id = NcclUniqueId { internal: [0; abi::UNIQUE_ID_BYTES] };
    if rank == 0 {
        // SAFETY: a valid out-pointer.
        let r = unsafe { nccl::ncclGetUniqueId(&mut id) };
        assert_eq!(r, abi::SUCCESS, "ncclGetUniqueId: {}", last_error());
        let bytes: Vec<u8> = id.internal.iter().map(|c| *c as u8).collect();
        let tmp: PathBuf = dir.join("id.tmp");
        std::fs::write(&tmp, bytes).expect("writing the id");
        std::fs::rename(&tmp, &file).expect("publishing the id");
        return id;
    }
    let start = Instant::now();
    loop {
        if let Ok(b) = std::fs::read(&file)
            && b.len() == abi::UNIQUE_ID_BYTES
        {
            for (o, v) in id.internal.iter_mut().zip(b) {
                *o = v as std::ffi::c_char;
            }
            return id;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "rank 0 published no unique id");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait (bounded) until the other rank has written the marker `name` in `dir`, after writing ours.
fn meet(dir: &Path, rank: usize, name: &str) {
    std::fs::write(dir.join(format!("{name}-{rank}")), b"").expect("marker");
    let other = dir.join(format!("{name}-{}", 1 - rank));
    let start = Instant::now();
    while !other.exists() {
        assert!(start.elapsed() < Duration::from_secs(90), "the other rank did not reach `{name}`");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Panics naming `what` and the first element where `got` differs from `want`.
fn same(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: element {i}: got {}, want {}", got[i], want[i]);
    }
}

/// The sum over `world` ranks of their [`pattern`]s of `n` elements.
fn summed(n: usize, world: usize, salt: usize) -> Vec<f32> {
    // Each rank's pattern once (per element it would be quadratic: minutes at 1 MiB).
    let patterns: Vec<Vec<f32>> = (0..world).map(|r| pattern(n, r, salt)).collect();
    (0..n).map(|i| patterns.iter().map(|p| p[i]).sum()).collect()
}

/// Where a rank is, on stderr (a rank that stops shows where).
fn progress(rank: usize, what: &str) {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let t = START.get_or_init(Instant::now).elapsed();
    eprintln!("rank {rank}: {:>7.2} s: {what}", t.as_secs_f64());
}

fn zero_copy(comm: NcclComm) -> u64 {
    mscclpp_nccl::comm::zero_copy_calls(comm).expect("our communicator is set up")
}

fn rank_main(rank: usize, dir: &Path) -> usize {
    let world = 2;
    let id = unique_id(rank, dir);
    let mut comm: NcclComm = std::ptr::null_mut();
    // SAFETY: valid out-pointer; the id came from ncclGetUniqueId.
    let r = unsafe { nccl::ncclCommInitRank(&mut comm, world as c_int, id, rank as c_int) };
    assert_eq!(r, abi::SUCCESS, "ncclCommInitRank: {}", last_error());
    let mut v: c_int = -1;
    // SAFETY: our communicator, a valid out-pointer.
    assert_eq!(unsafe { nccl::ncclCommUserRank(comm, &mut v) }, abi::SUCCESS);
    assert_eq!(v as usize, rank);
    // SAFETY: as above.
    assert_eq!(unsafe { nccl::ncclCommCount(comm, &mut v) }, abi::SUCCESS);
    assert_eq!(v, world as c_int);
    let device = Device::open(0).expect("GPU 0");
    let stream = Stream::new(&device).expect("stream");
    let s = stream.raw() as *mut c_void;
    let sync = || stream.synchronize(Duration::from_secs(30)).expect("sync");
    let mut checks = 0;
    let mut check = |name: &str, got: Vec<f32>, want: Vec<f32>| {
        same(&format!("rank {rank}: {name}"), &got, &want);
        checks += 1;
    };
    let sum = |n: usize, salt: usize| summed(n, world, salt);
    let max = |n: usize, salt: usize| -> Vec<f32> {
        let patterns: Vec<Vec<f32>> = (0..world).map(|r| pattern(n, r, salt)).collect();
        (0..n).map(|i| patterns.iter().map(|p| p[i]).fold(f32::MIN, f32::max)).collect()
    };
    progress(rank, "all-reduce");
    // All-reduce: out of place through the staging buffers (the plan runs in place), in place on the
    // application's buffers (zero copy); 1 and 255 elements (4 and 1020 B) no plan splits, padded through the
    // staging buffers.
    for n in [1usize, 255, 4096, 65536] {
        // Fresh buffers for every call.
        let send = GpuBuffer::new(&device, n * 4).expect("send");
        let recv = GpuBuffer::new(&device, n * 4).expect("recv");
        send.write(0, &f32s(&pattern(n, rank, 0))).expect("write");
        let before = zero_copy(comm);
        // SAFETY: device buffers of n f32 each, our communicator and stream.
        let r = unsafe { nccl::ncclAllReduce(send.ptr() as _, recv.ptr() as _, n, abi::FLOAT32, abi::SUM, comm, s) };
        assert_eq!(r, abi::SUCCESS, "ncclAllReduce n={n}: {}", last_error());
        sync();
        check(&format!("allreduce sum n={n}"), read_f32(&recv, n), sum(n, 0));
        // SAFETY: as above, in place.
        let r = unsafe { nccl::ncclAllReduce(send.ptr() as _, send.ptr() as _, n, abi::FLOAT32, abi::MAX, comm, s) };
        assert_eq!(r, abi::SUCCESS, "ncclAllReduce max n={n}: {}", last_error());
        sync();
        check(&format!("allreduce max in place n={n}"), read_f32(&send, n), max(n, 0));
        let padded = n * 4 % 1024 != 0;
        check(
            &format!("zero-copy calls, all-reduce n={n}"),
            vec![(zero_copy(comm) - before) as f32],
            vec![if padded { 0.0 } else { 1.0 }],
        );
    }
    progress(rank, "all-gather, reduce-scatter, broadcast");
    for n in [1usize, 1000, 16384] {
        let send = GpuBuffer::new(&device, n * 4).expect("send");
        let recv = GpuBuffer::new(&device, n * 4 * world).expect("recv");
        send.write(0, &f32s(&pattern(n, rank, 1))).expect("write");
        let before = zero_copy(comm);
        // SAFETY: n f32 in, n * world out.
        let r = unsafe { nccl::ncclAllGather(send.ptr() as _, recv.ptr() as _, n, abi::FLOAT32, comm, s) };
        assert_eq!(r, abi::SUCCESS, "ncclAllGather n={n}: {}", last_error());
        sync();
        check(
            &format!("allgather n={n}"),
            read_f32(&recv, n * world),
            (0..world).flat_map(|r| pattern(n, r, 1)).collect(),
        );
        if n == 16384 {
            check("allgather of 64 KiB ran zero copy", vec![(zero_copy(comm) - before) as f32], vec![1.0]);
        }

        let send = GpuBuffer::new(&device, n * 4 * world).expect("send");
        let recv = GpuBuffer::new(&device, n * 4).expect("recv");
        send.write(0, &f32s(&pattern(n * world, rank, 2))).expect("write");
        let before = zero_copy(comm);
        // SAFETY: n * world f32 in, n out.
        let r =
            unsafe { nccl::ncclReduceScatter(send.ptr() as _, recv.ptr() as _, n, abi::FLOAT32, abi::SUM, comm, s) };
        assert_eq!(r, abi::SUCCESS, "ncclReduceScatter n={n}: {}", last_error());
        sync();
        check(
            &format!("reducescatter n={n}"),
            read_f32(&recv, n),
            sum(n * world, 2)[rank * n..(rank + 1) * n].to_vec(),
        );
        if n == 16384 {
            check("reduce-scatter of 64 KiB pieces ran zero copy", vec![(zero_copy(comm) - before) as f32], vec![1.0]);
        }

        // Broadcast from each root, in place (ncclBcast) and out of place.
        for root in 0..world {
            let buf = GpuBuffer::new(&device, n * 4).expect("buf");
            buf.write(0, &f32s(&pattern(n, rank, 3 + root))).expect("write");
            // SAFETY: n f32, in place.
            let r = unsafe { nccl::ncclBcast(buf.ptr() as _, n, abi::FLOAT32, root as c_int, comm, s) };
            assert_eq!(r, abi::SUCCESS, "ncclBcast n={n} root {root}: {}", last_error());
            sync();
            check(&format!("bcast n={n} root {root}"), read_f32(&buf, n), pattern(n, root, 3 + root));
            let out = GpuBuffer::new(&device, n * 4).expect("out");
            // SAFETY: n f32 in, n f32 out.
            let r =
                unsafe { nccl::ncclBroadcast(buf.ptr() as _, out.ptr() as _, n, abi::FLOAT32, root as c_int, comm, s) };
            assert_eq!(r, abi::SUCCESS, "ncclBroadcast n={n} root {root}: {}", last_error());
            sync();
            check(&format!("broadcast n={n} root {root}"), read_f32(&out, n), pattern(n, root, 3 + root));
        }
    }
    progress(rank, "reallocated buffers");
    // Freed and reallocated between calls (the allocator hands the same addresses back with other contents),
    // and the ranks' placements differ: rank 0 in place (zero copy), rank 1 out of place (staged). Both run the
    // same plan, so the ranks agree.
    let n = 4096;
    for round in 0..4 {
        let a = GpuBuffer::new(&device, n * 4).expect("a");
        let b = GpuBuffer::new(&device, n * 4).expect("b");
        a.write(0, &f32s(&pattern(n, rank, 20 + round))).expect("write");
        let out = if rank == 0 { &a } else { &b };
        // SAFETY: device buffers of n f32, our communicator and stream.
        let r = unsafe { nccl::ncclAllReduce(a.ptr() as _, out.ptr() as _, n, abi::FLOAT32, abi::SUM, comm, s) };
        assert_eq!(r, abi::SUCCESS, "ncclAllReduce round {round}: {}", last_error());
        sync();
        check(&format!("reallocated round {round}"), read_f32(out, n), sum(n, 20 + round));
    }
    progress(rank, "two streams");
    // Two streams back to back, no host synchronization between: the second call waits for the first.
    let stream2 = Stream::new(&device).expect("second stream");
    let n = 8192;
    let (a, b) = (GpuBuffer::new(&device, n * 4).expect("a"), GpuBuffer::new(&device, n * 4).expect("b"));
    a.write(0, &f32s(&pattern(n, rank, 5))).expect("write");
    b.write(0, &f32s(&pattern(n, rank, 6))).expect("write");
    // SAFETY: device buffers of n f32, in place, our communicator, two live streams.
    let r = unsafe {
        let r1 = nccl::ncclAllReduce(a.ptr() as _, a.ptr() as _, n, abi::FLOAT32, abi::SUM, comm, s);
        let r2 = nccl::ncclAllReduce(
            b.ptr() as _,
            b.ptr() as _,
            n,
            abi::FLOAT32,
            abi::SUM,
            comm,
            stream2.raw() as *mut c_void,
        );
        (r1, r2)
    };
    assert_eq!(r, (abi::SUCCESS, abi::SUCCESS), "{}", last_error());
    sync();
    stream2.synchronize(Duration::from_secs(30)).expect("sync");
    check("first stream", read_f32(&a, n), sum(n, 5));
    check("second stream", read_f32(&b, n), sum(n, 6));

    progress(rank, "a product");
    // Not ours (a product): only NCCL could take it, and there is none.
    let big = GpuBuffer::new(&device, 4096).expect("big");
    // SAFETY: 1 Ki f32 in place.
    let r = unsafe { nccl::ncclAllReduce(big.ptr() as _, big.ptr() as _, 1024, abi::FLOAT32, abi::PROD, comm, s) };
    assert!(last_error().contains("MSCCLPP_NCCL_LIB_PATH"), "{}", last_error());
    check("a product goes to NCCL", vec![r as f32], vec![abi::INVALID_USAGE as f32]);

    progress(rank, "graph");
    // A CUDA graph: an out-of-place all-reduce (staged) and an in-place one on a buffer never used before (zero
    // copy: its context does not depend on the buffer, so capture sets nothing up), both of a shape that already
    // ran eagerly (n = 4096, sum), captured and replayed with new inputs.
    let n = 4096;
    let send = GpuBuffer::new(&device, n * 4).expect("send");
    let recv = GpuBuffer::new(&device, n * 4).expect("recv");
    // One eager call on this stream first (the captured calls run on their own lane, which needs no eager call).
    send.write(0, &f32s(&pattern(n, rank, 9))).expect("write");
    // SAFETY: device buffers of n f32, our communicator and stream.
    let r = unsafe { nccl::ncclAllReduce(send.ptr() as _, recv.ptr() as _, n, abi::FLOAT32, abi::SUM, comm, s) };
    assert_eq!(r, abi::SUCCESS, "ncclAllReduce before the capture: {}", last_error());
    sync();
    check("before the capture", read_f32(&recv, n), sum(n, 9));
    let fresh = GpuBuffer::new(&device, n * 4).expect("fresh");
    let before = zero_copy(comm);
    let graph = Graph::capture(&stream, || {
        // SAFETY: device buffers of n f32, our communicator, the capturing stream.
        let r = unsafe { nccl::ncclAllReduce(send.ptr() as _, recv.ptr() as _, n, abi::FLOAT32, abi::SUM, comm, s) };
        assert_eq!(r, abi::SUCCESS, "captured ncclAllReduce: {}", last_error());
        // SAFETY: as above, in place.
        let r = unsafe { nccl::ncclAllReduce(fresh.ptr() as _, fresh.ptr() as _, n, abi::FLOAT32, abi::SUM, comm, s) };
        assert_eq!(r, abi::SUCCESS, "captured in-place ncclAllReduce: {}", last_error());
        Ok(())
    })
    .expect("capture");
    check("captured zero-copy call", vec![(zero_copy(comm) - before) as f32], vec![1.0]);
    for k in 0..3 {
        send.write(0, &f32s(&pattern(n, rank, 10 + k))).expect("write");
        fresh.write(0, &f32s(&pattern(n, rank, 30 + k))).expect("write");
        // Both ranks have their new input in place before either replays (the file system is the barrier).
        meet(dir, rank, &format!("ready-{k}"));
        graph.launch(&stream).expect("replay");
        sync();
        check(&format!("graph replay {k}"), read_f32(&recv, n), sum(n, 10 + k));
        check(&format!("graph replay {k}, zero copy"), read_f32(&fresh, n), sum(n, 30 + k));
    }
    let mut e = abi::INTERNAL_ERROR;
    // SAFETY: our communicator, a valid out-pointer.
    assert_eq!(unsafe { nccl::ncclCommGetAsyncError(comm, &mut e) }, abi::SUCCESS);
    check("no async error", vec![e as f32], vec![abi::SUCCESS as f32]);

    progress(rank, "skipped call");
    // Rank 1 skips a call: rank 0's kernel waits for it, its device wait times out (MSCCLPP_WAIT_TIMEOUT_MS),
    // and ncclCommGetAsyncError reports it with the peer, plan, thread block and operation as the last error.
    // The trap poisons rank 0's CUDA context, so this comes last.
    meet(dir, rank, "skip");
    if rank == 0 {
        let x = GpuBuffer::new(&device, n * 4).expect("x");
        // SAFETY: n f32 in place, our communicator and stream.
        let r = unsafe { nccl::ncclAllReduce(x.ptr() as _, x.ptr() as _, n, abi::FLOAT32, abi::SUM, comm, s) };
        assert_eq!(r, abi::SUCCESS, "the launch itself succeeds: {}", last_error());
        let start = Instant::now();
        let mut polls = 0u64;
        let mut idle_reported = false;
        loop {
            if !idle_reported {
                // Ok(true): the kernel ended by itself; an error: it trapped (a device wait that expired stops its
                // kernel with a trap after writing its report), which loses the context.
                let idle = stream.is_idle();
                if !matches!(idle, Ok(false)) {
                    eprintln!("rank 0: the stream went idle after {:?}: {idle:?}", start.elapsed());
                    idle_reported = true;
                }
            }
            let mut e = abi::SUCCESS;
            // SAFETY: our communicator, a valid out-pointer.
            assert_eq!(unsafe { nccl::ncclCommGetAsyncError(comm, &mut e) }, abi::SUCCESS);
            polls += 1;
            if e != abi::SUCCESS {
                check("async error after a skipped call", vec![e as f32], vec![abi::REMOTE_ERROR as f32]);
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "no async error within 90 s ({polls} polls; CUDA context lost: {})",
                mscclpp_sys::driver::context_lost()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let why = last_error();
        let missing: Vec<&str> = ["peer rank 1", "thread block", "operation", "plan `", "MSCCLPP_WAIT_TIMEOUT_MS"]
            .into_iter()
            .filter(|part| !why.contains(part))
            .collect();
        assert!(missing.is_empty(), "the last error does not name {missing:?}: {why}");
        check("the last error names peer, plan, thread block, operation", vec![missing.len() as f32], vec![0.0]);
        // The communicator is unusable now: a further call returns the error at once.
        // SAFETY: as above.
        let r = unsafe { nccl::ncclAllReduce(x.ptr() as _, x.ptr() as _, n, abi::FLOAT32, abi::SUM, comm, s) };
        check("a call after the async error", vec![r as f32], vec![abi::REMOTE_ERROR as f32]);
        println!("rank 0: async error after {:?}, {polls} polls: {why}", start.elapsed());
    }
    progress(rank, "reported");
    meet(dir, rank, "reported");
    // SAFETY: our communicator, destroyed once.
    assert_eq!(unsafe { nccl::ncclCommDestroy(comm) }, abi::SUCCESS);
    // Every check above ran.
    // All-reduce 4 × 3; all-gather and reduce-scatter 3 × 2 and 2 zero-copy counts; broadcasts 3 sizes × 2 roots ×
    // 2; reallocated 4; two streams 2; a product, before the capture, the captured count 3; replays
    // 3 × 2; no async error 1; rank 0's async error 3. (The symmetric window has a test of its own.)
    let want = 4 * 3 + 3 * 2 + 2 + 3 * 2 * 2 + 4 + 2 + 3 + 3 * 2 + 1 + if rank == 0 { 3 } else { 0 };
    assert_eq!(checks, want, "{checks} checks ran");
    checks
}

/// A symmetric window on two GPUs (rank r on GPU r), without a real NCCL: ncclMemAlloc memory (ours) registered
/// with NCCL_WIN_COLL_SYMMETRIC, and a plan whose peers write into the caller's buffers (the rotated all-reduce,
/// registered as a user plan so that it runs at 1 MiB). Calls inside the window run it zero copy ("window"
/// path), at any offset, eagerly and in a graph; after deregistration the same buffer takes another path, with
/// the same results.
fn window_main(rank: usize, dir: &Path) -> usize {
    let world = 2;
    let id = unique_id(rank, dir);
    let device = Device::open(rank).expect("this rank's GPU");
    let mut comm: NcclComm = std::ptr::null_mut();
    // SAFETY: valid out-pointer; the id came from ncclGetUniqueId.
    let r = unsafe { nccl::ncclCommInitRank(&mut comm, world as c_int, id, rank as c_int) };
    assert_eq!(r, abi::SUCCESS, "ncclCommInitRank: {}", last_error());
    let stream = Stream::new(&device).expect("stream");
    let s = stream.raw() as *mut c_void;
    let sync = || stream.synchronize(Duration::from_secs(30)).expect("sync");
    let mut checks = 0;
    // A first call sets our communicator up (the window's calls then find it ready).
    let warm = GpuBuffer::new(&device, 4096).expect("warm-up buffer");
    // SAFETY: 1 Ki f32 in place, our communicator and stream.
    let r = unsafe { nccl::ncclAllReduce(warm.ptr() as _, warm.ptr() as _, 1024, abi::FLOAT32, abi::SUM, comm, s) };
    assert_eq!(r, abi::SUCCESS, "warm-up: {}", last_error());
    sync();
    // A symmetric window: ncclMemAlloc memory (ours: no real NCCL) registered with NCCL_WIN_COLL_SYMMETRIC, and a
    // plan whose peers write into the caller's buffers (the rotated all-reduce, registered as a user plan so
    // that it runs at 1 MiB): calls inside the window run it zero copy ("window" path), at any offset, eagerly
    // and in a graph; after deregistration the same buffer takes another path, with the same results.
    let target = mscclpp_lang::registry::Target::new(world).inplace(true);
    let plan = mscclpp_lang::registry::compile_target("allreduce_rotated", &target).expect("allreduce_rotated").plan;
    assert!(
        !mscclpp_exec::executor::ExecutionPlan::new((*plan).clone()).expect("plan").buffers_independent(),
        "the window check needs a plan that addresses the caller's buffers remotely"
    );
    progress(rank, "window: plan compiled");
    mscclpp_nccl::user_plans::register((*plan).clone(), "standalone test").expect("user plan");
    // Twice: on cuMemAlloc memory (legacy IPC), then on ncclMemAlloc memory (cuMem, shared as file descriptors).
    let legacy = GpuBuffer::new(&device, 8 << 20).expect("cuMemAlloc window");
    for memory in ["cuMemAlloc", "ncclMemAlloc"] {
        checks +=
            window_pass(rank, dir, comm, &device, &stream, memory, (memory == "cuMemAlloc").then(|| legacy.ptr()));
    }
    // SAFETY: our communicator, destroyed once.
    assert_eq!(unsafe { nccl::ncclCommDestroy(comm) }, abi::SUCCESS);
    // Per pass: 4 calls × 2, the captured count, 2 replays, after deregistration 2.
    assert_eq!(checks, 2 * (4 * 2 + 1 + 2 + 2), "{checks} checks ran");
    checks
}

/// One pass of [`window_main`] on 8 MiB of `memory` (`given`, else from ncclMemAlloc): calls at several offsets,
/// a graph, deregistration. Returns the checks made.
#[allow(clippy::too_many_arguments)]
fn window_pass(
    rank: usize,
    dir: &Path,
    comm: NcclComm,
    device: &Device,
    stream: &Stream,
    memory: &str,
    given: Option<u64>,
) -> usize {
    let world = 2;
    let s = stream.raw() as *mut c_void;
    let sync = || stream.synchronize(Duration::from_secs(30)).expect("sync");
    let mut checks = 0;
    let mut check = |name: &str, got: Vec<f32>, want: Vec<f32>| {
        same(&format!("rank {rank}: {memory}: {name}"), &got, &want);
        checks += 1;
    };
    let sum = |n: usize, salt: usize| summed(n, world, salt);
    let window_calls = || mscclpp_nccl::state::totals()[mscclpp_exec::frontend::Path::Window as usize];
    let mib = 1usize << 20;
    let mut base: *mut c_void = std::ptr::null_mut();
    match given {
        Some(p) => base = p as *mut c_void,
        None => {
            // SAFETY: a valid out-pointer.
            let r = unsafe { nccl::ncclMemAlloc(&mut base, 8 * mib) };
            assert_eq!(r, abi::SUCCESS, "ncclMemAlloc: {}", last_error());
        }
    }
    progress(rank, &format!("window on {memory} memory"));
    let mut win: abi::NcclWindow = std::ptr::null_mut();
    // SAFETY: our communicator, 8 MiB of ncclMemAlloc memory, a valid out-pointer.
    let r = unsafe { nccl::ncclCommWindowRegister(comm, base, 8 * mib, &mut win, abi::WIN_COLL_SYMMETRIC) };
    assert_eq!(r, abi::SUCCESS, "ncclCommWindowRegister: {}", last_error());
    progress(rank, "window: registered");
    let n = mib / 4;
    let at = |offset: usize| base as u64 + offset as u64;
    let put = |offset: usize, v: &[f32]| {
        mscclpp_sys::driver::copy_to_device(device, at(offset), v.len() * 4, &f32s(v)).expect("write");
    };
    let get = |offset: usize| -> Vec<f32> {
        let mut b = vec![0u8; n * 4];
        mscclpp_sys::driver::copy_from_device(device, at(offset), n * 4, &mut b).expect("read");
        b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    };
    let allreduce = |offset: usize| {
        // SAFETY: n f32 in place inside the window, our communicator and stream.
        let r = unsafe { nccl::ncclAllReduce(at(offset) as _, at(offset) as _, n, abi::FLOAT32, abi::SUM, comm, s) };
        assert_eq!(r, abi::SUCCESS, "ncclAllReduce in the window at {offset}: {}", last_error());
    };
    for (k, offset) in [0, 2 * mib, 0, 5 * mib].into_iter().enumerate() {
        put(offset, &pattern(n, rank, 40 + k));
        meet(dir, rank, &format!("{memory}-window-{k}"));
        let before = window_calls();
        let t = Instant::now();
        allreduce(offset);
        sync();
        progress(rank, &format!("window on {memory}: call at {offset} took {:?}", t.elapsed()));
        check(&format!("window all-reduce at {offset}"), get(offset), sum(n, 40 + k));
        check(&format!("window path at {offset}"), vec![(window_calls() - before) as f32], vec![1.0]);
    }
    let before = window_calls();
    progress(rank, "window graph");
    let graph = Graph::capture(stream, || {
        allreduce(3 * mib);
        Ok(())
    })
    .expect("capture in the window");
    check("captured window call", vec![(window_calls() - before) as f32], vec![1.0]);
    for k in 0..2 {
        put(3 * mib, &pattern(n, rank, 50 + k));
        meet(dir, rank, &format!("{memory}-window-graph-{k}"));
        graph.launch(stream).expect("replay");
        sync();
        check(&format!("window graph replay {k}"), get(3 * mib), sum(n, 50 + k));
    }
    drop(graph);
    progress(rank, "window deregistered");
    // SAFETY: the window registered above, deregistered once.
    assert_eq!(unsafe { nccl::ncclCommWindowDeregister(comm, win) }, abi::SUCCESS);
    put(0, &pattern(n, rank, 60));
    meet(dir, rank, &format!("{memory}-window-gone"));
    let before = window_calls();
    allreduce(0);
    sync();
    check("after deregistration", get(0), sum(n, 60));
    check("no window path after deregistration", vec![(window_calls() - before) as f32], vec![0.0]);
    if given.is_none() {
        // SAFETY: ncclMemAlloc's pointer, freed once, after the stream is idle.
        assert_eq!(unsafe { nccl::ncclMemFree(base) }, abi::SUCCESS);
    }
    checks
}
