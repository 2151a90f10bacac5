//! All-reduce for the middle sizes (64 KiB to 64 MiB per rank): an LL two-shot and a fused read-reduce-send
//! two-shot over the registered buffers.

use mscclpp_lang::prelude::*;

use crate::reducescatter::{closing_round, handshake, sync_channels};
use crate::util::{peers, slot};

/// Two-shot all-reduce with LL packets: a packet reduce-scatter into scratch, a local reduction, then a packet
/// all-gather. Rank `r` sends slice `q` of its input as packets into peer `q`'s scratch (one thread block per
/// peer), reduces its own slice `r` with the packets it received and sends the sum as packets into every peer's
/// second scratch area (one fused `respkt` spread over all its thread blocks), then unpacks the peers' sums into
/// their slices of its output.
///
/// Every rank moves `2 (n - 1) / n` of the message each way against the one-shot's `n - 1`, and reduces a slice
/// instead of the whole buffer. No signals: packet flags order the data. The scratch is doubled so that a launch
/// never overwrites packets a peer still reads; in place, a thread block unpacks into slice `q` only after it has
/// sent that slice (the same thread block does both, ordered by a `nop`).
#[collective_program(
    name = "allreduce_twoshot_ll",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 64 * 1024..=4 << 20,
    buffer_mode = "both",
    // Packets need many threads in flight: one 512-thread block per 4-16 KiB of a peer's slice.
    thread_blocks = [(0, 16, 512), (512 * 1024, 32, 512), (2 << 20, 64, 512)],
    tags(default = 1)
)]
pub fn allreduce_twoshot_ll(p: &mut Program<'_, LL>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::LL_ALIGNMENT);
    let n = p.world_size();
    p.set_double_scratch(true);
    let f = p.input(0)?.len() / n;
    // Scratch of each rank: the reduce-scatter area (one slot per peer), then the all-gather area.
    let area = (n - 1) * f;
    let scratch = crate::util::per_rank_scratch(p, 2 * area)?;
    let tbs: Vec<usize> = (0..n - 1).collect();
    let group = p.tb_group(&tbs)?;
    for r in 0..n {
        let input = p.input(r)?;
        let output = p.output(r)?;
        let channels =
            peers(r, n).map(|q| Ok((q, p.memory_channel(q, r)?))).collect::<Result<Vec<_>, ProgramError>>()?;
        // Reduce-scatter: slice q of the input to peer q.
        for (t, (q, ch)) in channels.iter().enumerate() {
            let s = slot(r, *q) * f;
            ch.put_packets(scratch[*q].slice(s..s + f)?, input.slice(q * f..(q + 1) * f)?, t)?;
        }
        let received = peers(r, n)
            .map(|q| {
                let s = slot(q, r) * f;
                scratch[r].slice(s..s + f)
            })
            .collect::<Result<Vec<_>, ProgramError>>()?;
        let own = output.slice(r * f..(r + 1) * f)?;
        p.rank(r)?.reduce_packets(own, input.slice(r * f..(r + 1) * f)?, &received, &group, ReduceOp::Sum)?;
        // All-gather: the reduced slice to every peer (fused with the reduction above).
        for (q, ch) in &channels {
            let s = area + slot(r, *q) * f;
            ch.put_packets(scratch[*q].slice(s..s + f)?, own, &group)?;
        }
        for (t, q) in peers(r, n).enumerate() {
            let s = area + slot(q, r) * f;
            p.rank(r)?.unpack_packets(output.slice(q * f..(q + 1) * f)?, scratch[r].slice(s..s + f)?, t)?;
        }
    }
    Ok(())
}

/// Bytes of a rank's slice that one iteration of [`allreduce_rsag`]'s pipeline handles.
const PIPELINE_UNIT: u64 = 1 << 20;

/// Two-shot all-reduce over the registered buffers with the reduce-scatter and the all-gather fused: rank `r`
/// reads slice `r` of every peer's input, adds its own, and writes the sum into its own output and every peer's
/// output in the same pass (`rres`), spread over `n - 1` thread blocks. Each thread streams its part of the slice
/// vector by vector, so the transfer of one vector to the peers overlaps the loads and the reduction of the next,
/// and nothing waits between the two halves of the algorithm (the plain two-shot reduces the whole slice, then
/// synchronises its thread blocks, then reads the slice again to send it).
///
/// The pass runs in a `pipeline` loop over 1 MiB units of the slice, so that the thread
/// blocks move through the slice together, a unit at a time. With more than two ranks the read-reduces of the
/// later peers fuse into one over all of them (and, in place, with the first). A handshake precedes the reads (peers' inputs are ready, their
/// outputs writable), and a closing signal/wait round tells each peer that the sum has landed in its output and
/// that its input is no longer read.
#[collective_program(
    name = "allreduce_rsag",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 1 << 20..=64 << 20,
    buffer_mode = "both",
    thread_blocks = [(0, 16), (4 << 20, 32), (16 << 20, 64)],
    tags(default = 1)
)]
pub fn allreduce_rsag(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let tbs: Vec<usize> = (0..n - 1).collect();
    let group = p.tb_group(&tbs)?;
    let f = p.output(0)?.len() / n;
    for r in 0..n {
        let sync = sync_channels(p, r, tbs.len())?;
        handshake(p, r, &sync)?;
        let own = p.output(r)?.slice(r * f..(r + 1) * f)?;
        let local = p.input(r)?.slice(r * f..(r + 1) * f)?;
        let data = sync.first().ok_or_else(|| ProgramError::custom("allreduce_rsag needs a thread block"))?;
        p.pipeline(PIPELINE_UNIT, f, |p| {
            for (i, (q, ch)) in data.iter().enumerate() {
                let remote = p.input(*q)?.slice(r * f..(r + 1) * f)?;
                // The first peer's slice is added to the local one; each later one to the running sum (a `nop`
                // orders the two on every thread block of the group, as each member handles its own part).
                if i == 0 {
                    ch.read_reduce(own, local, &[remote], &group, ReduceOp::Sum)?;
                } else {
                    ch.read_reduce(own, own, &[remote], &group, ReduceOp::Sum)?;
                }
            }
            // Fused with the last read-reduce into one `rres`: no thread-block barrier in between.
            for (q, ch) in data {
                ch.put(p.output(*q)?.slice(r * f..(r + 1) * f)?, own, &group)?;
            }
            Ok(())
        })?;
        closing_round(p, r, &sync)?;
    }
    Ok(())
}
