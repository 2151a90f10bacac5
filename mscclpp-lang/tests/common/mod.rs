//! Helpers shared by the integration tests.

use mscclpp_lang::plan::{self, Plan, read_plan};

/// A plan the Python DSL produced: `name` in the repository's tests/corpus/mscclpp/generated/.
pub fn corpus(name: &str) -> Plan {
    read_plan(format!("{}/../tests/corpus/mscclpp/generated/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Asserts that `ours` validates and equals, as JSON, the corpus plan `file`; on a difference, names the first
/// operation that differs.
#[track_caller]
pub fn assert_same(ours: &Plan, file: &str) {
    plan::validate(ours).unwrap();
    let theirs = corpus(file);
    let (a, b) = (serde_json::to_value(ours).unwrap(), serde_json::to_value(&theirs).unwrap());
    if a != b {
        for (g, (x, y)) in ours.gpus.iter().zip(&theirs.gpus).enumerate() {
            for (t, (p, q)) in x.threadblocks.iter().zip(&y.threadblocks).enumerate() {
                for (o, (m, n)) in p.ops.iter().zip(&q.ops).enumerate() {
                    if m != n {
                        panic!(
                            "{file}: first difference at rank {g} tb {t} op {o}\n ours: {}\ntheirs: {}",
                            serde_json::to_string(m).unwrap(),
                            serde_json::to_string(n).unwrap()
                        );
                    }
                }
            }
        }
        panic!("{file} differs\n--- ours\n{a}\n--- theirs\n{b}");
    }
}
