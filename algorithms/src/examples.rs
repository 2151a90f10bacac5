//! The seed documents' example programs, written in the eDSL and registered so that `mscclpp list` shows them.
//! They carry the tag `example`, so the default selector never picks them unless a request asks for it.

use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

/// The MSCCL++ DSL's in-place AllGather example (single_node/allgather.py), reproduced operation for operation.
///
/// Every rank writes its chunk of the output into every peer's output: a relaxed handshake, the put, then a
/// signal/wait so that both sides know the data has landed. At 2 ranks its plan equals the Python DSL's.
#[collective_program(
    name = "seed_allgather",
    collective = "allgather",
    world_sizes = 2..=8,
    buffer_mode = "in_place",
    tags(example = 1)
)]
pub fn seed_allgather(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let n = p.world_size();
    for src in 0..n {
        let src_chunk = p.output(src)?.chunk(src)?;
        for dst in 0..n {
            if src == dst {
                continue;
            }
            let dst_chunk = p.output(dst)?.chunk(src)?;
            let ch = p.memory_channel(dst, src)?;
            ch.relaxed_signal(0, SyncType::Both)?;
            ch.relaxed_wait(0, SyncType::After)?;
            ch.put(dst_chunk, src_chunk, 0)?;
            ch.signal(0, SyncType::Before)?;
            ch.wait(0, SyncType::After)?;
        }
    }
    Ok(())
}
