//! Every fuzz target over its seeds (the MSCCL++ corpus, our emitted plans, bootstrap transcripts) and over
//! every saved regression input, then a short mutation campaign: no input panics or breaks the contract.

use std::time::Duration;

use mscclpp_algorithms as _;
use mscclpp_fuzz::{Campaign, Target, run, run_one, seeds};

#[test]
fn every_seed_and_regression_input_ends_in_ok_or_a_located_error() {
    let mut total = 0;
    for target in Target::ALL {
        let seeds = seeds::seeds(target, 64 << 10);
        assert!(!seeds.is_empty(), "{}: no seeds", target.name());
        for (i, s) in seeds.iter().enumerate() {
            run_one(target, s).unwrap_or_else(|e| panic!("{} seed {i}: {e}", target.name()));
        }
        total += seeds.len();
    }
    assert!(total > 100, "only {total} seeds in all");
}

#[test]
fn the_saved_regressions_are_replayed() {
    let mut n = 0;
    for target in Target::ALL {
        for (path, data) in seeds::regressions(target) {
            run_one(target, &data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n >= 30, "expected the saved regression inputs, found {n}");
}

#[test]
fn a_short_campaign_of_each_target_finds_nothing() {
    for (target, inputs, max_len) in [
        (Target::Plan, 2000, 8 << 10),
        (Target::Registry, 1000, 256),
        (Target::Verify, 300, 4 << 10),
        (Target::Bootstrap, 20_000, 512),
    ] {
        let c = Campaign {
            target,
            max_inputs: inputs,
            max_time: Duration::from_secs(120),
            seed: 7,
            max_len,
            crash_dir: None,
            max_corpus: 1024,
        };
        let stats = run(&c, &seeds::seeds(target, max_len), &mut |_| {});
        assert_eq!(stats.inputs, inputs, "{}: the campaign stopped early", target.name());
        assert!(stats.rejected > 0, "{}: no input was rejected: the mutator does nothing", target.name());
        let crashes: Vec<&str> = stats.crashes.iter().map(|c| c.what.as_str()).collect();
        assert!(crashes.is_empty(), "{}: {crashes:?}", target.name());
    }
}

#[test]
fn the_verifier_bounds_reject_an_oversized_plan_with_a_clear_error() {
    // A corpus plan with its chunk counts blown up: the verifier refuses it by its memory bound instead of
    // allocating.
    let plan = std::fs::read_to_string(
        seeds::workspace_root().join("tests/corpus/mscclpp/generated/single_node__allgather__n2.json"),
    )
    .expect("corpus plan");
    let big = plan
        .replace("\"input_chunks\": 1", "\"input_chunks\": 1000000000")
        .replace("\"output_chunks\": 2", "\"output_chunks\": 2000000000");
    assert_ne!(big, plan, "the corpus plan changed: update this test's edit");
    let report = mscclpp_lang::verify::verify_text(&big, &mscclpp_fuzz::targets::verify_options());
    let msg = report.findings.first().map(|f| f.message.clone()).unwrap_or_default();
    assert!(msg.contains("over the bound"), "{msg}");
}
