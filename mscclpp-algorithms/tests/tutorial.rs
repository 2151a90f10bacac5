//! The code of docs/tutorial.md: a ring all-reduce over memory channels, registered and verified at 2 to 8 ranks.
//!
//! Every `rust` block of the tutorial appears verbatim in this file (test `the_tutorial_shows_this_code`), with
//! the facade's paths (`mscclpp::prelude`, `mscclpp::lang::`) written as the `mscclpp_lang` paths this crate uses.

// tutorial: program
use mscclpp_lang::prelude::*;

/// Ring all-reduce over memory channels: a reduce-scatter in which each chunk travels once around the ring,
/// gaining every rank's contribution, then an all-gather in which each reduced chunk travels around again.
#[collective_program(
    name = "ring_allreduce",
    collective = "allreduce",
    world_sizes = 2..=8,
    buffer_mode = "both",
    tags(example = 1)
)]
pub fn ring_allreduce(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let n = p.world_size();
    let c = p.input(0)?.len() / n; // chunks in one of the n slices of the buffer
    let next = |r: usize| (r + 1) % n;
    let prev = |r: usize| (r + n - 1) % n;

    // Thread block 0 runs the reduce-scatter and thread block 1 the all-gather (a thread block holds at most 64
    // operations). Signals and waits need a channel per thread block, so each ring edge i -> i+1 gets one pair of
    // channels per thread block. The k-th channel a -> b pairs with the k-th channel b -> a: creating both ends of
    // an edge together (rank i's channel to its next, then rank i+1's channel back to its prev) pairs them even at
    // 2 ranks, where a rank's next and prev are the same peer.
    let (mut to_next, mut to_prev) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for i in 0..n {
        for t in 0..2 {
            to_next[t].push(p.memory_channel(next(i), i)?); // to_next[t][i]: on rank i
            to_prev[t].push(p.memory_channel(i, next(i))?); // to_prev[t][i]: on rank i + 1
        }
    }
    // Rank r receives from its prev into n - 1 slots of scratch, one per reduce-scatter step.
    let mut scratch = Vec::with_capacity(n);
    for r in 0..n {
        scratch.push(p.scratch(r, (n - 1) * c)?);
    }

    for r in 0..n {
        let out = p.output(r)?;
        let slice = |k: usize| out.slice(k * c..(k + 1) * c);
        if !p.inplace() {
            p.rank(r)?.copy(out.all()?, p.input(r)?.all()?, 0)?;
        }
        // Handshake: both neighbours have entered this launch (and finished the previous one).
        let (tx, rx) = (&to_next[0][r], &to_prev[0][prev(r)]);
        tx.signal(0, SyncType::Before)?;
        rx.signal(0, SyncType::None)?;
        tx.wait(0, SyncType::None)?;
        rx.wait(0, SyncType::After)?;
        // Reduce-scatter: at step s send the partial sum of chunk r - s, add the one prev sent to chunk r - 1 - s.
        for s in 0..n - 1 {
            let slot = |q: usize| scratch[q].slice(s * c..(s + 1) * c);
            tx.put(slot(next(r))?, slice((r + n - s) % n)?, 0)?;
            tx.signal(0, SyncType::Before)?;
            rx.wait(0, SyncType::After)?;
            let k = (r + 2 * n - 1 - s) % n;
            p.rank(r)?.reduce(slice(k)?, slice(k)?, &[slot(r)?], 0, ReduceOp::Sum)?;
        }
        // All-gather, once the reduce-scatter is done: rank r holds the full sum of chunk r + 1; pass each full
        // chunk on to next.
        p.barrier(r, &[0, 1])?;
        let (tx, rx) = (&to_next[1][r], &to_prev[1][prev(r)]);
        for s in 0..n - 1 {
            let k = (r + 1 + n - s) % n;
            tx.put(p.output(next(r))?.slice(k * c..(k + 1) * c)?, slice(k)?, 1)?;
            tx.signal(1, SyncType::Before)?;
            rx.wait(1, SyncType::After)?;
        }
    }
    Ok(())
}
// end

use mscclpp_algorithms as _;

// tutorial: verify
#[test]
fn ring_allreduce_verifies_at_every_declared_world_size() {
    use mscclpp_lang::registry::{self, Target};
    use mscclpp_lang::verify::{VerifyOptions, verify};

    let meta = registry::find("ring_allreduce").unwrap();
    let mut checked = 0;
    for n in 2..=8 {
        assert!(meta.supports_world_size(n));
        for inplace in [false, true] {
            let plan = meta.build_plan(&Target::new(n).inplace(inplace)).unwrap();
            // 3 launches over 16 interleavings each (`mscclpp verify` runs 64).
            let report = verify(&plan, &VerifyOptions { schedules: 16, ..VerifyOptions::default() });
            assert!(report.ok(), "{}", report.render());
            checked += 1;
        }
    }
    assert_eq!(checked, 14);
}
// end

/// The tutorial shows the code of this file, so that the code it shows compiles and verifies.
#[test]
fn the_tutorial_shows_this_code() {
    let doc = include_str!("../../docs/tutorial.md");
    let source = include_str!("tutorial.rs");
    let blocks: Vec<&str> = doc.split("```rust\n").skip(1).filter_map(|b| b.split("\n```").next()).collect();
    assert!(blocks.len() >= 2, "the tutorial has its code blocks");
    let mut tagged = 0;
    for block in blocks {
        let as_here =
            block.replace("mscclpp::prelude", "mscclpp_lang::prelude").replace("mscclpp::lang::", "mscclpp_lang::");
        // Blocks whose first line is `// tutorial: NAME` are sections of this file; the others are short
        // snippets (a crate setup, a user's main, commands), shown only.
        if block.starts_with("// tutorial:") {
            assert!(source.contains(&as_here), "docs/tutorial.md shows code this file does not hold:\n{block}");
            tagged += 1;
        }
    }
    assert!(tagged >= 2, "the tutorial shows the program and its test");
}

/// The program is also a plain function: building it with a spec gives the plan the registry gives.
#[test]
fn the_registered_program_is_the_function() {
    let spec = ProgramSpec::new("ring_allreduce", Collective::AllReduce, 4);
    let direct = build_plan(&spec, ring_allreduce).unwrap();
    let meta = mscclpp_lang::registry::find("ring_allreduce").unwrap();
    let registered = meta.build_plan(&mscclpp_lang::registry::Target::new(4)).unwrap();
    assert_eq!(direct.gpus.len(), registered.gpus.len());
    assert_eq!(mscclpp_lang::plan::emit_plan(&direct), mscclpp_lang::plan::emit_plan(&registered));
}
