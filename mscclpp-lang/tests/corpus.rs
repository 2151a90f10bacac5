//! Every plan of the MSCCL++ corpus parses, validates and re-serializes to an equal JSON value.

use std::path::PathBuf;

use mscclpp_lang::plan::{emit_plan, parse_plan};

fn corpus() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/mscclpp");
    let mut files = Vec::new();
    for dir in ["generated", "upstream"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("corpus folder") {
            let p = entry.expect("entry").path();
            if p.extension().is_some_and(|e| e == "json") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_corpus_plan_round_trips() {
    let files = corpus();
    assert_eq!(files.len(), 107, "the corpus holds 107 plans");
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        match parse_plan(&text) {
            Err(e) => failures.push(format!("{}: {e}", f.display())),
            Ok(plan) => {
                let original: serde_json::Value = serde_json::from_str(&text).expect("json");
                let again: serde_json::Value = serde_json::from_str(&emit_plan(&plan)).expect("emitted json");
                if original != again {
                    failures.push(format!("{}: re-serialized JSON differs", f.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn malformed_plans_name_rank_thread_block_and_field() {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/corpus/mscclpp/generated/single_node__allgather__n2.json"),
    )
    .expect("read");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");

    // Unknown operation.
    let mut bad = v.clone();
    bad["gpus"][1]["threadblocks"][0]["ops"][5]["name"] = "teleport".into();
    let e = parse_plan(&bad.to_string()).unwrap_err().to_string();
    assert!(e.contains("rank 1") && e.contains("thread block 0") && e.contains("operation 5"), "{e}");
    assert!(e.contains("teleport"), "{e}");

    // Missing field.
    let mut bad = v.clone();
    bad["gpus"][0].as_object_mut().unwrap().remove("input_chunks");
    let e = parse_plan(&bad.to_string()).unwrap_err().to_string();
    assert!(e.contains("rank 0") && e.contains("input_chunks"), "{e}");

    // Chunk out of range.
    let mut bad = v.clone();
    bad["gpus"][0]["threadblocks"][0]["ops"][5]["dst_buff"][0]["index"] = 7.into();
    let e = parse_plan(&bad.to_string()).unwrap_err().to_string();
    assert!(e.contains("rank 0") && e.contains("operation 5") && e.contains("out of range"), "{e}");

    // Channel that does not exist.
    bad = v.clone();
    bad["gpus"][1]["threadblocks"][0]["ops"][7]["channel_ids"] = serde_json::json!([3]);
    let e = parse_plan(&bad.to_string()).unwrap_err().to_string();
    assert!(e.contains("rank 1") && e.contains("channel 3 does not exist"), "{e}");

    // Remote buffer that does not exist.
    v["gpus"][0]["threadblocks"][0]["ops"][5]["dst_buff"][0]["buffer_id"] = 2.into();
    let e = parse_plan(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("remote buffer 2 does not exist"), "{e}");
}
