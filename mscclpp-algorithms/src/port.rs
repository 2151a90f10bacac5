//! Port-channel (proxy, copy engine) collectives for large messages: the proxy thread moves the data with the
//! copy engines, so the SMs stay free for the caller's kernels (the all-reduce uses them only for its local
//! reduction).
//!
//! They carry `default = 0`: the default selector keeps the SM programs, which are faster alone on the GPU; a
//! tuned table, or a request by name, picks these.

use mscclpp_lang::prelude::*;

use crate::util::{peers, slot};

/// For rank `r`, one port channel to every peer, as `(thread block, peer, channel)`: thread block `t` serves the
/// `t`-th peer. All ranks create them in the same order, so channel `a → b` pairs with channel `b → a`.
type PortChannels<'p> = Vec<(usize, usize, PortChannel<'p, Simple>)>;

fn port_channels<'p>(p: &Program<'p, Simple>, r: usize) -> Result<PortChannels<'p>, ProgramError> {
    let n = p.world_size();
    peers(r, n).enumerate().map(|(t, q)| Ok((t, q, p.port_channel(q, r)?))).collect()
}

/// Every thread block of rank `r` signals its peer and waits for the peer's signal: the peer has entered this
/// launch, so its buffers may be written.
fn port_handshake(chans: &PortChannels<'_>) -> Result<(), ProgramError> {
    for (t, _, ch) in chans {
        ch.signal(*t, SyncType::None)?;
        ch.wait(*t, SyncType::After)?;
    }
    Ok(())
}

/// All-pairs all-gather over port channels: each rank asks the proxy to copy its chunk into every peer's output
/// with a signal (`pws`), one thread block per peer, waits for the peer's chunk, then flushes (the copy engine has
/// finished reading its input before the launch ends). Out of place, an extra thread block copies the input into
/// the rank's own slot of the output meanwhile.
#[collective_program(
    name = "allgather_port",
    collective = "allgather",
    world_sizes = 2..=8,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (16 << 20, 4), (256 << 20, 8)],
    tags(default = 0, port = 1)
)]
pub fn allgather_port(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    for r in 0..n {
        let mine = p.input(r)?.all()?;
        let f = mine.size();
        if !p.inplace() {
            p.rank(r)?.copy(p.output(r)?.slice(r * f..(r + 1) * f)?, mine, n - 1)?;
        }
        let chans = port_channels(p, r)?;
        port_handshake(&chans)?;
        for (t, q, ch) in &chans {
            ch.put_with_signal(p.output(*q)?.slice(r * f..(r + 1) * f)?, mine, *t)?;
            ch.wait(*t, SyncType::After)?;
            ch.flush(*t, SyncType::After)?;
        }
    }
    Ok(())
}

/// Two-shot all-reduce over port channels: the proxy copies slice `q` of each rank's input into a slot of peer
/// `q`'s scratch (reduce-scatter, `pws`), each rank adds the slots it received to its own slice (the only SM work,
/// spread over its thread blocks), then the proxy copies the sum into every peer's output (all-gather, `pws`).
/// One thread block per peer drives its port channel; a flush at the end makes sure the copy engine has finished
/// reading this rank's buffers before the launch ends.
///
/// In place, a peer writes its sum into slice `q` of this rank's buffer only after it received this rank's slice
/// `q`, and a proxy signals only after the copy before it has completed, so the slice was read before it is
/// overwritten.
#[collective_program(
    name = "allreduce_port",
    collective = "allreduce",
    world_sizes = 2..=8,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (4 << 20, 8), (64 << 20, 16)],
    tags(default = 0, port = 1)
)]
pub fn allreduce_port(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    allreduce_by_copy_engines(p, 1, 0)
}

/// Pipeline stages of [`allreduce_port_pipelined`]: each rank's slice is moved in this many chunks (a power of
/// two, so that power-of-two messages split). Each stage costs a port thread block seven operations, and a thread
/// block holds at most 64. The copies of all four reduce-scatter chunks are queued at once, so the reduction of a
/// chunk only has to finish before its connection's stream runs out of queued copies.
const PIPELINE_CHUNKS: usize = 4;

/// Thread blocks of one instance of [`allreduce_port_pipelined`] (at least `n - 1`): the first `n - 1` drive the
/// port channels, and all of them reduce. Reducing a chunk takes them less time than the copy engines take to
/// move the next one; more instances give more.
const PIPELINE_THREAD_BLOCKS: usize = 16;

/// Two-shot all-reduce whose data the copy engines move, pipelined: after a handshake, every port thread block
/// (one per peer) asks the proxy at once for all the reduce-scatter copies of its slice, chunk after chunk
/// (`pws` into the peer's scratch), so each connection's stream stays busy from the first copy to the last. As
/// each chunk has arrived from every peer, all `PIPELINE_THREAD_BLOCKS` thread blocks reduce it, and the port
/// thread blocks ask for its all-gather copies into the peers' outputs; those queue behind the remaining
/// reduce-scatter copies, so the reduction of one chunk overlaps the copies of the next and
/// only the last chunk's reduction is not hidden. A flush at the very end, after every copy was asked for, makes
/// sure the copy engines finished reading this rank's buffers (a flush blocks the proxy thread until the
/// connection's stream drains; earlier, it would hold back copies to the other peers).
///
/// In place, a peer writes its sum into chunk `c` of this rank's slice `q` only after it received this rank's
/// chunk `c` of slice `q`, which the proxy signals once the copy that read it has completed.
#[collective_program(
    name = "allreduce_port_pipelined",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 16 << 20..,
    buffer_mode = "both",
    tags(default = 0, port = 1)
)]
pub fn allreduce_port_pipelined(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    allreduce_by_copy_engines(p, PIPELINE_CHUNKS, PIPELINE_THREAD_BLOCKS)
}

/// The two-shot all-reduce over port channels with every slice in `chunks` chunks, reduced by
/// `max(n - 1, thread_blocks)` thread blocks of which the first `n - 1` drive the port channels (see
/// [`allreduce_port`] and [`allreduce_port_pipelined`]).
fn allreduce_by_copy_engines(
    p: &mut Program<'_, Simple>,
    chunks: usize,
    thread_blocks: usize,
) -> Result<(), ProgramError> {
    p.set_chunk_factor(chunks)?;
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let f = p.input(0)?.len() / n;
    let g = f / chunks;
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    let all: Vec<usize> = (0..(n - 1).max(thread_blocks)).collect();
    let group = p.tb_group(&all)?;
    for r in 0..n {
        let input = p.input(r)?;
        let output = p.output(r)?;
        let chans = port_channels(p, r)?;
        port_handshake(&chans)?;
        for (t, q, ch) in &chans {
            let s = slot(r, *q) * f;
            for c in 0..chunks {
                if c > 0 {
                    // A `nop` between the puts: fused into one multi-destination put, each chunk's trigger would be
                    // pushed by its own thread, in no fixed order, and the peer's k-th wait would no longer mean
                    // that chunk k has landed.
                    p.barrier(r, &[*t])?;
                }
                let (d, o) = (s + c * g, q * f + c * g);
                ch.put_with_signal(scratch[*q].slice(d..d + g)?, input.slice(o..o + g)?, *t)?;
            }
        }
        let received = crate::util::received_slots(&scratch, r, f)?;
        for c in 0..chunks {
            // Chunk `c` of a slot, and of this rank's slice in the buffers.
            let w = c * g..(c + 1) * g;
            let mine = r * f + w.start..r * f + w.end;
            for (t, _, ch) in &chans {
                ch.wait(*t, SyncType::None)?;
            }
            // Chunk `c` of every peer has landed (each port thread block waited for its peer): reduce it.
            p.barrier(r, &all)?;
            let own = output.slice(mine.clone())?;
            let slots = received.iter().map(|s| s.slice(w.clone())).collect::<Result<Vec<_>, _>>()?;
            p.rank(r)?.reduce(own, input.slice(mine.clone())?, &slots, &group, ReduceOp::Sum)?;
            // The whole chunk is summed before any port thread block asks for its copies.
            p.barrier(r, &all)?;
            for (t, q, ch) in &chans {
                ch.put_with_signal(p.output(*q)?.slice(mine.clone())?, own, *t)?;
            }
        }
        // The flush comes last, after every copy was asked for: it holds the proxy thread until the connection's
        // stream drains, so earlier it would hold back the copies to the other peers.
        for (t, _, ch) in &chans {
            for c in 0..chunks {
                ch.wait(*t, if c + 1 == chunks { SyncType::After } else { SyncType::None })?;
            }
            ch.flush(*t, SyncType::After)?;
        }
    }
    Ok(())
}
