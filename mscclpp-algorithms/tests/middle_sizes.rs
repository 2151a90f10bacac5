//! The all-reduce, all-gather and reduce-scatter programs for the middle sizes and the port-channel ones: the
//! operations their lowering must produce, the sizes the default selector gives them, and the CPU verifier at
//! sizes that exercise their pipelines and scratch halves.

use mscclpp_algorithms as _;
use mscclpp_lang::plan::{ChannelType, Collective, OpName, Plan};
use mscclpp_lang::registry::{self, Request, Target};
use mscclpp_lang::verify::{VerifyOptions, verify};

fn plan(name: &str, world: usize, inplace: bool) -> Plan {
    registry::find(name).unwrap().build_plan(&Target::new(world).inplace(inplace)).unwrap()
}

/// The operation names of every thread block of rank 0, pipelines flattened.
fn op_names(plan: &Plan) -> Vec<Vec<OpName>> {
    plan.gpus[0].threadblocks.iter().map(|tb| tb.ops.iter().map(|o| o.name).collect()).collect()
}

/// Operations that move or reduce data (not signals, waits, barriers or `nop`s).
fn moves_data(name: OpName) -> bool {
    !name.is_sync() && !matches!(name, OpName::Nop | OpName::Barrier)
}

fn verify_ok(plan: &Plan, size: u64, schedules: u32) {
    let opts = VerifyOptions { launches: 3, schedules, size: Some(size), ..VerifyOptions::default() };
    let report = verify(plan, &opts);
    assert!(report.ok(), "{}:\n{}", plan.name, report.render());
}

#[test]
fn the_ll_two_shot_fuses_its_reduction_with_the_all_gather_send() {
    for n in [2, 4, 8] {
        let ops = op_names(&plan("allreduce_twoshot_ll", n, false));
        assert_eq!(ops.len(), n - 1, "one thread block per peer");
        for tb in &ops {
            assert_eq!(tb, &[OpName::PutPackets, OpName::ReduceSendPackets, OpName::UnpackPackets], "{n} ranks");
        }
    }
}

#[test]
fn the_fused_two_shot_reads_every_peer_reduces_and_sends_in_one_pass() {
    for n in [2, 3, 4, 8] {
        for inplace in [true, false] {
            let p = plan("allreduce_rsag", n, inplace);
            let tbs = &p.gpus[0].threadblocks;
            assert_eq!(tbs.len(), (n - 1).max(4), "{n} ranks: one group of at least 4 thread blocks");
            for tb in tbs {
                let data: Vec<_> = tb.ops.iter().filter(|o| moves_data(o.name)).collect();
                // One `rres`: the local slice and every peer's read together, the sum written locally and to
                // every peer.
                assert_eq!(data.len(), 1, "{n} ranks: {:?}", tb.ops.iter().map(|o| o.name).collect::<Vec<_>>());
                assert_eq!(data[0].name, OpName::ReadReduceSend, "{n} ranks");
                assert_eq!(data[0].srcs().len(), n, "{n} ranks: sources");
                assert_eq!(data[0].dsts().len(), n, "{n} ranks: destinations");
            }
        }
    }
}

#[test]
fn the_fused_reduce_scatter_reads_every_peer_in_one_pass() {
    for n in [3, 4, 8] {
        let p = plan("reducescatter_fused", n, false);
        for tb in &p.gpus[0].threadblocks {
            let data: Vec<_> = tb.ops.iter().filter(|o| moves_data(o.name)).collect();
            assert_eq!(data.len(), 1, "{n} ranks");
            assert_eq!((data[0].name, data[0].srcs().len()), (OpName::ReadReduce, n), "{n} ranks");
        }
    }
}

#[test]
fn the_fused_programs_verify_at_odd_slices() {
    // 3 ranks: slices that split into thirds of a 16-byte word across the group's thread blocks.
    for inplace in [true, false] {
        verify_ok(&plan("allreduce_rsag", 3, inplace), 3 << 20, 2);
        verify_ok(&plan("reducescatter_fused", 3, inplace), 3 << 20, 2);
    }
}

#[test]
fn port_programs_move_data_through_port_channels_only() {
    for name in ["allreduce_port", "allgather_port", "allreduce_port_pipelined"] {
        for n in [2, 4] {
            let p = plan(name, n, false);
            for gpu in &p.gpus {
                assert!(gpu.channel_peers(ChannelType::Memory).is_empty(), "{name}: a memory channel");
                assert_eq!(gpu.channel_peers(ChannelType::Port).len(), n - 1, "{name}");
                let ops: Vec<OpName> = gpu.threadblocks.iter().flat_map(|tb| tb.ops.iter().map(|o| o.name)).collect();
                assert_eq!(ops.iter().filter(|o| **o == OpName::PutWithSignal).count() % (n - 1), 0, "{name}");
                assert!(ops.contains(&OpName::PutWithSignal) && ops.contains(&OpName::Flush), "{name}: {ops:?}");
                assert!(!ops.contains(&OpName::Put) && !ops.contains(&OpName::ReadReduce), "{name}: {ops:?}");
            }
        }
    }
}

#[test]
fn port_programs_are_chosen_only_when_asked_for() {
    for (collective, size) in [(Collective::AllReduce, 256u64 << 20), (Collective::AllGather, 256 << 20)] {
        let r = Request::new(collective, 2, size);
        let chosen = registry::select(&r).unwrap().program.name;
        assert!(!chosen.ends_with("_port"), "{collective:?}: {chosen}");
        let port = registry::select(&r.clone().tag("port", 1)).unwrap().program.name;
        assert!(port.contains("_port"), "{collective:?}: {port}");
    }
    // From 16 MiB a request for `port` all-reduce gets the pipelined one (the narrower range); beyond 1 GiB the
    // default stays the SM two-shot, and naming a port program is enough to choose it.
    let r = Request::new(Collective::AllReduce, 4, 2 << 30);
    assert_eq!(registry::select(&r).unwrap().program.name, "allreduce_twoshot");
    assert_eq!(registry::select(&r.clone().tag("port", 1)).unwrap().program.name, "allreduce_port_pipelined");
    let named = registry::find("allreduce_port").unwrap();
    assert!(r.rejection(named).is_some_and(|why| why.to_string().contains("opt-in")));
    assert!(r.clone().naming(named).rejection(named).is_none());
}

#[test]
fn the_new_defaults_take_the_middle_sizes() {
    let pick = |c: Collective, n: usize, size: u64| registry::select(&Request::new(c, n, size)).unwrap().program.name;
    // Below 256 KiB the one-shot stays; the LL128 two-shot takes over up to 4 MiB, then the fused pass to 64 MiB,
    // the write-only staged two-shot to 256 MiB, the rotated write-only two-shot to 1 GiB and the two-shot beyond.
    assert_eq!(pick(Collective::AllReduce, 2, 64 << 10), "allreduce_oneshot_ll");
    assert_eq!(pick(Collective::AllReduce, 2, 512 << 10), "allreduce_twoshot_ll128");
    assert_eq!(pick(Collective::AllReduce, 2, 4 << 20), "allreduce_twoshot_ll128");
    assert_eq!(pick(Collective::AllReduce, 2, 8 << 20), "allreduce_rsag");
    assert_eq!(pick(Collective::AllReduce, 2, 64 << 20), "allreduce_rsag");
    assert_eq!(pick(Collective::AllReduce, 2, 128 << 20), "allreduce_staged");
    assert_eq!(pick(Collective::AllReduce, 2, 512 << 20), "allreduce_rotated");
    assert_eq!(pick(Collective::AllReduce, 2, 2 << 30), "allreduce_twoshot");
    // All-gather sizes count the whole output: 2 × 2 MiB.
    assert_eq!(pick(Collective::AllGather, 2, 2 << 20), "allgather_staged");
    assert_eq!(pick(Collective::AllGather, 2, 16 << 20), "allgather_rotated");
    assert_eq!(pick(Collective::ReduceScatter, 2, 8 << 20), "reducescatter_staged");
    assert_eq!(pick(Collective::ReduceScatter, 2, 32 << 20), "reducescatter_rotated");
    assert_eq!(pick(Collective::ReduceScatter, 2, 2 << 30), "reducescatter");
}

#[test]
fn staged_programs_need_their_doubled_scratch() {
    // With one scratch half, a rank's next launch overwrites the slot its peer has not copied out yet: the
    // verifier must find it, which shows that the doubling is what makes these programs correct.
    for name in ["allgather_staged", "reducescatter_staged"] {
        let good = plan(name, 2, false);
        assert!(good.double_scratch(), "{name}");
        verify_ok(&good, 128 << 10, 16);
        let mut single = good.clone();
        single.use_double_scratch_buffer = Some(false);
        let opts = VerifyOptions { launches: 3, schedules: 64, size: Some(128 << 10), ..VerifyOptions::default() };
        let report = verify(&single, &opts);
        assert!(!report.ok(), "{name} with one scratch half passed the verifier");
    }
}
