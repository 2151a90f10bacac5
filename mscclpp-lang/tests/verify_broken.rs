//! Deliberately broken variants of correct corpus plans (`tests/broken/`, listed with the expected finding in
//! `MANIFEST.tsv`): each must be reported with the right kind of finding.

use std::path::PathBuf;

use mscclpp_lang::verify::{VerifyOptions, verify_text};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/broken")
}

#[test]
fn every_broken_plan_is_reported_with_the_right_kind() {
    let manifest = std::fs::read_to_string(dir().join("MANIFEST.tsv")).expect("manifest");
    let opts = VerifyOptions { schedules: 12, size: Some(32 * 1024), ..VerifyOptions::default() };
    let mut failures = Vec::new();
    let mut count = 0;
    for line in manifest.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (name, expected) = (cols[0], cols[1]);
        let text = std::fs::read_to_string(dir().join(format!("{name}.json"))).expect("fixture");
        let report = verify_text(&text, &opts);
        count += 1;
        let kinds: Vec<String> =
            report.kinds().iter().map(|k| serde_json::to_value(k).unwrap().as_str().unwrap().to_string()).collect();
        let wanted: Vec<&str> = expected.split('|').collect();
        // A wrong result is what the plan gets wrong: it comes before the races and stale packets that may cause it
        // (after invalid plans, out-of-bounds accesses and deadlocks, which stop the run, and an imbalance of signals
        // that lets later waits pass early).
        let causes_before = ["invalid_plan", "out_of_bounds", "deadlock", "unbalanced"];
        if let Some(w) = kinds.iter().position(|k| k == "wrong_result")
            && !kinds[..w].iter().all(|k| causes_before.contains(&k.as_str()))
        {
            failures.push(format!("{name}: a wrong result follows {kinds:?}\n{}", report.render()));
        }
        // The most fundamental cause (listed first, after the wrong results it explains) is of the expected kind.
        let first_cause = if wanted.contains(&"wrong_result") {
            kinds.first()
        } else {
            kinds.iter().find(|k| k.as_str() != "wrong_result")
        };
        if !first_cause.is_some_and(|k| wanted.contains(&k.as_str())) {
            failures.push(format!("{name}: expected {expected} first, got {kinds:?}\n{}", report.render()));
        }
        // The finding names what to fix: every finding has a message.
        assert!(report.findings.iter().all(|f| !f.message.is_empty()), "{name}");
    }
    assert!(count >= 10, "at least 10 broken variants");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn findings_locate_the_defect() {
    let text = std::fs::read_to_string(dir().join("missing_signal.json")).expect("fixture");
    let report = verify_text(&text, &VerifyOptions { schedules: 4, size: Some(4096), ..VerifyOptions::default() });
    let f = &report.findings[0];
    let json = serde_json::to_value(f).expect("json");
    assert_eq!(json["kind"], "deadlock");
    let blocked = json["detail"]["blocked"].as_array().expect("blocked list");
    // Rank 1's missing signal lets rank 0 run into the next launch, whose handshake then starves both ranks.
    assert_eq!(blocked.len(), 2, "{}", report.render());
    assert!(blocked.iter().all(|b| b["waits_for"].as_str().unwrap().contains("signal #")), "{}", report.render());
    assert!(f.message.contains("rank 0, thread block 0"), "{}", f.message);

    let text = std::fs::read_to_string(dir().join("missing_nop_between_ops.json")).expect("fixture");
    let report = verify_text(&text, &VerifyOptions { schedules: 4, size: Some(4096), ..VerifyOptions::default() });
    let json = serde_json::to_value(&report.findings[0]).expect("json");
    assert_eq!(json["kind"], "data_race");
    let (a, b) = (&json["detail"]["first"], &json["detail"]["second"]);
    assert_eq!(a["rank"], 1);
    assert_eq!(b["rank"], 1);
    assert_eq!(a["agent"], b["agent"], "both accesses are in one thread block: {}", report.render());
    assert!(report.findings[0].message.contains("nop"), "{}", report.findings[0].message);
}
