//! Channel pairing: the k-th channel of a type from rank `a` to rank `b` pairs with the k-th channel from `b` to
//! `a`. A ring's "next" and "prev" channels reach the same peer at 2 ranks, so the natural ring signals on one
//! channel and waits on the other: the build must say so, naming both channels.

use mscclpp_lang::prelude::*;
use mscclpp_lang::verify::{VerifyOptions, verify};

/// A ring all-reduce over memory channels as a new user writes it: each rank makes a channel to its next rank
/// (to put and signal) and one to its previous rank (to wait on), on one thread block. `one_channel_per_peer`
/// reuses the "next" channel as "prev" when both reach the same peer.
fn ring_allreduce<'p>(p: &mut Program<'p, Simple>, one_channel_per_peer: bool) -> Result<(), ProgramError> {
    let n = p.world_size();
    let len = p.output(0)?.len() / n;
    let chunk = |b: &Buffer<'p, Output>, c: usize| b.slice(c * len..(c + 1) * len);
    let mut next_ch = Vec::new();
    let mut prev_ch = Vec::new();
    for r in 0..n {
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let to_next = p.memory_channel(next, r)?;
        let to_prev = if one_channel_per_peer && next == prev { to_next } else { p.memory_channel(prev, r)? };
        next_ch.push(to_next);
        prev_ch.push(to_prev);
    }
    let out: Vec<_> = (0..n).map(|r| p.output(r)).collect::<Result<_, _>>()?;
    let scratch: Vec<_> = (0..n).map(|r| p.scratch(r, n * len)).collect::<Result<_, _>>()?;
    for (r, o) in out.iter().enumerate() {
        p.rank(r)?.copy(o.all()?, p.input(r)?.all()?, 0)?;
    }
    // Reduce-scatter: at step s rank r sends its partial sum of chunk r - s to the next rank, which adds it.
    for s in 0..n - 1 {
        for r in 0..n {
            let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
            let c = (r + n - s) % n;
            next_ch[r].put(scratch[next].slice(c * len..(c + 1) * len)?, chunk(&out[r], c)?, 0)?;
            next_ch[r].signal(0, SyncType::Both)?;
            prev_ch[r].wait(0, SyncType::Both)?;
            let c = (prev + n - s) % n;
            let partial = scratch[r].slice(c * len..(c + 1) * len)?;
            p.rank(r)?.reduce(chunk(&out[r], c)?, chunk(&out[r], c)?, &[partial], 0, ReduceOp::Sum)?;
        }
    }
    // All-gather: rank r now holds the sum of chunk r + 1 and passes finished chunks along the ring.
    for s in 0..n - 1 {
        for r in 0..n {
            let next = (r + 1) % n;
            let c = (r + 1 + n - s) % n;
            next_ch[r].put(chunk(&out[next], c)?, chunk(&out[r], c)?, 0)?;
            next_ch[r].signal(0, SyncType::Both)?;
            prev_ch[r].wait(0, SyncType::Both)?;
        }
    }
    Ok(())
}

fn spec(n: usize) -> ProgramSpec {
    ProgramSpec::new("ring_allreduce", Collective::AllReduce, n).chunk_factor(n)
}

fn opts() -> VerifyOptions {
    VerifyOptions { schedules: 8, size: Some(4096), ..VerifyOptions::default() }
}

#[test]
fn natural_ring_at_two_ranks_fails_at_build_time_naming_the_channels() {
    let e = build_plan(&spec(2), |p| ring_allreduce(p, false)).unwrap_err();
    assert!(matches!(e, ProgramError::MispairedChannel { src: 0, dst: 1, k: 0, signals: 2, waits: 0, .. }), "{e:?}");
    let text = e.to_string();
    for part in [
        "rank 0's memory channel 0 to rank 1 (created at mscclpp-lang/tests/channel_pairing.rs:",
        "pairs with rank 1's memory channel 0 to rank 0 (created at mscclpp-lang/tests/channel_pairing.rs:",
        "a ring's next and prev",
    ] {
        assert!(text.contains(part), "missing {part:?} in: {text}");
    }
}

#[test]
fn ring_with_one_channel_per_peer_builds_and_verifies_at_two_ranks() {
    let plan = build_plan(&spec(2), |p| ring_allreduce(p, true)).unwrap();
    let report = verify(&plan, &opts());
    assert!(report.findings.is_empty(), "{:#?}", report.findings.iter().map(|f| &f.message).collect::<Vec<_>>());
}

#[test]
fn natural_ring_builds_and_verifies_from_three_ranks() {
    for n in [3, 4] {
        let plan = build_plan(&spec(n), |p| ring_allreduce(p, false)).unwrap();
        let report = verify(&plan, &opts());
        assert!(
            report.findings.is_empty(),
            "{n} ranks: {:#?}",
            report.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
        );
    }
}

/// The per-rank-pair totals balance here (rank 0 signals twice and rank 1 waits twice), but on different channels.
#[test]
fn signal_and_wait_on_channels_that_do_not_pair() {
    let e = build_plan(&ProgramSpec::new("mispaired", Collective::Test, 2), |p: &mut Program<'_, Simple>| {
        let a = p.memory_channel(1, 0)?;
        let b = p.memory_channel(1, 0)?;
        let _b0 = p.memory_channel(0, 1)?;
        let b1 = p.memory_channel(0, 1)?;
        a.signal(0, SyncType::None)?;
        b.signal(0, SyncType::None)?;
        b1.wait(0, SyncType::None)?;
        b1.wait(0, SyncType::None)
    })
    .unwrap_err();
    assert!(matches!(e, ProgramError::MispairedChannel { k: 0, signals: 1, waits: 0, .. }), "{e:?}");
}

/// A wait on a channel that has no paired channel on the peer at all: the signal on the peer's channel that does
/// exist is reported, unmatched.
#[test]
fn wait_on_a_channel_without_a_pair() {
    let e = build_plan(&ProgramSpec::new("unpaired", Collective::Test, 2), |p: &mut Program<'_, Simple>| {
        let a = p.memory_channel(1, 0)?;
        let _b0 = p.port_channel(0, 1)?;
        let _ = a;
        let b = p.memory_channel(0, 1)?;
        let c = p.memory_channel(0, 1)?;
        a.signal(0, SyncType::None)?;
        c.wait(0, SyncType::None)?;
        let _ = b;
        Ok(())
    })
    .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ProgramError::MispairedChannel { .. }), "{e:?}");
    assert!(text.contains("rank 0's memory channel 0 to rank 1"), "{text}");
}

/// With the per-channel check off, only the per-rank-pair totals must balance.
#[test]
fn the_per_channel_check_can_be_turned_off() {
    let mispaired = |check: bool| {
        build_plan(&ProgramSpec::new("mispaired", Collective::Test, 2), move |p: &mut Program<'_, Simple>| {
            p.set_channel_pairing_check(check);
            let a = p.memory_channel(1, 0)?;
            let _b = p.memory_channel(1, 0)?;
            let _c = p.memory_channel(0, 1)?;
            let d = p.memory_channel(0, 1)?;
            a.signal(0, SyncType::None)?;
            d.wait(0, SyncType::None)
        })
    };
    assert!(matches!(mispaired(true), Err(ProgramError::MispairedChannel { .. })));
    assert!(mispaired(false).is_ok());
}
