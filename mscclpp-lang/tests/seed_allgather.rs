//! The seed example: the 2-GPU in-place AllGather of the MSCCL++ DSL, written in the eDSL, lowers to exactly the
//! plan the Python DSL produces (tests/corpus/mscclpp/generated/single_node__allgather__n2.json).

mod common;

use common::assert_same;
use mscclpp_lang::prelude::*;

/// Every rank writes its chunk of the output into every peer's output: relaxed handshake, put, then a
/// signal/wait so that both sides know the data has landed.
fn allgather(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
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

#[test]
fn seed_allgather_matches_the_python_dsl_plan() {
    let spec = ProgramSpec::new("allgather", Collective::AllGather, 2).inplace(true);
    let ours = build_plan(&spec, allgather).unwrap();
    assert_same(&ours, "single_node__allgather__n2.json");
}
