//! The MPI bootstrap (feature `mpi`): messaging, collectives and a bounded receive that names the rank it
//! waited for. Runs as a singleton MPI process under `cargo test -p mscclpp-exec --features mpi`, and under
//! `mpirun -np N <test binary>` as N ranks.
#![cfg(feature = "mpi")]

use std::time::Duration;

use mscclpp_exec::bootstrap::{Bootstrap, MpiBootstrap};

#[test]
fn messaging_collectives_and_timeout() {
    let b = MpiBootstrap::new(Duration::from_millis(2000)).expect("MPI init");
    let (me, n) = (b.rank(), b.size());
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    b.send(next, 5, format!("hello from {me}").as_bytes()).expect("send");
    b.send(next, 6, b"other").expect("send");
    assert_eq!(b.recv(prev, 6).expect("recv"), b"other".to_vec());
    assert_eq!(b.recv(prev, 5).expect("recv"), format!("hello from {prev}").into_bytes());
    let all = b.all_gather(&[me as u8]).expect("allgather");
    assert_eq!(all, (0..n).map(|r| vec![r as u8]).collect::<Vec<_>>());
    assert_eq!(b.broadcast(0, if me == 0 { b"y" } else { b"" }).expect("bcast"), b"y".to_vec());
    b.barrier().expect("barrier");
    let err = b.recv(me, 99).expect_err("nobody sent tag 99");
    assert!(err.to_string().contains(&format!("[{me}]")), "{err}");
    assert!(b.send(n + 3, 1, b"").is_err());
    b.barrier().expect("barrier");
}
