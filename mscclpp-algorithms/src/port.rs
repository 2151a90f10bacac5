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
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let f = p.input(0)?.len() / n;
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    let tbs: Vec<usize> = (0..n - 1).collect();
    let group = p.tb_group(&tbs)?;
    for r in 0..n {
        let input = p.input(r)?;
        let output = p.output(r)?;
        let chans = port_channels(p, r)?;
        port_handshake(&chans)?;
        for (t, q, ch) in &chans {
            let s = slot(r, *q) * f;
            ch.put_with_signal(scratch[*q].slice(s..s + f)?, input.slice(q * f..(q + 1) * f)?, *t)?;
            ch.wait(*t, SyncType::None)?;
        }
        // Every peer's slice has landed (each thread block waited for its peer): reduce over all of them.
        p.barrier(r, &tbs)?;
        let received = crate::util::received_slots(&scratch, r, f)?;
        let own = output.slice(r * f..(r + 1) * f)?;
        p.rank(r)?.reduce(own, input.slice(r * f..(r + 1) * f)?, &received, &group, ReduceOp::Sum)?;
        // The whole sum is written before any thread block asks the proxy to copy it.
        p.barrier(r, &tbs)?;
        for (t, q, ch) in &chans {
            ch.put_with_signal(p.output(*q)?.slice(r * f..(r + 1) * f)?, own, *t)?;
            ch.wait(*t, SyncType::After)?;
            ch.flush(*t, SyncType::After)?;
        }
    }
    Ok(())
}
