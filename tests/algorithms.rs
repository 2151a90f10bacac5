//! Every default algorithm builds, for every world size it supports among 2..=8 and in each placement it
//! supports, a plan that validates and survives a JSON round trip.

use mscclpp_lang::plan::{self, emit_plan, parse_plan};
use mscclpp_lang::registry::{self, BufferMode, Target};

// Link the default algorithms in.
use mscclpp_algorithms as _;

mod common;
use common::DEFAULTS;

fn placements(mode: BufferMode) -> &'static [bool] {
    match mode {
        BufferMode::InPlace => &[true],
        BufferMode::OutOfPlace => &[false],
        BufferMode::Both => &[true, false],
    }
}

#[test]
fn every_default_is_registered() {
    let names: Vec<&str> = registry::programs().iter().map(|m| m.name).collect();
    for d in DEFAULTS {
        assert!(names.contains(d), "{d} is not registered; registered: {names:?}");
    }
    assert!(registry::duplicate_names().is_empty(), "{:?}", registry::duplicate_names());
}

#[test]
fn every_default_builds_valid_plans_that_round_trip() {
    for name in DEFAULTS {
        let meta = registry::find(name).unwrap();
        for ws in 2..=8 {
            if !meta.supports_world_size(ws) {
                continue;
            }
            for &inplace in placements(meta.buffer_mode) {
                let target = Target::new(ws).inplace(inplace);
                let p = meta.build_plan(&target).unwrap_or_else(|e| panic!("{name} n={ws} inplace={inplace}: {e}"));
                plan::validate(&p).unwrap();
                assert_eq!(p.world_size(), ws);
                assert_eq!(p.collective, meta.collective);
                assert_eq!(p.protocol, meta.protocol);
                assert_eq!(p.inplace, inplace);
                assert_eq!(p.name, *name);
                let back = parse_plan(&emit_plan(&p)).unwrap_or_else(|e| panic!("{name} n={ws}: {e}"));
                assert_eq!(back, p, "{name} n={ws} inplace={inplace} does not round-trip");
            }
        }
    }
}

#[test]
fn the_required_world_sizes_are_supported() {
    for name in DEFAULTS {
        let meta = registry::find(name).unwrap();
        for ws in [2, 4, 8] {
            assert!(meta.supports_world_size(ws), "{name} should support {ws} ranks");
        }
    }
}

#[test]
fn ll_programs_double_their_scratch() {
    let mut checked = Vec::new();
    for meta in registry::programs() {
        if !meta.protocol.packets() {
            continue;
        }
        let p = meta.build_plan(&Target::new(4)).unwrap();
        assert!(p.double_scratch(), "{} is LL but does not double its scratch", meta.name);
        checked.push(meta.name);
    }
    for ll in ["allgather_allpairs_ll", "allreduce_oneshot_ll", "reducescatter_ll", "allreduce_oneshot_ll128"] {
        assert!(checked.contains(&ll), "{ll} was not checked: {checked:?}");
    }
}

#[test]
fn seed_allgather_matches_the_python_dsl_plan() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/mscclpp/generated/single_node__allgather__n2.json");
    let theirs = plan::read_plan(path).unwrap();
    let mut ours = registry::find("seed_allgather").unwrap().build_plan(&Target::new(2).inplace(true)).unwrap();
    // Only the name differs: the Python example calls its plan "allgather".
    ours.name = theirs.name.clone();
    // Our registry bounds the message range explicitly; the Python plan leaves it at the defaults.
    assert_eq!(ours.min_message(), theirs.min_message());
    assert_eq!(ours.max_message(), theirs.max_message());
    ours.min_message_size = theirs.min_message_size;
    ours.max_message_size = theirs.max_message_size;
    assert_eq!(serde_json::to_value(&ours).unwrap(), serde_json::to_value(&theirs).unwrap());
}

#[test]
fn nvls_allreduce_with_8_instances_matches_the_python_dsl_plans_but_for_the_closing_handshake() {
    let meta = registry::find("allreduce_nvls_zero_copy").unwrap();
    for n in [2, 4, 8] {
        let path = format!(
            "{}/tests/corpus/mscclpp/generated/single_node__allreduce_nvls_zero_copy__n{n}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut theirs = plan::read_plan(path).unwrap();
        // The guide closes with a relaxed handshake; ours is release/acquire (see the program's doc comment).
        for gpu in &mut theirs.gpus {
            for tb in &mut gpu.threadblocks {
                let after = tb.ops.iter().position(|o| o.name == plan::OpName::MultiLoadReduceStore).unwrap();
                for op in &mut tb.ops[after..] {
                    op.name = match op.name {
                        plan::OpName::RelaxedSignal => plan::OpName::Signal,
                        plan::OpName::RelaxedWait => plan::OpName::Wait,
                        other => other,
                    };
                }
            }
        }
        let ours = meta.build_plan(&Target::new(n).inplace(true).instances(8)).unwrap();
        assert_eq!(serde_json::to_value(&ours).unwrap(), serde_json::to_value(&theirs).unwrap(), "{n} ranks");
    }
}
