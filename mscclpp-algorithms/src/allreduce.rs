//! All-reduce: every rank ends with the element-wise sum of all inputs.

use mscclpp_lang::prelude::*;

use crate::reducescatter::{closing_round, handshake, reduce_own_slice, sync_channels};
use crate::util::{peers, slot};

/// One-shot all-reduce with LL packets, for small messages: every rank sends its whole input as packets into a
/// slot of every peer's scratch, then adds what its peers sent to its own input. Thread block `t` handles chunk
/// `t` of the buffer, both sending and reducing it.
///
/// No signals: packet flags order the data. The scratch is doubled so that a launch never overwrites packets a peer
/// is still reducing; in place, each thread block finishes sending its chunk before overwriting it.
#[collective_program(
    name = "allreduce_oneshot_ll",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 0..=256 * 1024,
    buffer_mode = "both",
    // Measured on 2×H200 (results/2026-11-22-4341e45-2xH200/tune-small-2xH200.log): 256 threads per block up to 16 KiB, 512 from 32 KiB.
    thread_blocks = [(0, 4, 256), (8 * 1024, 8, 256), (32 * 1024, 16, 512)],
    tags(default = 1)
)]
pub fn allreduce_oneshot_ll(p: &mut Program<'_, LL>) -> Result<(), ProgramError> {
    oneshot_packets(p, crate::util::LL_ALIGNMENT)
}

/// [`allreduce_oneshot_ll`] on LL128 lines (docs/executor.md, "LL128 lines"), for two ranks: every rank sends its
/// whole input once, as the two-shot sends two halves, so at two ranks both move the same bytes each way, but the
/// one-shot's data crosses the link once instead of twice (no reduced half is sent back). On 2 × H200 the tuner
/// chose it at 256 KiB, 512 KiB and 2 MiB (4.2, 5.1 and 10.6 µs; `results/2026-11-28-2xH200-s24/call1/`); from
/// 8 MiB it is slower than the staged Simple two-shot (32.9 µs at 8 MiB, 64.0 at 16), so its range stops at 4 MiB,
/// the two-shot's, where the default selector prefers the two-shot (its `default` tag is 2, this one's 1): tables
/// name it. From three ranks it sends `n - 1` times the message.
///
/// Chunks are multiples of 64 bytes (an LL128 chunk starts on a line), and every packet range is read with the
/// ranges it was written with (slot `r` of peer `q`'s scratch is written by `r`'s `put_packets` of chunk `t` and
/// read by `q`'s `reduce_packets` of the same chunk).
#[collective_program(
    name = "allreduce_oneshot_ll128",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 256 * 1024..=4 << 20,
    buffer_mode = "both",
    // Whole warps; as many blocks as the LL128 two-shot runs at the same sizes.
    thread_blocks = [(0, 32, 512), (512 * 1024, 64, 512), (1 << 20, 128, 512)],
    tags(default = 1)
)]
pub fn allreduce_oneshot_ll128(p: &mut Program<'_, LL128>) -> Result<(), ProgramError> {
    oneshot_packets(p, mscclpp_lang::plan::LL128_CHUNK_ALIGN)
}

/// The packet one-shot of [`allreduce_oneshot_ll`] for either packet protocol, chunks aligned to `align` bytes.
fn oneshot_packets<P: PacketProtocol>(p: &mut Program<'_, P>, align: u64) -> Result<(), ProgramError> {
    p.set_buffer_alignment(align);
    let n = p.world_size();
    p.set_double_scratch(true);
    let len = p.input(0)?.len();
    let f = len / n;
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * len)?;
    for r in 0..n {
        let input = p.input(r)?;
        let output = p.output(r)?;
        let channels = crate::util::peer_channels(p, r)?;
        for t in 0..n {
            let part = t * f..(t + 1) * f;
            for (q, ch) in &channels {
                let base = slot(r, *q) * len;
                ch.put_packets(scratch[*q].slice(base + part.start..base + part.end)?, input.slice(part.clone())?, t)?;
            }
            // In place the reduction overwrites the chunk just sent: every thread must be done reading it.
            p.barrier(r, &[t])?;
            let received = peers(r, n)
                .map(|q| {
                    let base = slot(q, r) * len;
                    scratch[r].slice(base + part.start..base + part.end)
                })
                .collect::<Result<Vec<_>, ProgramError>>()?;
            p.rank(r)?.reduce_packets(output.slice(part.clone())?, input.slice(part)?, &received, t, ReduceOp::Sum)?;
        }
    }
    Ok(())
}

/// Two-shot all-reduce over memory channels: a reduce-scatter in which each rank reads its slice of every peer's
/// input and reduces it, then an all-gather in which each rank puts its reduced slice into every peer's output.
///
/// The work of each step is spread over `n - 1` thread blocks, each with its own channel to every peer for
/// signals. A handshake precedes the reads (peers' inputs are ready), and a closing signal/wait round tells each
/// peer that the reduced slice has landed in its output and that its input is no longer read.
#[collective_program(
    name = "allreduce_twoshot",
    collective = "allreduce",
    world_sizes = 2..=8,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (64 * 1024, 8), (1 << 20, 32), (16 << 20, 64)],
    tags(default = 1)
)]
pub fn allreduce_twoshot(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let tbs: Vec<usize> = (0..n - 1).collect();
    let group = p.tb_group(&tbs)?;
    let f = p.output(0)?.len() / n;
    for r in 0..n {
        let sync = sync_channels(p, r, tbs.len())?;
        handshake(p, r, &sync)?;
        let own = p.output(r)?.slice(r * f..(r + 1) * f)?;
        reduce_own_slice(p, r, &sync, &group, own, r * f..(r + 1) * f)?;
        for t in &tbs {
            p.barrier(r, &[*t])?;
        }
        for (q, ch) in &sync[0] {
            ch.put(p.output(*q)?.slice(r * f..(r + 1) * f)?, own, &group)?;
        }
        closing_round(p, r, &sync)?;
    }
    Ok(())
}
