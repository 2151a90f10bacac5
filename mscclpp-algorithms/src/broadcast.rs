//! Broadcast: every rank ends with the root's input in its output. The root is rank 0 unless the spec names
//! another (the plan's `root` key).

use mscclpp_lang::prelude::*;

use crate::util::peers;

/// Broadcast over memory channels: the root puts its input straight into every peer's output, one thread block per
/// peer.
///
/// Each peer first signals the root (it has entered this launch, so its output may be written) and then waits for
/// the root's signal that the data has landed. Out of place the root copies its input into its own output on a
/// thread block of its own (`n - 1`), beside the puts: on the first peer's thread block the copy would hold that
/// link idle until it finished. In place the root's input is its output, so it copies nothing locally.
#[collective_program(
    name = "broadcast",
    collective = "broadcast",
    world_sizes = 2..=8,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (64 * 1024, 8), (1 << 20, 32), (16 << 20, 64)],
    tags(default = 1)
)]
pub fn broadcast(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let root = p.root();
    let data = p.input(root)?.all()?;
    if !p.inplace() {
        p.rank(root)?.copy(p.output(root)?.all()?, data, n - 1)?;
    }
    for (t, q) in peers(root, n).enumerate() {
        let down = p.memory_channel(q, root)?;
        let up = p.memory_channel(root, q)?;
        up.signal(0, SyncType::Both)?;
        down.wait(t, SyncType::After)?;
        down.put(p.output(q)?.all()?, data, t)?;
        down.signal(t, SyncType::Before)?;
        up.wait(0, SyncType::After)?;
    }
    Ok(())
}

/// Broadcast by LL packets, for small messages: the root sends its input as packets into every peer's scratch (one
/// thread block per peer), each peer unpacks them into its output and then signals the root, which waits for
/// every peer's signal before it ends. The packets' flags order the data, so the data takes one hop where
/// [`broadcast`] needs a handshake, the data and a signal; the signal back keeps the root from writing a later
/// launch's packets into a scratch its peer still reads (nothing else would: the root hears nothing from its peers).
/// The scratch is doubled, as for every LL program.
#[collective_program(
    name = "broadcast_ll",
    collective = "broadcast",
    world_sizes = 2..=8,
    message_sizes = 0..=1 << 20,
    buffer_mode = "both",
    thread_blocks = [(0, 1), (64 * 1024, 8)],
    tags(default = 1)
)]
pub fn broadcast_ll(p: &mut Program<'_, LL>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::LL_ALIGNMENT);
    p.set_double_scratch(true);
    let n = p.world_size();
    let root = p.root();
    let f = p.input(root)?.len();
    let scratch = crate::util::per_rank_scratch(p, f)?;
    let data = p.input(root)?.all()?;
    if !p.inplace() {
        p.rank(root)?.copy(p.output(root)?.all()?, data, n - 1)?;
    }
    for (t, q) in peers(root, n).enumerate() {
        let down = p.memory_channel(q, root)?;
        let up = p.memory_channel(root, q)?;
        down.put_packets(scratch[q].slice(0..f)?, data, t)?;
        p.rank(q)?.unpack_packets(p.output(q)?.all()?, scratch[q].slice(0..f)?, 0)?;
        up.signal(0, SyncType::Before)?;
        down.wait(t, SyncType::After)?;
    }
    Ok(())
}
