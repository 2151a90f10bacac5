//! How the verifier explains what it finds: wrong results name which ranks' contributions each wrong chunk holds
//! and come before the races that may cause them, the hints fit the plan (placement, port-channel flush), and one
//! finding repeated on several ranks is reported once with its ranks.

use std::path::PathBuf;

use mscclpp_lang::verify::{FindingKind, Report, VerifyOptions, verify_text};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn corpus(name: &str) -> Value {
    let path = root().join("tests/corpus/mscclpp/generated").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).expect("corpus plan")).expect("json")
}

fn broken(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/broken").join(format!("{name}.json"));
    std::fs::read_to_string(path).expect("fixture")
}

fn run(plan: &Value) -> Report {
    let opts = VerifyOptions { schedules: 8, size: Some(16 * 1024), ..VerifyOptions::default() };
    verify_text(&serde_json::to_string(plan).expect("json"), &opts)
}

fn op(plan: &mut Value, rank: usize, tb: usize, i: usize) -> &mut Value {
    &mut plan["gpus"][rank]["threadblocks"][tb]["ops"][i]
}

#[test]
fn an_off_by_one_reduction_names_the_partial_sums_of_each_wrong_chunk() {
    // Rank 1's last thread block reduces its chunk 15 with the peer's chunk 14 instead of 15.
    let mut plan = corpus("single_node__allreduce__n2.json");
    let rres = op(&mut plan, 1, 7, 5);
    assert_eq!(rres["name"], "rres");
    rres["src_buff"][1]["index"] = 14.into();
    let report = run(&plan);
    let text = report.render();
    assert_eq!(report.findings.first().map(|f| f.kind), Some(FindingKind::WrongResult), "{text}");
    let wrong = &report.findings[0].message;
    // Rank 1's own chunk 15 plus rank 0's chunk 14 (in which rank 1's chunk 14 may already be summed).
    assert!(wrong.contains("chunk 15 holds ranks {0 (previous chunk), 1"), "{text}");
    assert!(wrong.contains("(rank 0 missing)"), "{text}");
    assert!(!wrong.contains("no single missing"), "{text}");
}

#[test]
fn a_doubled_contribution_is_named_per_chunk() {
    // Rank 0's first thread block adds its own chunk 0 to itself instead of the peer's: rank 0 twice, rank 1
    // missing.
    let mut plan = corpus("single_node__allreduce__n2.json");
    let rres = op(&mut plan, 0, 0, 5);
    assert_eq!(rres["name"], "rres");
    rres["src_buff"][1] = serde_json::json!({"type": "i", "index": 0, "size": 1});
    let report = run(&plan);
    let text = report.render();
    let f = report.findings.iter().find(|f| f.kind == FindingKind::WrongResult).expect("a wrong result");
    assert!(f.message.contains("chunk 0 holds ranks {0, 0} (rank 0 twice, rank 1 missing)"), "{text}");
}

#[test]
fn the_own_slice_hint_of_an_allgather_follows_its_placement() {
    // Out of place, with no copy of the own slice: the hint says it is copied from the input.
    let mut plan = corpus("single_node__allgather__n2.json");
    plan["inplace"] = false.into();
    let report = run(&plan);
    let text = report.render();
    assert!(text.contains("an out-of-place allgather copies it from the rank's input"), "{text}");
    assert!(!text.contains("in-place allgather"), "{text}");

    // In place, rank 1 puts its slice over rank 0's own slice.
    let mut plan = corpus("single_node__allgather__n2.json");
    let put = op(&mut plan, 1, 0, 5);
    assert_eq!(put["name"], "put");
    put["dst_buff"][0]["index"] = 0.into();
    let report = run(&plan);
    let text = report.render();
    assert!(text.contains("which an in-place allgather finds in place: it must not be overwritten"), "{text}");
    assert!(!text.contains("out-of-place"), "{text}");
}

#[test]
fn a_port_put_without_flush_is_told_to_flush() {
    let opts = VerifyOptions { schedules: 12, size: Some(32 * 1024), ..VerifyOptions::default() };
    let report = verify_text(&broken("port_put_without_flush"), &opts);
    let race = report.findings.iter().find(|f| f.kind == FindingKind::DataRace).expect("a race");
    assert!(race.message.contains("`flush`"), "{}", race.message);
    assert!(race.message.contains("`put_with_signal_and_flush`"), "{}", race.message);
}

#[test]
fn wrong_results_come_before_the_races_that_may_cause_them() {
    let opts = VerifyOptions { schedules: 12, size: Some(32 * 1024), ..VerifyOptions::default() };
    let report = verify_text(&broken("missing_nop_before_signal"), &opts);
    let kinds = report.kinds();
    let wrong = kinds.iter().position(|&k| k == FindingKind::WrongResult).expect("a wrong result");
    let race = kinds.iter().position(|&k| k == FindingKind::DataRace).expect("a race");
    assert!(wrong < race, "{}", report.render());
}

#[test]
fn a_finding_repeated_on_several_ranks_is_reported_once_with_its_ranks() {
    // The off-by-one reduction leaves the same wrong chunk on both ranks of the in-place allreduce.
    let mut plan = corpus("single_node__allreduce__n2.json");
    op(&mut plan, 1, 7, 5)["src_buff"][1]["index"] = 14.into();
    let report = run(&plan);
    let text = report.render();
    let wrong: Vec<_> = report.findings.iter().filter(|f| f.kind == FindingKind::WrongResult).collect();
    assert_eq!(wrong.len(), 1, "{text}");
    assert_eq!(wrong[0].ranks, vec![0, 1], "{text}");
    assert!(text.contains("wrong result on ranks 0, 1 (shown for rank 0)"), "{text}");
    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["findings"][0]["ranks"], serde_json::json!([0, 1]));
    // A finding on one rank lists that rank.
    let mut plan = corpus("single_node__allreduce__n2.json");
    op(&mut plan, 0, 0, 5)["src_buff"][1] = serde_json::json!({"type": "i", "index": 0, "size": 1});
    let report = run(&plan);
    assert!(!report.findings.is_empty());
    assert!(report.findings.iter().all(|f| !f.ranks.is_empty()), "{}", report.render());
}

#[test]
fn a_symmetric_race_is_reported_once_for_both_ranks() {
    // Both ranks drop their closing `wait`: each peer's put races with the owner's result check, the same
    // finding on rank 0 and rank 1 up to rank numbers.
    let mut plan = corpus("single_node__allgather__n2.json");
    for rank in 0..2 {
        let ops = plan["gpus"][rank]["threadblocks"][0]["ops"].as_array_mut().expect("ops");
        assert_eq!(ops[8]["name"], "wait");
        ops.remove(8);
    }
    let report = run(&plan);
    let text = report.render();
    let races: Vec<_> = report.findings.iter().filter(|f| f.kind == FindingKind::DataRace).collect();
    assert!(!races.is_empty(), "{text}");
    assert!(races.iter().any(|f| f.ranks == vec![0, 1]), "{text}");
}
