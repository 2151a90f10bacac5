// The 2-GPU in-place AllGather of the seed documents, built into a plan.
use mscclpp::prelude::*;

fn allgather(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let n = p.world_size();
    for src in 0..n {
        let src_chunk = p.output(src)?.chunk(src)?;
        for dst in (0..n).filter(|&d| d != src) {
            let ch = p.memory_channel(dst, src)?;
            ch.relaxed_signal(0, SyncType::Both)?;
            ch.relaxed_wait(0, SyncType::After)?;
            ch.put(p.output(dst)?.chunk(src)?, src_chunk, 0)?;
            ch.signal(0, SyncType::Before)?;
            ch.wait(0, SyncType::After)?;
        }
    }
    Ok(())
}

fn main() {
    let spec = ProgramSpec::new("allgather", Collective::AllGather, 2).inplace(true);
    let plan = build_plan(&spec, allgather).unwrap();
    assert_eq!(plan.gpus.len(), 2);
}
