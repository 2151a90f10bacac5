//! All-to-all: rank `r` ends with chunk `r` of every rank's input, in rank order.

use mscclpp_lang::prelude::*;

use crate::util::{peers, slot};

/// All-to-all over memory channels, one thread block per peer.
///
/// Out of place, each rank puts chunk `q` of its input straight into slot `r` of peer `q`'s output. In place the
/// output is the input, which the peer still reads, so the chunk goes into the peer's scratch instead and the
/// peer copies it into place after sending its own chunk. Either way a signal/wait handshake first makes sure the
/// peer has entered this launch, and a second signal/wait pair tells it that the data has landed.
#[collective_program(
    name = "alltoall",
    collective = "alltoall",
    world_sizes = 2..=8,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (64 * 1024, 8), (1 << 20, 32), (16 << 20, 64)],
    tags(default = 1)
)]
pub fn alltoall(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let f = p.input(0)?.len() / n;
    let inplace = p.inplace();
    let scratch = if inplace { crate::util::per_rank_scratch(p, (n - 1) * f)? } else { Vec::new() };
    for r in 0..n {
        let input = p.input(r)?;
        let output = p.output(r)?;
        if !inplace {
            p.rank(r)?.copy(output.slice(r * f..(r + 1) * f)?, input.slice(r * f..(r + 1) * f)?, 0)?;
        }
        for (t, q) in peers(r, n).enumerate() {
            let ch = p.memory_channel(q, r)?;
            ch.signal(t, SyncType::Before)?;
            ch.wait(t, SyncType::After)?;
            let src = input.slice(q * f..(q + 1) * f)?;
            if inplace {
                let s = slot(r, q) * f;
                ch.put(scratch[q].slice(s..s + f)?, src, t)?;
            } else {
                ch.put(p.output(q)?.slice(r * f..(r + 1) * f)?, src, t)?;
            }
            ch.signal(t, SyncType::Before)?;
            ch.wait(t, SyncType::After)?;
            if inplace {
                // The chunk for q has been sent (its put precedes the signal), so its place may now be overwritten.
                let s = slot(q, r) * f;
                p.rank(r)?.copy(output.slice(q * f..(q + 1) * f)?, scratch[r].slice(s..s + f)?, t)?;
            }
        }
    }
    Ok(())
}
