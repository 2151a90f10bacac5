//! The NVLS AllReduce of the MSCCL++ DSL integration guide (`single_node/allreduce_nvls_zero_copy.py`) in the
//! eDSL: each rank multimem-reduces its own chunk of the input through a switch channel and multimem-stores the
//! result back, between two relaxed all-to-all handshakes. With 8 instances it lowers to the corpus plans for 2,
//! 4 and 8 ranks.

mod common;

use common::assert_same;
use mscclpp_lang::plan::OpName;
use mscclpp_lang::prelude::*;

/// In-place AllReduce through NVLink multicast (zero copy): rank `r` reduces chunk `r` of every rank's input
/// with one `glres` and stores it to every rank.
fn allreduce_nvls_zero_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
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
    // Every rank is done.
    for peers in &channels {
        for ch in peers {
            ch.relaxed_signal(0, SyncType::Before)?;
        }
        for ch in peers {
            ch.relaxed_wait(0, SyncType::Both)?;
        }
    }
    Ok(())
}

#[test]
fn nvls_allreduce_matches_the_python_dsl_plans() {
    for n in [2, 4, 8] {
        let spec = ProgramSpec::new("allreduce_nvls_zero_copy", Collective::AllReduce, n).inplace(true).instances(8);
        let ours = build_plan(&spec, allreduce_nvls_zero_copy).unwrap();
        assert_same(&ours, &format!("single_node__allreduce_nvls_zero_copy__n{n}.json"));
    }
}

#[test]
fn one_instance_has_one_glres_per_rank_between_relaxed_barriers() {
    let spec = ProgramSpec::new("nvls", Collective::AllReduce, 4).inplace(true);
    let plan = build_plan(&spec, allreduce_nvls_zero_copy).unwrap();
    for (r, gpu) in plan.gpus.iter().enumerate() {
        let names: Vec<OpName> = gpu.threadblocks[0].ops.iter().map(|o| o.name).collect();
        use OpName::*;
        assert_eq!(
            names,
            [
                Nop,
                RelaxedSignal,
                Nop,
                RelaxedWait,
                Nop,
                MultiLoadReduceStore,
                Nop,
                RelaxedSignal,
                Nop,
                RelaxedWait,
                Nop
            ]
        );
        let glres = &gpu.threadblocks[0].ops[5];
        assert_eq!(glres.srcs()[0].index as usize, r);
        assert_eq!(glres.dsts()[0].index as usize, r);
    }
}
