//! All-reduce for the middle sizes (64 KiB to 64 MiB per rank): an LL two-shot and a fused read-reduce-send
//! two-shot over the registered buffers.

use mscclpp_lang::prelude::*;

use crate::reducescatter::{closing_round, handshake, one_pass_tbs, reduce_own_slice_at_once, sync_channels};
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
    twoshot_packets(p, crate::util::LL_ALIGNMENT)
}

/// [`allreduce_twoshot_ll`] with LL128 lines (docs/executor.md, "LL128 lines"): 120 data bytes per 128 on the link
/// instead of 8 per 16, so from 512 KiB, where the LL two-shot's doubled traffic costs more than its flags save, it
/// moves the data at close to the link's rate with no signal round trip. On 2 × H200 (`interp_cost`, f32 in place,
/// `results/2026-11-28-2xH200-s23/call2/`) the interpreter runs it in 6.9 µs at 1 MiB and 17.7 µs at 4 MiB, where the
/// staged Simple two-shot takes 10.6 and 20.1; at 8 MiB the staged one is as fast, and it scales better, so the range
/// stops at 4 MiB.
///
/// The chunks are multiples of 64 bytes (LL128 packets need chunks that start on a line), and every packet range
/// is read with the chunk ranges it was written with: slot `q` of the reduce-scatter area is written by peer `q`'s
/// `put_packets` and read by this rank's `reduce_packets` over the same slice, the all-gather area likewise.
#[collective_program(
    name = "allreduce_twoshot_ll128",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 256 * 1024..=4 << 20,
    buffer_mode = "both",
    // A warp moves four lines, so every block has whole warps; 128 blocks of 512 threads were the tuner's choice on
    // 2 × H200 from 1 MiB (of 32, 64 and 128 blocks of 256 and 512 threads).
    thread_blocks = [(0, 32, 512), (512 * 1024, 64, 512), (1 << 20, 128, 512)],
    // 2: without a table it wins over `allreduce_oneshot_ll128` (the same range), which sends n - 1 times the
    // message from three ranks.
    tags(default = 2)
)]
pub fn allreduce_twoshot_ll128(p: &mut Program<'_, LL128>) -> Result<(), ProgramError> {
    twoshot_packets(p, mscclpp_lang::plan::LL128_CHUNK_ALIGN)
}

/// The packet two-shot of [`allreduce_twoshot_ll`] for either packet protocol, chunks aligned to `align` bytes.
fn twoshot_packets<P: PacketProtocol>(p: &mut Program<'_, P>, align: u64) -> Result<(), ProgramError> {
    p.set_buffer_alignment(align);
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
        let channels = crate::util::peer_channels(p, r)?;
        // Reduce-scatter: slice q of the input to peer q.
        for (t, (q, ch)) in channels.iter().enumerate() {
            let s = slot(r, *q) * f;
            ch.put_packets(scratch[*q].slice(s..s + f)?, input.slice(q * f..(q + 1) * f)?, t)?;
        }
        let received = crate::util::received_slots(&scratch, r, f)?;
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

/// Two-shot all-reduce over the registered buffers with the reduce-scatter and the all-gather fused into one pass:
/// rank `r` reads slice `r` of every peer's input at once, adds its own, and writes the sum into its own output and
/// every peer's output in the same loop (`rres`), spread over a thread-block group.
///
/// Each thread keeps loads from all peers and stores to all peers in flight together, reads the local slice once
/// and writes it once, and nothing waits between the two halves of the algorithm (the plain two-shot reads one peer
/// after another, synchronises its thread blocks, then reads the slice again to send it). The group has at least
/// 4 thread blocks: 32 instances fill 128 of an H100's or H200's 132 SMs at 2 to 5 ranks, where `n - 1` per
/// instance would leave a quarter of them idle at 4 ranks (docs/algorithms.md, "Four ranks and more").
///
/// Each element of slice `r` is read and then written by the same thread of rank `r` and by no other rank, so in
/// place is safe. A handshake precedes the pass (peers' inputs are ready, their outputs writable), and a closing
/// signal/wait round tells each peer that the sum has landed in its output and that its input is no longer read.
#[collective_program(
    name = "allreduce_rsag",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 1 << 20..=64 << 20,
    buffer_mode = "both",
    // The tuner's choices on 4 H200s: 32 thread blocks per rank at 2 MiB, 64 at 8-16 MiB, 128 from 32 MiB.
    thread_blocks = [(0, 32), (8 << 20, 64), (32 << 20, 128)],
    tags(default = 1)
)]
pub fn allreduce_rsag(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let tbs = one_pass_tbs(n);
    let group = p.tb_group(&tbs)?;
    let f = p.output(0)?.len() / n;
    for r in 0..n {
        let sync = sync_channels(p, r, tbs.len())?;
        handshake(p, r, &sync)?;
        let slice = r * f..(r + 1) * f;
        let own = p.output(r)?.slice(slice.clone())?;
        reduce_own_slice_at_once(p, r, &sync, &group, own, slice.clone())?;
        // Fused into the pass above: the sum goes from the registers to every peer's output.
        for (q, ch) in &sync[0] {
            ch.put(p.output(*q)?.slice(slice.clone())?, own, &group)?;
        }
        closing_round(p, r, &sync)?;
    }
    Ok(())
}
