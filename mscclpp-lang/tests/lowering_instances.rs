//! Interleaved instance replication (lowering step 5, docs/edsl.md "Lowering").

use mscclpp_lang::plan::{self, BufferRef, ChannelType, OpName};
use mscclpp_lang::prelude::*;

fn program(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let scratch = [p.scratch(0, 2)?, p.scratch(1, 2)?];
    let sem = p.semaphore(0, 1)?;
    for r in 0..2 {
        let peer = 1 - r;
        let ch = p.memory_channel(peer, r)?;
        ch.put(scratch[peer].chunk(r)?, p.input(r)?.chunk(0)?, 0)?;
        ch.signal(0, SyncType::Before)?;
        ch.wait(0, SyncType::After)?;
        let g = p.tb_group(&[1, 2])?;
        p.rank(r)?.copy(p.output(r)?.chunk(peer)?, scratch[r].chunk(peer)?, &g)?;
    }
    p.barrier(0, &[0, 1])?;
    sem.release(0, SyncType::None)?;
    sem.acquire(1, SyncType::None)
}

#[test]
fn instances_interleave_chunks_and_replicate_thread_blocks_and_ids() {
    let n = 3;
    let spec = ProgramSpec::new("inst", Collective::AllGather, 2).instances(n);
    let plan = build_plan(&spec, program).unwrap();
    plan::validate(&plan).unwrap();
    let one = build_plan(&ProgramSpec::new("inst", Collective::AllGather, 2), program).unwrap();
    let g0 = &plan.gpus[0];
    assert_eq!((g0.input_chunks, g0.output_chunks, g0.scratch_chunks), (3, 6, 6));
    assert_eq!(g0.channel_peers(ChannelType::Memory), [1, 1, 1]);
    assert_eq!(g0.semaphores().len(), 3);
    assert_eq!(g0.threadblocks.len(), one.gpus[0].threadblocks.len() * n);
    for (t, tb) in g0.threadblocks.iter().enumerate() {
        assert_eq!(tb.id as usize, t);
        let (orig, k) = (t / n, (t % n) as u32);
        let base = &one.gpus[0].threadblocks[orig];
        assert_eq!(tb.ops.len(), base.ops.len());
        // Channel ids c -> c*n + k; thread-block-local indices unchanged.
        for (a, b) in tb.channels.iter().zip(&base.channels) {
            let shifted: Vec<u32> = b.channel_ids.iter().map(|c| c * n as u32 + k).collect();
            assert_eq!(a.channel_ids, shifted);
        }
        for (a, b) in tb.ops.iter().zip(&base.ops) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.channel_ids, b.channel_ids);
            let shift = |r: &BufferRef| r.index * n as u32 + k * r.size;
            for (x, y) in a.srcs().iter().zip(b.srcs()).chain(a.dsts().iter().zip(b.dsts())) {
                assert_eq!(x.index, shift(y), "rank 0 tb {t} {}", a.name);
                assert_eq!(x.size, y.size);
            }
            if a.name == OpName::Barrier {
                assert_eq!(a.barrier_id, b.barrier_id.map(|i| i * n as u32 + k));
                assert_eq!(a.num_threadblocks, Some(2));
            }
            if matches!(a.name, OpName::SemAcquire | OpName::SemRelease) {
                assert_eq!(a.semaphores(), [b.semaphores()[0] * n as u32 + k]);
            }
            assert_eq!(a.tbg_info, b.tbg_info);
        }
    }
}
