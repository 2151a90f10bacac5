//! Reduce-scatter: rank `r` ends with slice `r` of the element-wise sum of all inputs. Also the building blocks
//! of the two-shot all-reduce.

use std::ops::Range;

use mscclpp_lang::prelude::*;

use crate::util::{peers, rotated_peers, slot};

/// Per thread block, its `(peer, channel)` pairs.
pub(crate) type SyncChannels<'p> = Vec<Vec<(usize, MemoryChannel<'p, Simple>)>>;

/// For each of `tbs` thread blocks of rank `r`, its own memory channel to every peer, as `(peer, channel)`, the
/// peers in [`rotated_peers`] order (the programs that read or put peer by peer visit them in this order).
///
/// Signals and waits need a channel per thread block (each waits on its own semaphore); the data operations of a
/// thread-block group go through thread block 0's channels. All ranks create them in the same order, so channel
/// `k` from `a` to `b` pairs with channel `k` from `b` to `a`: thread block `t` of `a` talks to thread block `t` of
/// every peer.
pub(crate) fn sync_channels<'p>(
    p: &Program<'p, Simple>,
    r: usize,
    tbs: usize,
) -> Result<SyncChannels<'p>, ProgramError> {
    let n = p.world_size();
    (0..tbs).map(|_| rotated_peers(r, n).map(|q| Ok((q, p.memory_channel(q, r)?))).collect()).collect()
}

/// Every thread block of rank `r` signals, then waits for, every peer: after it, every peer has entered this
/// launch, so its input is ready to be read and its buffers may be written. The signal is relaxed: the launch has
/// written nothing yet, and what earlier kernels wrote is visible from the kernel boundary on (a release would make
/// each block wait for a system-scope fence before its first signal).
pub(crate) fn handshake(
    p: &Program<'_, Simple>,
    r: usize,
    sync: &[Vec<(usize, MemoryChannel<'_, Simple>)>],
) -> Result<(), ProgramError> {
    sync_round(p, r, sync, false)
}

/// A signal (released or relaxed) to and a wait for every peer on each thread block of rank `r`, then a barrier.
fn sync_round(
    p: &Program<'_, Simple>,
    r: usize,
    sync: &[Vec<(usize, MemoryChannel<'_, Simple>)>],
    release: bool,
) -> Result<(), ProgramError> {
    for (t, chans) in sync.iter().enumerate() {
        for (_, ch) in chans {
            if release {
                ch.signal(t, SyncType::None)?;
            } else {
                ch.relaxed_signal(t, SyncType::None)?;
            }
        }
        for (_, ch) in chans {
            ch.wait(t, SyncType::None)?;
        }
        p.barrier(r, &[t])?;
    }
    Ok(())
}

/// Every thread block of rank `r` waits for its earlier operations, then signals (released: its writes go with
/// the signal) to and waits for every peer: after it, whatever the peers wrote into this rank has landed, and the
/// peers have finished reading this rank's buffers.
pub(crate) fn closing_round(
    p: &Program<'_, Simple>,
    r: usize,
    sync: &[Vec<(usize, MemoryChannel<'_, Simple>)>],
) -> Result<(), ProgramError> {
    // Each barrier is a `nop` on its own thread block, so placing them all first leaves every thread block's
    // operations as they would be interleaved.
    for t in 0..sync.len() {
        p.barrier(r, &[t])?;
    }
    sync_round(p, r, sync, true)
}

/// `dst = input(r)[range] + Σ over peers q of input(q)[range]`, read straight from the peers' inputs, spread over
/// `group`: one read-reduce per peer, each ordered after the previous one.
pub(crate) fn reduce_own_slice<'p, K: ChunkKind>(
    p: &Program<'p, Simple>,
    r: usize,
    sync: &SyncChannels<'p>,
    group: &ThreadBlockGroup,
    dst: Chunk<'p, K>,
    range: Range<usize>,
) -> Result<(), ProgramError> {
    let local = p.input(r)?.slice(range.clone())?;
    let data = sync.first().ok_or_else(|| ProgramError::custom("reduce_own_slice needs at least one thread block"))?;
    for (i, (q, ch)) in data.iter().enumerate() {
        let remote = p.input(*q)?.slice(range.clone())?;
        if i == 0 {
            ch.read_reduce(dst, local, &[remote], group, ReduceOp::Sum)?;
        } else {
            for t in group.tbs() {
                p.barrier(r, &[*t])?;
            }
            ch.read_reduce(dst, dst, &[remote], group, ReduceOp::Sum)?;
        }
    }
    Ok(())
}

/// Reduce-scatter over memory channels: each rank reads its slice of every peer's input and reduces it into its
/// output, spread over `n - 1` thread blocks.
///
/// A handshake precedes the reads (peers' inputs are ready); a closing signal/wait round keeps every rank in the
/// launch until all peers have finished reading its input.
#[collective_program(
    name = "reducescatter",
    collective = "reducescatter",
    world_sizes = 2..=8,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (64 * 1024, 8), (1 << 20, 32), (16 << 20, 64)],
    tags(default = 1)
)]
pub fn reducescatter(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let tbs: Vec<usize> = (0..n - 1).collect();
    let group = p.tb_group(&tbs)?;
    let f = p.output(0)?.len();
    for r in 0..n {
        let sync = sync_channels(p, r, tbs.len())?;
        handshake(p, r, &sync)?;
        let out = p.output(r)?.all()?;
        reduce_own_slice(p, r, &sync, &group, out, r * f..(r + 1) * f)?;
        closing_round(p, r, &sync)?;
    }
    Ok(())
}

/// Reduce-scatter in one pass: each rank reads its slice of every peer's input at once and reduces it with its own
/// into its output, spread over a thread-block group of at least 4 thread blocks.
///
/// Where [`reducescatter`] reads one peer after another (and reads and writes its output once per peer), each
/// thread here keeps loads from all peers in flight together and writes the output once; 4 thread blocks per
/// instance let 32 instances fill 128 SMs at 3 to 5 ranks (docs/algorithms.md, "Four ranks and more"). A handshake precedes the
/// pass; a closing signal/wait round keeps every rank in the launch until all peers have finished reading its
/// input.
#[collective_program(
    name = "reducescatter_fused",
    collective = "reducescatter",
    // At 2 ranks there is one peer: [`reducescatter`] already reads it in one pass.
    world_sizes = 3..=8,
    buffer_mode = "both",
    // The tuner's choices on 4 H200s: 32 thread blocks per rank at 2 MiB, 64 at 4-32 MiB, 128 from 64 MiB.
    thread_blocks = [(0, 32), (4 << 20, 64), (64 << 20, 128)],
    // Ahead of `reducescatter` where both apply (measured at 4 ranks from 2 MiB to 1 GiB).
    tags(default = 2)
)]
pub fn reducescatter_fused(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let tbs = one_pass_tbs(n);
    let group = p.tb_group(&tbs)?;
    let f = p.output(0)?.len();
    for r in 0..n {
        let sync = sync_channels(p, r, tbs.len())?;
        handshake(p, r, &sync)?;
        reduce_own_slice_at_once(p, r, &sync, &group, p.output(r)?.all()?, r * f..(r + 1) * f)?;
        closing_round(p, r, &sync)?;
    }
    Ok(())
}

/// The thread blocks of the one-pass programs' group at `n` ranks: `max(n - 1, 4)`, so that 32 instances fill
/// 128 of an H100's or H200's 132 SMs at 2 to 5 ranks.
pub(crate) fn one_pass_tbs(n: usize) -> Vec<usize> {
    (0..(n - 1).max(4)).collect()
}

/// `dst = input(r)[range] + Σ over peers q of input(q)[range]` in one pass: every peer's slice read at once (one
/// `rre` over thread block 0's channels, `sync[0]`), spread over `group`. A following put of `dst` on the same
/// group fuses into the same pass (`rres`).
pub(crate) fn reduce_own_slice_at_once<'p, K: ChunkKind>(
    p: &Program<'p, Simple>,
    r: usize,
    sync: &SyncChannels<'p>,
    group: &ThreadBlockGroup,
    dst: Chunk<'p, K>,
    range: Range<usize>,
) -> Result<(), ProgramError> {
    let data = sync.first().ok_or_else(|| ProgramError::custom("a one-pass reduction needs a thread block"))?;
    let remotes = data
        .iter()
        .map(|(q, ch)| Ok((*ch, p.input(*q)?.slice(range.clone())?)))
        .collect::<Result<Vec<_>, ProgramError>>()?;
    p.rank(r)?.read_reduce(dst, p.input(r)?.slice(range)?, &remotes, group, ReduceOp::Sum)
}

/// Reduce-scatter with LL packets, for small messages: each rank sends every peer that peer's slice of its input
/// as packets into the peer's scratch (one thread block per peer), then reduces its own slice with the packets it
/// received, spread over all its thread blocks.
///
/// Packet flags order the data; the scratch is doubled so that a launch never overwrites packets a peer is still
/// reducing.
#[collective_program(
    name = "reducescatter_ll",
    collective = "reducescatter",
    world_sizes = 2..=8,
    message_sizes = 0..=1 << 20,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (64 * 1024, 8)],
    tags(default = 1)
)]
pub fn reducescatter_ll(p: &mut Program<'_, LL>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::LL_ALIGNMENT);
    let n = p.world_size();
    p.set_double_scratch(true);
    let f = p.output(0)?.len();
    let tbs: Vec<usize> = (0..n - 1).collect();
    let group = p.tb_group(&tbs)?;
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    for r in 0..n {
        let input = p.input(r)?;
        for (t, q) in peers(r, n).enumerate() {
            let s = slot(r, q) * f;
            p.memory_channel(q, r)?.put_packets(scratch[q].slice(s..s + f)?, input.slice(q * f..(q + 1) * f)?, t)?;
        }
        let received = crate::util::received_slots(&scratch, r, f)?;
        let out = p.output(r)?.all()?;
        p.rank(r)?.reduce_packets(out, input.slice(r * f..(r + 1) * f)?, &received, &group, ReduceOp::Sum)?;
    }
    Ok(())
}
