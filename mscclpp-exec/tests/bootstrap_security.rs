//! The bootstrap's trust boundary on loopback, with the real TCP bootstrap and ranks as threads: a connection
//! without the job secret, garbage bytes, a slow-loris client and a port scan, against the rendezvous while the
//! job gathers and against a rank's listener while it runs. Each is dropped and the job goes on. The listeners
//! bind only the chosen interface.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::unique_id;
use mscclpp_exec::bootstrap::wire::{self, MAGIC, NONCE_LEN};
use mscclpp_exec::bootstrap::{Bootstrap, HANDSHAKE_TIMEOUT, TcpBootstrap, UniqueId};

/// How long a dropped client may wait for the server to close its connection.
fn drop_bound() -> Duration {
    HANDSHAKE_TIMEOUT + Duration::from_secs(3)
}

/// Waits until the server closes `s` (end of stream or reset), reading and discarding what it sends. Returns
/// the bytes received; panics when the connection is still open after [`drop_bound`].
fn wait_closed(s: &mut TcpStream, what: &str) -> Vec<u8> {
    let start = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return got,
        }
        assert!(
            start.elapsed() < drop_bound(),
            "{what}: the server kept the connection open for {:?}",
            start.elapsed()
        );
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
            Ok(s) => return s,
            Err(e) if Instant::now() >= deadline => panic!("connecting to {addr}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// A client that speaks the protocol with the wrong secret: refused before any "OK".
fn wrong_secret(addr: SocketAddr) {
    let mut s = connect(addr);
    let mut hello = [0u8; 8 + NONCE_LEN];
    s.set_read_timeout(Some(drop_bound())).expect("timeout");
    s.read_exact(&mut hello).expect("the listener greets every connection");
    assert_eq!(&hello[..8], MAGIC);
    let mut reply = Vec::new();
    reply.extend_from_slice(MAGIC);
    reply.extend_from_slice(&1u64.to_le_bytes());
    reply.extend_from_slice(&wire::mac(&[0x55; 32], &hello[8..], 1));
    reply.extend_from_slice(&[9u8; NONCE_LEN]);
    s.write_all(&reply).expect("write");
    let rest = wait_closed(&mut s, "wrong secret");
    assert!(rest.is_empty(), "a client with the wrong secret got an answer: {rest:?}");
}

/// A client that sends garbage.
fn garbage(addr: SocketAddr) {
    let mut s = connect(addr);
    let junk: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let _ = s.write_all(&junk);
    let rest = wait_closed(&mut s, "garbage");
    // Only the greeting (magic + nonce) may come back.
    assert!(rest.len() <= 8 + NONCE_LEN, "garbage got {} bytes back", rest.len());
}

/// A client that sends a valid-looking reply one byte at a time, too slowly: dropped by the handshake deadline.
fn slow_loris(addr: SocketAddr) {
    let mut s = connect(addr);
    let start = Instant::now();
    s.set_nonblocking(true).expect("nonblocking");
    let mut buf = [0u8; 256];
    let mut sent = 0usize;
    loop {
        assert!(start.elapsed() < drop_bound(), "slow loris: still connected after {:?}", start.elapsed());
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
        if s.write_all(&MAGIC[sent % MAGIC.len()..sent % MAGIC.len() + 1]).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(250));
    }
    let held = start.elapsed();
    assert!(
        held >= HANDSHAKE_TIMEOUT - Duration::from_millis(500),
        "dropped after {held:?}: too early to be the deadline"
    );
}

/// Many connections opened and closed at once, as a port scanner does.
fn port_scan(addr: SocketAddr) {
    for _ in 0..200 {
        drop(connect(addr));
    }
}

/// Every kind of intruder at `addr`: the port scan first, then the others connected concurrently; `during` runs
/// while they are connected (the rendezvous closes once the job has gathered, so the job joins then). Returns
/// when each intruder was dropped.
fn attack(addr: SocketAddr, during: impl FnOnce()) {
    port_scan(addr);
    let kinds: [fn(SocketAddr); 3] = [wrong_secret, garbage, slow_loris];
    let hs: Vec<_> = kinds
        .iter()
        .map(|f| {
            let f = *f;
            std::thread::spawn(move || f(addr))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    during();
    for h in hs {
        h.join().expect("an intruder check failed");
    }
}

#[test]
fn intruders_at_the_rendezvous_and_at_a_rank_do_not_disturb_the_job() {
    let id = unique_id("security-job");
    let n = 3;
    let timeout = Duration::from_secs(30);
    // The ranks meet after the intruders are connected to the rendezvous, and again after the intruders went at
    // rank 1's listener.
    let started = Arc::new(Barrier::new(n));
    let attacked = Arc::new(Barrier::new(n + 1));
    let listen = Arc::new(std::sync::Mutex::new(None::<SocketAddr>));
    let ranks: Vec<_> = (0..n)
        .map(|r| {
            let (started, attacked, listen) = (started.clone(), attacked.clone(), listen.clone());
            std::thread::spawn(move || -> mscclpp_exec::Result<()> {
                if r != 0 {
                    started.wait();
                }
                let b = TcpBootstrap::new(r, n, &id, timeout)?;
                let all = b.all_gather(&[r as u8; 3])?;
                assert_eq!(all, (0..n).map(|p| vec![p as u8; 3]).collect::<Vec<_>>());
                if r == 1 {
                    *listen.lock().expect("lock") = Some(b.listen_addr());
                }
                b.barrier()?;
                attacked.wait();
                // The job still talks after its rank 1 was attacked.
                let next = (r + 1) % n;
                b.send(next, 5, format!("from {r}").as_bytes())?;
                let prev = (r + n - 1) % n;
                assert_eq!(b.recv(prev, 5)?, format!("from {prev}").into_bytes());
                b.barrier()
            })
        })
        .collect();
    // Once rank 0's rendezvous listens, attack it and release the other ranks while the attack goes on.
    drop(connect(id.addr));
    attack(id.addr, || {
        started.wait();
    });
    let target = loop {
        if let Some(a) = *listen.lock().expect("lock") {
            break a;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    attack(target, || {});
    attacked.wait();
    for (r, h) in ranks.into_iter().enumerate() {
        h.join().expect("rank thread").unwrap_or_else(|e| panic!("rank {r}: {e}"));
    }
}

fn other_loopback() -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))
}

#[test]
fn the_listeners_bind_only_the_chosen_interface() {
    let id = unique_id("bind-job");
    let root = std::thread::spawn(move || TcpBootstrap::new(0, 2, &id, Duration::from_secs(20)));
    // The rendezvous is up on 127.0.0.1 and nowhere else.
    let _ = connect(id.addr);
    let elsewhere = SocketAddr::new(other_loopback(), id.addr.port());
    let err = TcpStream::connect_timeout(&elsewhere, Duration::from_secs(2)).expect_err("rendezvous on 127.0.0.2");
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    let one = TcpBootstrap::new(1, 2, &id, Duration::from_secs(20)).expect("rank 1");
    let zero = root.join().expect("thread").expect("rank 0");
    for b in [&zero, &one] {
        let a = b.listen_addr();
        assert_eq!(a.ip(), id.addr.ip(), "rank {} listens on {a}", b.rank());
        let err = TcpStream::connect_timeout(&SocketAddr::new(other_loopback(), a.port()), Duration::from_secs(2))
            .expect_err("listener on 127.0.0.2");
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    }
    let zero = std::thread::spawn(move || zero.barrier());
    one.barrier().expect("the job still works");
    zero.join().expect("thread").expect("the job still works on rank 0");
}

#[test]
fn a_listener_without_the_secret_is_not_trusted_by_a_connecting_rank() {
    // Something that greets like a bootstrap listener but cannot prove the secret: the rank refuses it instead
    // of sending it the job's messages.
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = squatter.local_addr().expect("addr");
    let fake = std::thread::spawn(move || {
        let (mut s, _) = squatter.accept().expect("accept");
        s.write_all(MAGIC).expect("magic");
        s.write_all(&[3u8; NONCE_LEN]).expect("nonce");
        let mut reply = [0u8; 8 + 8 + 32 + NONCE_LEN];
        s.read_exact(&mut reply).expect("reply");
        s.write_all(b"OK").expect("ok");
        s.write_all(&[0u8; 32]).expect("forged proof");
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        rest
    });
    let id = UniqueId::from_addr(addr, "squatted-job");
    let err = TcpBootstrap::new(1, 2, &id, Duration::from_secs(5)).expect_err("a forged listener must be refused");
    assert!(err.to_string().contains("does not hold the job secret"), "{err}");
    let leaked = fake.join().expect("fake listener");
    assert!(leaked.is_empty(), "the rank sent {} bytes to a listener it did not trust", leaked.len());
}
