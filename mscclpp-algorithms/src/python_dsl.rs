//! Example programs of the MSCCL++ Python DSL, reproduced in the eDSL and registered so that `mscclpp list` shows
//! them.
//! They carry the tag `example`, so the default selector never picks them unless a request asks for it.

use mscclpp_lang::prelude::*;

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

/// The NVLS AllReduce of the MSCCL++ DSL integration guide (single_node/allreduce_nvls_zero_copy.py): in place,
/// rank `r` multimem-reduces chunk `r` of every rank's input through a switch channel and multimem-stores the sum
/// back to every rank, between two all-to-all handshakes.
///
/// One deliberate difference from the guide: its closing handshake is relaxed, which does not publish the multimem
/// stores into a peer before that peer's launch ends (the CPU verifier reports the race). Here the closing round is
/// a release/acquire signal/wait; the opening round stays relaxed (it only says "I am in this launch").
///
/// Needs NVLink multicast (NVLS) hardware and symmetric, cuMem-allocated buffers, hence the `nvls` tag: the
/// default selector picks it only for requests that ask for `nvls`. With `--instances 8` its plans equal the
/// Python DSL's for 2, 4 and 8 ranks but for the closing handshake.
#[collective_program(
    name = "allreduce_nvls_zero_copy",
    collective = "allreduce",
    world_sizes = 2..=8,
    buffer_mode = "in_place",
    tags(nvls = 1, example = 1)
)]
pub fn allreduce_nvls_zero_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let n = p.world_size();
    let ranks: Vec<usize> = (0..n).collect();
    let nvls = p.switch_channel(&ranks, BufferType::Input)?;
    let mut channels = Vec::new();
    for rank in 0..n {
        let peers: Vec<_> =
            (0..n).filter(|&peer| peer != rank).map(|peer| p.memory_channel(peer, rank)).collect::<Result<_, _>>()?;
        channels.push(peers);
    }
    // Every rank is ready.
    for peers in &channels {
        for ch in peers {
            ch.relaxed_signal(0, SyncType::Both)?;
        }
        for ch in peers {
            ch.relaxed_wait(0, SyncType::After)?;
        }
    }
    // Reduce this rank's chunk over all ranks and store it back to all ranks.
    for rank in 0..n {
        let chunk = p.input(rank)?.chunk(rank)?;
        let member = nvls.at_rank(rank)?;
        member.reduce(chunk, rank, 0, ReduceOp::Sum)?;
        member.broadcast(rank, chunk, 0)?;
    }
    // Every rank is done, and its stores are visible to their owners.
    for peers in &channels {
        for ch in peers {
            ch.signal(0, SyncType::Before)?;
        }
        for ch in peers {
            ch.wait(0, SyncType::Both)?;
        }
    }
    Ok(())
}
