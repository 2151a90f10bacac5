//! Bootstrap over loopback with N threads: messaging, collectives, timeouts that name the missing rank, and
//! refusal of connections that do not know the job secret.

mod common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::{free_addr, run_ranks, unique_id};
use mscclpp_exec::Error;
use mscclpp_exec::bootstrap::{Bootstrap, TcpBootstrap, UniqueId};

fn id() -> UniqueId {
    unique_id("test-job")
}

#[test]
fn send_recv_by_tag_allgather_broadcast_barrier() {
    let results = run_ranks(4, id(), Duration::from_secs(5), |b| {
        let me = b.rank();
        let n = b.size();
        // Tagged messages to the next rank, sent in an order different from the receive order.
        let next = (me + 1) % n;
        let prev = (me + n - 1) % n;
        b.send(next, 7, format!("seven from {me}").as_bytes())?;
        b.send(next, 3, format!("three from {me}").as_bytes())?;
        b.send(next, 3, b"second three")?;
        assert_eq!(b.recv(prev, 3)?, format!("three from {prev}").into_bytes());
        assert_eq!(b.recv(prev, 7)?, format!("seven from {prev}").into_bytes());
        assert_eq!(b.recv(prev, 3)?, b"second three".to_vec());
        // Self-send.
        b.send(me, 1, b"self")?;
        assert_eq!(b.recv(me, 1)?, b"self".to_vec());
        let all = b.all_gather(&[me as u8; 3])?;
        assert_eq!(all, (0..n).map(|r| vec![r as u8; 3]).collect::<Vec<_>>());
        let v = b.broadcast(2, if me == 2 { b"from two" } else { b"" })?;
        assert_eq!(v, b"from two".to_vec());
        for _ in 0..3 {
            b.barrier()?;
        }
        assert_eq!(b.ranks_per_host()?, n);
        Ok(())
    });
    for r in results {
        r.expect("rank failed");
    }
}

#[test]
fn a_rank_that_never_arrives_is_named() {
    let id = id();
    let start = Instant::now();
    // Ranks 0 and 1 of 3 start; rank 2 never does.
    let handles: Vec<_> = (0..2)
        .map(|r| std::thread::spawn(move || TcpBootstrap::new(r, 3, &id, Duration::from_millis(800)).map(|_| ())))
        .collect();
    for h in handles {
        let err = h.join().expect("thread").expect_err("rank 2 is missing");
        let msg = err.to_string();
        assert!(matches!(err, Error::BootstrapTimeout { .. }), "{msg}");
        assert!(msg.contains("[2]"), "the message must name rank 2: {msg}");
    }
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn recv_timeout_names_the_peer() {
    let results = run_ranks(2, id(), Duration::from_millis(400), |b| {
        if b.rank() == 0 {
            std::thread::sleep(Duration::from_millis(50));
            return Ok(());
        }
        let start = Instant::now();
        let err = b.recv(0, 99).expect_err("nobody sends tag 99");
        assert!(start.elapsed() >= Duration::from_millis(200));
        let msg = err.to_string();
        assert!(msg.contains("rank 0") || msg.contains("[0]"), "{msg}");
        Ok(())
    });
    for r in results {
        r.expect("rank failed");
    }
}

#[test]
fn an_all_gather_timeout_names_every_rank_that_did_not_enter() {
    let results = run_ranks(4, id(), Duration::from_millis(600), |b| {
        if b.rank() >= 2 {
            // Ranks 2 and 3 joined the job but never enter the all-gather (they leave after the others gave up).
            std::thread::sleep(Duration::from_millis(2000));
            return Ok(());
        }
        let err = b.all_gather(&[b.rank() as u8]).expect_err("ranks 2 and 3 never contribute");
        match &err {
            Error::BootstrapTimeout { missing, .. } => assert_eq!(missing, &vec![2, 3], "{err}"),
            other => panic!("rank {}: expected a timeout, got {other}", b.rank()),
        }
        Ok(())
    });
    for r in results {
        r.expect("rank failed");
    }
}

#[test]
fn a_peer_that_leaves_is_named_at_once() {
    let results = run_ranks(2, id(), Duration::from_secs(4), |b| {
        if b.rank() == 0 {
            // One message, then this rank's bootstrap is dropped: its connection to rank 1 closes.
            return b.send(1, 1, b"last words");
        }
        assert_eq!(b.recv(0, 1)?, b"last words".to_vec());
        let start = Instant::now();
        let err = b.recv(0, 2).expect_err("rank 0 left");
        assert!(matches!(err, Error::PeerLeft { peer: 0, .. }), "{err}");
        assert_eq!(err.kind(), mscclpp_exec::sys::ErrorKind::PeerLeft);
        assert!(err.to_string().starts_with("rank 0 left the job"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(3), "reported only after {:?}", start.elapsed());
        Ok(())
    });
    for r in results {
        r.expect("rank failed");
    }
}

#[test]
fn a_connection_with_the_wrong_secret_is_refused() {
    let addr = free_addr();
    let good = UniqueId::from_addr(addr, "job-a");
    let bad = UniqueId::from_addr(addr, "job-b");
    let root = std::thread::spawn(move || TcpBootstrap::new(0, 2, &good, Duration::from_millis(1500)).map(|_| ()));
    std::thread::sleep(Duration::from_millis(100));
    let intruder = TcpBootstrap::new(1, 2, &bad, Duration::from_millis(1500));
    let err = intruder.expect_err("wrong secret must be refused");
    assert!(matches!(err, Error::BootstrapRefused { .. }), "{err}");
    // The root never accepted the intruder, so it times out waiting for the real rank 1.
    let root_err = root.join().expect("thread").expect_err("rank 1 never really arrived");
    assert!(root_err.to_string().contains("[1]"), "{root_err}");
}

#[test]
fn unique_id_text_round_trip_and_address_forms() {
    let id = UniqueId::new().expect("id");
    assert_eq!(UniqueId::from_text(&id.to_text()).expect("parse"), id);
    assert_eq!(UniqueId::parse_addr("127.0.0.1:1234").expect("ip:port"), "127.0.0.1:1234".parse().expect("addr"));
    assert_eq!(
        UniqueId::parse_addr("lo:127.0.0.1:1234").expect("ifname:ip:port"),
        "127.0.0.1:1234".parse().expect("addr")
    );
    assert!(UniqueId::parse_addr("nonsense").is_err());
}

#[test]
fn a_taken_rendezvous_port_is_skipped_within_the_span() {
    // Something else listens on the base port (and never speaks): rank 0 moves to the next port, the others
    // find it there because only the job's rendezvous passes the handshake.
    let squatter = TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut id = UniqueId::from_addr(squatter.local_addr().expect("addr"), "span-job");
    id.port_span = 4;
    let results = run_ranks(3, id, Duration::from_secs(8), |b| {
        let all = b.all_gather(&[b.rank() as u8])?;
        assert_eq!(all, vec![vec![0], vec![1], vec![2]]);
        Ok(())
    });
    for r in results {
        r.expect("rank failed");
    }
    drop(squatter);
}

/// Two threads per rank (as two executors on one communicator set up their contexts), each running 200
/// all-gathers under its own tag at once: every all-gather returns its own thread's contributions.
#[test]
fn concurrent_tagged_all_gathers_keep_their_messages_apart() {
    let results = run_ranks(3, id(), Duration::from_secs(10), |b| {
        let b = std::sync::Arc::new(b);
        let me = b.rank();
        let n = b.size();
        let workers: Vec<_> = (0..2u8)
            .map(|w| {
                let b = b.clone();
                std::thread::spawn(move || -> mscclpp_exec::Result<usize> {
                    let mut checked = 0;
                    for k in 0..200u8 {
                        let got = b.all_gather_tagged(100 + w as u64, &[w, me as u8, k])?;
                        let want: Vec<Vec<u8>> = (0..n).map(|r| vec![w, r as u8, k]).collect();
                        assert_eq!(got, want, "worker {w} on rank {me}, round {k}");
                        checked += 1;
                    }
                    Ok(checked)
                })
            })
            .collect();
        for h in workers {
            assert_eq!(h.join().expect("worker panicked")?, 200);
        }
        // A tag in the bootstrap's reserved range is refused with an error that says so.
        let err = b.all_gather_tagged(mscclpp_exec::bootstrap::RESERVED_TAG_BASE, &[]).expect_err("reserved tag");
        assert!(err.to_string().contains("reserved"), "{err}");
        Ok(())
    });
    assert_eq!(results.len(), 3);
    for r in results {
        r.expect("rank failed");
    }
}
