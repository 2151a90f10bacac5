//! The verifier and the order of a multi-destination port put's triggers: on the GPU each destination's thread
//! posts its own trigger, in no fixed order, so a plan that fuses two `put_with_signal`s on one channel cannot
//! count on the peer's first wait meaning the first chunk (the schedules with delayed visibility post them last
//! first). Kept apart by a `nop`, the puts are posted in program order.

use mscclpp_lang::plan::{OpName, Plan};
use mscclpp_lang::prelude::*;
use mscclpp_lang::verify::{VerifyOptions, verify};

/// Rank 0 puts its two input chunks into rank 1's output over one port channel, each with a signal; rank 1 waits
/// once and copies chunk 0 into its scratch, then waits again and copies chunk 1.
fn plan(apart: bool) -> Plan {
    let spec = ProgramSpec::new("port_order", Collective::Test, 2).buffer_chunks(2, 2);
    build_plan::<Simple>(&spec, |p| {
        let to1 = p.port_channel(1, 0)?;
        let from0 = p.port_channel(0, 1)?;
        let s = p.scratch(1, 2)?;
        to1.put_with_signal(p.output(1)?.chunk(0)?, p.input(0)?.chunk(0)?, 0)?;
        if apart {
            p.barrier(0, &[0])?;
        }
        to1.put_with_signal(p.output(1)?.chunk(1)?, p.input(0)?.chunk(1)?, 0)?;
        to1.flush(0, SyncType::After)?;
        for c in 0..2 {
            from0.wait(0, SyncType::After)?;
            p.rank(1)?.copy(s.chunk(c)?, p.output(1)?.chunk(c)?, 0)?;
        }
        Ok(())
    })
    .expect("the plan builds")
}

fn puts(plan: &Plan) -> Vec<usize> {
    plan.gpus[0].threadblocks[0]
        .ops
        .iter()
        .filter(|o| o.name == OpName::PutWithSignal)
        .map(|o| o.dst_buff.as_ref().map_or(0, |d| d.len()))
        .collect()
}

fn opts() -> VerifyOptions {
    VerifyOptions { launches: 1, schedules: 8, size: Some(4096), ..VerifyOptions::default() }
}

#[test]
fn fused_puts_on_one_channel_are_reported_as_unordered() {
    let fused = plan(false);
    assert_eq!(puts(&fused), vec![2], "the lowering fuses the two puts into one with two destinations");
    let report = verify(&fused, &opts());
    assert!(!report.ok(), "the second chunk may land first:\n{}", report.render());
    assert!(report.render().contains("data race"), "{}", report.render());
}

#[test]
fn puts_kept_apart_are_posted_in_order() {
    let apart = plan(true);
    assert_eq!(puts(&apart), vec![1, 1]);
    let report = verify(&apart, &opts());
    assert!(report.ok(), "{}", report.render());
}
