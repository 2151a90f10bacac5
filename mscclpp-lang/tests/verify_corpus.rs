//! Every plan of the MSCCL++ corpus through the verifier, with the verdicts the corpus report explains
//! (`verify_corpus --report FILE`; the last one kept: results/2026-11-26-76cab75-cpu/corpus-report.md)
//! pinned here: correct plans pass; each defective plan is reported with the finding kinds the report names.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mscclpp_lang::verify::{FindingKind, VerifyOptions, verify_text};

/// Plans with genuine defects (see the corpus report) and the kinds they must be reported with.
fn defects() -> BTreeMap<&'static str, FindingKind> {
    use FindingKind::*;
    let mut m = BTreeMap::new();
    for n in ["2", "4", "8"] {
        for (plan, kind) in [
            ("multi_node__reducescatter", DataRace),
            ("multi_node__send_recv", DataRace),
            ("single_node__allgather_nvls_zero_copy", DataRace),
            ("single_node__allreduce_nvls_zero_copy", DataRace),
        ] {
            m.insert(Box::leak(format!("generated/{plan}__n{n}.json").into_boxed_str()) as &str, kind);
        }
    }
    for (plan, kind) in [
        ("generated/unit__put_fuse_test__n2.json", DataRace),
        ("generated/unit__put_with_signal_test__n2.json", DataRace),
        ("generated/unit__read_put_packet_test__n2.json", Deadlock),
        ("generated/unit__reduce_copy_packet_test__n2.json", Deadlock),
        ("generated/unit__reduce_copy_send_packet_test__n2.json", Deadlock),
        ("generated/unit__reduce_packets_fuse_test__n2.json", Deadlock),
        ("generated/unit__reduce_packets_test__n2.json", Deadlock),
        ("generated/unit__reduce_send_packet_test__n2.json", Deadlock),
        ("generated/unit__relaxed_signal_wait_fuse_test__n2.json", Deadlock),
        ("generated/unit__signal_wait_fuse_test__n2.json", Deadlock),
        ("generated/unit__switch_broadcast_test__n2.json", DataRace),
        ("generated/unit__switch_reduce_test__n2.json", DataRace),
        ("generated/unit__tbg_reduce_send_test__n2.json", DataRace),
        ("upstream/executor-tests__execution-plans__reduce_nvls.json", DataRace),
        ("upstream/executor-tests__execution-plans__reduce_nvls_pipeline.json", DataRace),
        ("upstream/executor-tests__execution-plans__reduce_tbg.json", DataRace),
    ] {
        m.insert(plan, kind);
    }
    m
}

#[test]
fn corpus_verdicts_match_the_report() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/mscclpp");
    let index = std::fs::read_to_string(root.join("INDEX.tsv")).expect("index");
    let defects = defects();
    let opts = VerifyOptions { schedules: 4, size: Some(16 * 1024), ..VerifyOptions::default() };
    let mut problems = Vec::new();
    let mut n = 0;
    for line in index.lines().skip(1) {
        let file = line.split('\t').next().expect("file");
        let text = std::fs::read_to_string(root.join(file)).expect("plan");
        let report = verify_text(&text, &opts);
        n += 1;
        match defects.get(file) {
            None if !report.ok() => problems.push(format!("{file}: expected to pass\n{}", report.render())),
            Some(kind) if !report.kinds().contains(kind) => {
                problems.push(format!("{file}: expected a {kind} finding\n{}", report.render()))
            }
            _ => {}
        }
    }
    assert_eq!(n, 107);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
