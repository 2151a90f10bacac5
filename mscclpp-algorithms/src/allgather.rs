//! All-gather: every rank ends with every rank's input, in rank order, in its output.

use mscclpp_lang::prelude::*;

use crate::util::{peers, slot};

/// All-pairs all-gather over memory channels: each rank writes its chunk straight into every peer's output, one
/// thread block per peer.
///
/// Per peer: a signal/wait handshake (the peer has entered this launch, so its output may be written), the put,
/// then a signal/wait pair that tells the peer the data has landed. Out of place, each rank first copies its input
/// into its own slot of the output.
#[collective_program(
    name = "allgather_allpairs",
    collective = "allgather",
    world_sizes = 2..=8,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (64 * 1024, 8), (1 << 20, 32), (16 << 20, 64)],
    tags(default = 1)
)]
pub fn allgather_allpairs(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    for r in 0..n {
        let mine = p.input(r)?.all()?;
        let f = mine.size();
        if !p.inplace() {
            // On a thread block of its own, beside the puts: the link does not wait for the local copy.
            p.rank(r)?.copy(p.output(r)?.slice(r * f..(r + 1) * f)?, mine, n - 1)?;
        }
        for (t, q) in peers(r, n).enumerate() {
            let ch = p.memory_channel(q, r)?;
            ch.signal(t, SyncType::Before)?;
            ch.wait(t, SyncType::After)?;
            ch.put(p.output(q)?.slice(r * f..(r + 1) * f)?, mine, t)?;
            ch.signal(t, SyncType::Before)?;
            ch.wait(t, SyncType::After)?;
        }
    }
    Ok(())
}

/// All-pairs all-gather with LL packets, for small messages: each rank sends its chunk as packets into every
/// peer's scratch, and each rank unpacks what its peers sent into its output; one thread block per peer.
///
/// No signals: a packet's flag says its data has arrived. The scratch is doubled, so a launch never overwrites
/// packets a peer is still unpacking from the previous one.
#[collective_program(
    name = "allgather_allpairs_ll",
    collective = "allgather",
    world_sizes = 2..=8,
    message_sizes = 0..=1 << 20,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (64 * 1024, 8)],
    tags(default = 1)
)]
pub fn allgather_allpairs_ll(p: &mut Program<'_, LL>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::LL_ALIGNMENT);
    let n = p.world_size();
    p.set_double_scratch(true);
    let f = p.input(0)?.len();
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    for r in 0..n {
        let mine = p.input(r)?.all()?;
        let out = p.output(r)?;
        // Send first, then receive, on each thread block: a receive waits for a peer's send. The local copy
        // goes between the two, while the packets are in flight.
        for (t, q) in peers(r, n).enumerate() {
            let s = slot(r, q) * f;
            p.memory_channel(q, r)?.put_packets(scratch[q].slice(s..s + f)?, mine, t)?;
        }
        if !p.inplace() {
            p.rank(r)?.copy(out.slice(r * f..(r + 1) * f)?, mine, 0)?;
        }
        for (t, q) in peers(r, n).enumerate() {
            let s = slot(q, r) * f;
            p.rank(r)?.unpack_packets(out.slice(q * f..(q + 1) * f)?, scratch[r].slice(s..s + f)?, t)?;
        }
    }
    Ok(())
}
