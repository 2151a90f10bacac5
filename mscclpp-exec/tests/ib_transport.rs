//! The InfiniBand transport (feature `ib`) without and with RDMA hardware.
//!
//! Everywhere: the handshake's QP info and the memory description's optional key serialize as they should, MTU and
//! link-layer values convert, the transport choice follows `MSCCLPP_TRANSPORT=ib`, and without RDMA devices both
//! sides of a connect fail quickly with an error naming InfiniBand (on a machine that has RDMA devices, these run
//! in a child process whose verbs library cannot be loaded). Ignored unless asked for: with a GPU (and no usable
//! HCA), a cross-host `Communicator::connect` under `MSCCLPP_TRANSPORT=ib` returns that error instead of
//! panicking; with an RDMA device (a real HCA or soft-RoCE), a loopback RDMA WRITE on host memory, more writes
//! than the queue is deep, semaphore updates, and a bad remote key reported with the verbs status text.

#![cfg(feature = "ib")]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{expect_child, is_child, run_ranks, spawn_child, unique_id};
use mscclpp_exec::Error;
use mscclpp_exec::bootstrap::{Bootstrap, TcpBootstrap, UniqueId};
use mscclpp_exec::connection::{Endpoint, Transport, choose_transport_with};
use mscclpp_exec::memory::{HandleDesc, MemoryDesc};
use mscclpp_exec::transport::ib::{Handshake, IbContext, IbLink, QUEUE_DEPTH, QpInfo};
use mscclpp_sys::ib::{LinkLayer, Mtu, Verbs};

/// RDMA devices of this machine, or why there are none.
fn rdma_devices() -> Result<Vec<String>, String> {
    Verbs::global().and_then(|v| v.device_names()).map_err(|e| e.to_string())
}

/// Run `f(rank, bootstrap)` on two threads of one job.
fn two_ranks<F>(job: &str, f: F) -> Vec<mscclpp_exec::Result<()>>
where
    F: Fn(usize, Arc<dyn Bootstrap>) -> mscclpp_exec::Result<()> + Send + Sync + Clone + 'static,
{
    run_ranks(2, unique_id(job), Duration::from_secs(20), move |b| {
        let r = b.rank();
        f(r, Arc::new(b))
    })
}

/// A verbs library that cannot be loaded: no InfiniBand in a child started with it, also where RDMA devices exist.
const NO_VERBS: (&str, &str) = ("MSCCLPP_IBV_SO", "/nonexistent/libibverbs.so.1");

/// Whether the no-device test `test` runs its checks in this process: yes when this machine has no RDMA device
/// (or this is the child). Otherwise it runs `test` in a child without InfiniBand ([`NO_VERBS`]), checks that
/// the child passed and printed `<test>: checked`, and returns false.
fn here_without_rdma_devices(test: &str) -> bool {
    if is_child() || rdma_devices().is_err() {
        return true;
    }
    expect_child(spawn_child(test, &[NO_VERBS]), test, &format!("{test}: checked"));
    false
}

#[test]
fn qp_info_round_trips_and_checks_its_values() {
    let info = QpInfo { qpn: 0x00ab_cdef, psn: 0x12_3456, lid: 0x1f, gid: [0xfe; 16], mtu: 5, link_layer: 2 };
    let json = serde_json::to_vec(&info).expect("encode");
    assert_eq!(serde_json::from_slice::<QpInfo>(&json).expect("decode"), info);
    assert_eq!(info.mtu(1).expect("mtu"), Mtu::B4096);
    assert_eq!(info.link_layer(1).expect("link layer"), LinkLayer::Ethernet);
    let r = info.remote_qp();
    assert_eq!((r.qpn, r.psn, r.lid, r.gid), (info.qpn, info.psn, info.lid, info.gid));
    let hello = Handshake::Info(info.clone());
    assert_eq!(Handshake::from_bytes(&hello.to_bytes().expect("encode"), 1).expect("decode"), hello);

    let bad = QpInfo { mtu: 9, link_layer: 7, ..info };
    let e = bad.mtu(4).expect_err("mtu 9").to_string();
    assert!(e.contains("rank 4") && e.contains("MTU value 9"), "{e}");
    let e = bad.link_layer(4).expect_err("link layer 7").to_string();
    assert!(e.contains("rank 4") && e.contains("link layer value 7"), "{e}");
    for raw in 1..=5 {
        let m = Mtu::from_raw(raw).expect("valid mtu");
        assert_eq!(m.to_raw(), raw);
        assert_eq!(m.bytes(), 128 << raw);
    }
    assert_eq!(mscclpp_exec::transport::ib::path_mtu(Mtu::B4096, Mtu::B2048), Mtu::B2048);
}

#[test]
fn memory_descriptions_carry_an_optional_ib_key() {
    let desc = MemoryDesc {
        ptr: 0x7f00_0000_1000,
        size: 4096,
        host: "a".into(),
        pid: 42,
        device: 0,
        rank: 1,
        handle: HandleDesc::Legacy { handle: vec![7; 64], base_size: 1 << 21, offset: 0x1000 },
        ib_rkey: None,
    };
    // Without a key the payload is what older versions sent and parse.
    let json = serde_json::to_string(&desc).expect("encode");
    assert!(!json.contains("ib_rkey"), "{json}");
    assert_eq!(serde_json::from_str::<MemoryDesc>(&json).expect("decode"), desc);
    // A payload of an older version (no such field at all) still parses.
    let old = r#"{"ptr":4096,"size":8,"host":"h","pid":1,"device":0,"rank":0,
        "handle":{"Vmm":{"server":"s","id":3,"token":[1,2],"size":8,"offset":0}}}"#;
    let parsed: MemoryDesc = serde_json::from_str(old).expect("old payload");
    assert_eq!(parsed.ib_rkey, None);
    assert_eq!(parsed.size, 8);
    // With a key it travels.
    let keyed = MemoryDesc { ib_rkey: Some(0xdead_beef), ..desc };
    let json = serde_json::to_string(&keyed).expect("encode");
    assert!(json.contains("\"ib_rkey\":3735928559"), "{json}");
    assert_eq!(serde_json::from_str::<MemoryDesc>(&json).expect("decode"), keyed);
}

#[test]
fn transport_choice_follows_hosts_and_the_ib_request() {
    let ep = |host: &str, transport| Endpoint { rank: 0, host: host.into(), pid: 1, device: 0, transport };
    let (a, b) = (ep("a", Transport::CudaIpc), ep("b", Transport::CudaIpc));
    assert_eq!(choose_transport_with(&a, &a, false), Transport::CudaIpc);
    assert_eq!(choose_transport_with(&a, &a, true), Transport::CudaIpc, "one host stays on CUDA IPC");
    assert_eq!(choose_transport_with(&a, &b, false), Transport::Ethernet);
    assert_eq!(choose_transport_with(&a, &b, true), Transport::Ib);
    let b_ib = ep("b", Transport::Ib);
    assert_eq!(choose_transport_with(&a, &b_ib, false), Transport::Ethernet, "IB needs both sides to have an HCA");
    assert_eq!(choose_transport_with(&b_ib, &a, false), Transport::Ethernet, "the choice is symmetric");
    assert_eq!(choose_transport_with(&ep("a", Transport::Ib), &b_ib, false), Transport::Ib, "both propose IB");
    assert_eq!(choose_transport_with(&ep("a", Transport::Ib), &a, false), Transport::CudaIpc);
}

#[test]
fn no_device_is_a_clear_ib_error() {
    if !here_without_rdma_devices("no_device_is_a_clear_ib_error") {
        return;
    }
    let e = IbContext::global(0).expect_err("no HCA here");
    assert!(matches!(e, Error::Sys(mscclpp_sys::Error::Ib(_))), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("InfiniBand: "), "{msg}");
    assert!(msg.contains("install") || msg.contains("Ethernet transport"), "says what to do next: {msg}");
    // The failure is remembered, with the same text.
    assert_eq!(IbContext::global(0).expect_err("still none").to_string(), msg);
    assert!(IbContext::opened().is_none());
    println!("no_device_is_a_clear_ib_error: checked");
}

#[test]
fn connect_without_devices_fails_on_both_sides_promptly() {
    if !here_without_rdma_devices("connect_without_devices_fails_on_both_sides_promptly") {
        return;
    }
    let start = Instant::now();
    let results = two_ranks("ib-no-device", |r, b| {
        let peer = 1 - r;
        match IbLink::connect(&b, peer, 5, None) {
            Ok(_) => panic!("rank {r}: connected without an RDMA device"),
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("InfiniBand"), "rank {r}: {msg}");
                assert!(msg.contains(&format!("rank {peer}")), "rank {r} names its peer: {msg}");
                eprintln!("rank {r}: {msg}");
                // The bootstrap outlives a failed connect, as in a real job.
                b.barrier()
            }
        }
    });
    for r in results {
        r.expect("rank");
    }
    // Neither side waited for the 20 s bootstrap timeout.
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    println!("connect_without_devices_fails_on_both_sides_promptly: checked");
}

/// A cross-host `Communicator::connect` with `MSCCLPP_TRANSPORT=ib` and no usable HCA returns an error naming
/// InfiniBand. Two child processes of this test binary play two hosts (`MSCCLPP_HOSTID`); needs a GPU for the
/// communicator.
#[test]
#[ignore = "needs a GPU"]
fn cross_host_connect_without_hca_names_infiniband() {
    if let Some(rank) = mscclpp_config::IB_TEST_CHILD.get().expect("child rank") {
        let rank = rank as usize;
        let id = UniqueId::from_text(&mscclpp_config::IB_TEST_ID.get().expect("id").expect("id")).expect("parse id");
        let b = TcpBootstrap::new(rank, 2, &id, Duration::from_secs(20)).expect("bootstrap");
        let device = mscclpp_exec::sys::driver::Device::open(0).expect("GPU 0");
        let comm = mscclpp_exec::Communicator::new(Arc::new(b), device).expect("communicator");
        match comm.connect(1 - rank, 3) {
            Ok(c) => panic!("rank {rank}: connected over {:?} although no HCA was usable", c.transport()),
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("InfiniBand"), "rank {rank}: {msg}");
                println!("CHILD {rank} OK: {msg}");
            }
        }
        return;
    }
    let gpus = mscclpp_exec::sys::driver::device_count();
    assert!(gpus.as_ref().is_ok_and(|n| *n > 0), "this test needs a GPU for the communicator: {gpus:?}");
    let id = unique_id("ib-cross-host").to_text();
    // Both ranks run at once: each waits for the other in the bootstrap.
    let children: Vec<_> = (0..2)
        .map(|r| {
            let (rank, host) = (r.to_string(), format!("ib-test-host-{r}"));
            spawn_child(
                "cross_host_connect_without_hca_names_infiniband",
                &[
                    ("MSCCLPP_IB_TEST_CHILD", &rank),
                    ("MSCCLPP_IB_TEST_ID", &id),
                    ("MSCCLPP_HOSTID", &host),
                    ("MSCCLPP_TRANSPORT", "ib"),
                    // No such HCA, also on machines that have RDMA devices.
                    ("MSCCLPP_HCA_DEVICES", "no_such_hca_0"),
                ],
            )
        })
        .collect();
    for (r, child) in children.into_iter().enumerate() {
        let stdout = expect_child(child, &format!("child rank {r}"), &format!("CHILD {r} OK"));
        eprintln!("{}", stdout.lines().find(|l| l.contains("CHILD")).unwrap_or_default());
    }
}

/// Words of host memory that peers may write by RDMA: only accessed through atomics.
struct HostWords(Box<[AtomicU64]>);

impl HostWords {
    fn new(n: usize) -> Self {
        HostWords((0..n).map(|_| AtomicU64::new(0)).collect())
    }
    fn addr(&self) -> u64 {
        self.0.as_ptr() as u64
    }
    fn bytes(&self) -> u64 {
        self.0.len() as u64 * 8
    }
}

fn wait_for(word: &AtomicU64, value: u64, what: &str) {
    let start = Instant::now();
    while word.load(Ordering::Acquire) != value {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: saw {} instead of {value}",
            word.load(Ordering::Relaxed)
        );
        std::hint::spin_loop();
    }
}

fn words(b: &Arc<dyn Bootstrap>, peer: usize, tag: u64) -> Vec<u64> {
    let bytes = b.recv(peer, tag).expect("recv");
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
}

fn send_words(b: &Arc<dyn Bootstrap>, peer: usize, tag: u64, w: &[u64]) {
    let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
    b.send(peer, tag, &bytes).expect("send");
}

#[test]
#[ignore = "needs an RDMA device (an InfiniBand HCA or soft-RoCE)"]
fn loopback_rdma_write_on_host_memory() {
    let devices = rdma_devices()
        .unwrap_or_else(|e| panic!("the loopback RDMA test needs an RDMA device (a real HCA or soft-RoCE): {e}"));
    eprintln!("RDMA devices: {devices:?}");
    const N: usize = 1 << 16;
    let results = two_ranks("ib-loopback", |r, b| {
        let link = IbLink::connect(&b, 1 - r, 10, None)?;
        let ctx = link.context();
        eprintln!("rank {r}: {} port {:?}", ctx.device_name(), ctx.port());
        if r == 1 {
            let dst = HostWords::new(N);
            let token = HostWords::new(1);
            // SAFETY: both buffers are only accessed through atomics and outlive every write (rank 0 reports its
            // flush before this scope ends).
            let (dmr, tmr) = unsafe { (ctx.register(dst.addr(), dst.bytes())?, ctx.register(token.addr(), 8)?) };
            send_words(&b, 0, 20, &[dst.addr(), u64::from(dmr.rkey()), token.addr(), u64::from(tmr.rkey())]);
            // 1: the bulk write landed before its signal.
            wait_for(&token.0[0], 1, "first signal");
            for (i, w) in dst.0.iter().enumerate() {
                assert_eq!(w.load(Ordering::Relaxed), i as u64 * 3 + 1, "word {i} after the bulk write");
            }
            // 2: more small writes than the queue is deep, then a signal.
            wait_for(&token.0[0], 2, "second signal");
            for i in 0..(QUEUE_DEPTH as usize * 3) {
                assert_eq!(dst.0[i % N].load(Ordering::Relaxed), (i % N) as u64 + 1_000_000, "word {i}");
            }
            let _ = words(&b, 0, 21); // rank 0 flushed
            // A write with a wrong key on a second link: rank 0 reports it.
            let _bad = IbLink::connect(&b, 0, 11, None)?;
            let _ = words(&b, 0, 22);
            drop(link);
            return Ok(());
        }
        let src = HostWords::new(N);
        for (i, w) in src.0.iter().enumerate() {
            w.store(i as u64 * 3 + 1, Ordering::Relaxed);
        }
        // SAFETY: accessed only through atomics; registered for the rest of the process, and the buffer lives
        // until after the flush below.
        let smr = unsafe { ctx.register(src.addr(), src.bytes())? };
        let w = words(&b, 1, 20);
        let (dst, drkey, token, trkey) = (w[0], w[1] as u32, w[2], w[3] as u32);
        link.write(dst, drkey, src.addr(), src.bytes())?;
        link.update(token, trkey, 1)?;
        link.flush(Duration::from_secs(10))?;
        for i in 0..(QUEUE_DEPTH as usize * 3) {
            let slot = (i % N) as u64;
            src.0[i % N].store(slot + 1_000_000, Ordering::Relaxed);
            link.write(dst + slot * 8, drkey, src.addr() + slot * 8, 8)?;
            if i % N == N - 1 {
                link.flush(Duration::from_secs(10))?;
            }
        }
        link.update(token, trkey, 2)?;
        link.flush(Duration::from_secs(10))?;
        let (posted, completed) = link.counts()?;
        assert_eq!(posted, completed);
        assert!(posted > u64::from(QUEUE_DEPTH) * 3, "{posted} writes posted");
        assert!(link.is_idle()?);
        send_words(&b, 1, 21, &[1]);
        assert!(ctx.lookup(src.addr() + 8, 64).is_some_and(|m| m.lkey() == smr.lkey()), "registration reused");
        // Wrong remote key: the completion fails and the error names the peer and the status.
        let bad = IbLink::connect(&b, 1, 11, None)?;
        bad.write(dst, drkey ^ 0x00ff_ff00, src.addr(), 64)?;
        let e = bad.flush(Duration::from_secs(10)).expect_err("a write with a wrong rkey must fail").to_string();
        assert!(e.contains("rank 1") && e.contains("failed:"), "{e}");
        eprintln!("bad key reported as: {e}");
        // The link stays failed.
        assert!(bad.update(token, trkey, 9).is_err());
        send_words(&b, 1, 22, &[1]);
        Ok(())
    });
    for (r, res) in results.into_iter().enumerate() {
        res.unwrap_or_else(|e| panic!("rank {r}: {e}"));
    }
}
