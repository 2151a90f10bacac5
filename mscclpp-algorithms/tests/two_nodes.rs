//! The two-node hierarchical all-reduce (`nodes = 2`): verified at 4, 6 and 8 ranks as two nodes, memory channels
//! only inside a node and port channels only to the partner, and chosen only for two-node requests.

use mscclpp_algorithms as _;
use mscclpp_lang::plan::{ChannelType, Collective};
use mscclpp_lang::registry::{self, Request, Target};
use mscclpp_lang::verify::{VerifyOptions, verify};

#[test]
fn it_verifies_as_two_nodes_at_4_6_and_8_ranks() {
    let meta = registry::find("allreduce_two_nodes").unwrap();
    let mut verified = 0;
    for n in [4usize, 6, 8] {
        let g = n / 2;
        for inplace in [false, true] {
            for instances in [1, 2] {
                let target = Target::new(n).ranks_per_node(g).inplace(inplace).instances(instances);
                let plan = meta.build_plan(&target).unwrap_or_else(|e| panic!("{n} ranks: {e}"));
                for (r, gpu) in plan.gpus.iter().enumerate() {
                    let partner = ((r + g) % n) as u32;
                    let mut mem = gpu.channel_peers(ChannelType::Memory);
                    mem.sort_unstable();
                    mem.dedup();
                    let node: Vec<u32> = (0..n).filter(|&q| q != r && q / g == r / g).map(|q| q as u32).collect();
                    assert_eq!(mem, node, "{n} ranks, rank {r}: memory channels only inside its node");
                    let mut port = gpu.channel_peers(ChannelType::Port);
                    port.dedup();
                    assert_eq!(port, vec![partner], "{n} ranks, rank {r}: a port channel to its partner only");
                }
                let opts = VerifyOptions { launches: 3, schedules: 8, ..VerifyOptions::default() };
                let report = verify(&plan, &opts);
                assert!(report.ok(), "{n} ranks, in place {inplace}, {instances} instance(s):\n{}", report.render());
                verified += 1;
            }
        }
    }
    assert_eq!(verified, 12);
}

#[test]
fn it_is_chosen_for_two_nodes_only() {
    let two_nodes = Request::new(Collective::AllReduce, 8, 1 << 20).ranks_per_node(4);
    assert_eq!(registry::select(&two_nodes).unwrap().program.name, "allreduce_two_nodes");
    let one_node = Request::new(Collective::AllReduce, 8, 1 << 20).ranks_per_node(8);
    assert_ne!(registry::select(&one_node).unwrap().program.name, "allreduce_two_nodes");
    // Four nodes of two: no program admits that shape, and the error says so.
    let four_nodes = Request::new(Collective::AllReduce, 8, 1 << 20).ranks_per_node(2);
    let e = registry::select(&four_nodes).unwrap_err().to_string();
    assert!(e.contains("allreduce_two_nodes: it supports ranks per node world/2"), "{e}");
}
