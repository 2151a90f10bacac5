//! Broadcast: every rank ends with the root's input in its output. The root is rank 0 unless the spec names
//! another (the plan's `root` key).

use mscclpp_lang::prelude::*;

use crate::util::peers;

/// Broadcast over memory channels: the root puts its input straight into every peer's output, one thread block per
/// peer.
///
/// Each peer first signals the root (it has entered this launch, so its output may be written) and then waits for
/// the root's signal that the data has landed. In place the root's input is its output, so it copies nothing
/// locally.
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
        p.rank(root)?.copy(p.output(root)?.all()?, data, 0)?;
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
