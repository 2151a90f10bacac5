//! Every registered algorithm through the CPU verifier: world sizes 2, 3, 4 and 8 (where supported), instances 1
//! and 2, every buffer placement it supports, 3 launches.

use mscclpp_algorithms as _;
use mscclpp_lang::registry::{self, Target};
use mscclpp_lang::verify::{VerifyOptions, verify};

/// Programs that currently fail verification, with the finding (reported to their author). The test fails when
/// one of them starts passing, so that the entry is removed.
const KNOWN_FAILING: &[(&str, &str)] = &[];

#[test]
fn every_registered_algorithm_verifies() {
    let opts = VerifyOptions { launches: 3, schedules: 6, size: Some(24 * 1024), ..VerifyOptions::default() };
    let mut failures = Vec::new();
    let mut known = Vec::new();
    let mut verified = 0;
    let programs = registry::programs();
    assert!(!programs.is_empty(), "no program is registered");
    for meta in programs {
        for n in [2usize, 3, 4, 8] {
            if !meta.supports_world_size(n) {
                continue;
            }
            // The shape the program admits at `n` ranks: one node, or its nodes (`nodes = 2`: two of n/2).
            let Some(per_node) = meta.ranks_per_node.most_in(n) else { continue };
            for instances in [1usize, 2] {
                for inplace in [true, false] {
                    if !meta.buffer_mode.accepts(inplace) {
                        continue;
                    }
                    let what = format!("{} n={n} instances={instances} inplace={inplace}", meta.name);
                    let target = Target::new(n).ranks_per_node(per_node).instances(instances).inplace(inplace);
                    let plan = match meta.build_plan(&target) {
                        Ok(p) => p,
                        Err(e) => {
                            failures.push(format!("{what}: cannot build: {e}"));
                            continue;
                        }
                    };
                    let report = verify(&plan, &opts);
                    verified += 1;
                    let expected_failure = KNOWN_FAILING.iter().any(|(name, _)| *name == meta.name);
                    match (report.ok(), expected_failure) {
                        (true, false) => {}
                        (false, true) => known.push(meta.name),
                        (true, true) => failures.push(format!("{what}: passes now; remove it from KNOWN_FAILING")),
                        (false, false) => failures.push(format!("{what}:\n{}", report.render())),
                    }
                }
            }
        }
    }
    assert!(verified > 0);
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}
