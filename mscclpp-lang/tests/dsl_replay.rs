//! MSCCL++'s Python DSL recorded as calls and replayed on the eDSL (`mscclpp_lang::dsl`): the quick start's
//! all-gather gives the corpus plan, packets and port channels replay, and errors name the Python line.

mod common;

use common::assert_same;
use mscclpp_lang::dsl::{self, DslError};

/// The recording of MSCCL++'s `single_node/allgather.py` for 2 ranks, as `mscclpp.language` writes it.
fn allgather_json() -> String {
    let mut calls = Vec::new();
    let mut id = 0;
    for src in 0..2 {
        for dst in 0..2 {
            if src == dst {
                continue;
            }
            let chunk = |r: usize| format!(r#"{{"rank":{r},"buffer":"o","index":{src},"size":1}}"#);
            let site = |line: u32| format!(r#""site":{{"file":"allgather.py","line":{line}}}"#);
            calls.push(format!(
                r#"{{"call":"channel","id":{id},"kind":"memory","dst":{dst},"src":{src},{}}}"#,
                site(48)
            ));
            calls.push(format!(
                r#"{{"call":"signal","channel":{id},"tb":0,"sync":"both","relaxed":true,{}}}"#,
                site(50)
            ));
            calls
                .push(format!(r#"{{"call":"wait","channel":{id},"tb":0,"sync":"after","relaxed":true,{}}}"#, site(52)));
            calls.push(format!(
                r#"{{"call":"transfer","name":"put","channel":{id},"dst":{},"src":{},"tb":0,{}}}"#,
                chunk(dst),
                chunk(src),
                site(54)
            ));
            calls.push(format!(r#"{{"call":"signal","channel":{id},"tb":0,"sync":"before",{}}}"#, site(56)));
            calls.push(format!(r#"{{"call":"wait","channel":{id},"tb":0,"sync":"after",{}}}"#, site(58)));
            id += 1;
        }
    }
    format!(
        r#"{{"name":"allgather","collective":"allgather","num_ranks":2,"chunk_factor":1,"inplace":true,"calls":[{}]}}"#,
        calls.join(",")
    )
}

#[test]
fn the_quick_start_allgather_replays_to_the_corpus_plan() {
    let program = dsl::parse(&allgather_json()).unwrap();
    assert_eq!(program.calls.len(), 12);
    let plan = dsl::build(&program).unwrap();
    assert_same(&plan, "single_node__allgather__n2.json");
}

#[test]
fn an_error_names_the_python_line_of_the_call() {
    // The put's destination on a rank that does not exist.
    let json = allgather_json().replacen(r#""rank":1,"buffer":"o""#, r#""rank":7,"buffer":"o""#, 1);
    let err = dsl::build(&dsl::parse(&json).unwrap()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, DslError::Build { site: Some(_), .. }), "{text}");
    assert!(text.starts_with("allgather.py:54: ") && text.contains("rank 7"), "{text}");
    // Signals without their waits: found by the lowering after the last call, so no call is named.
    let unpaired = allgather_json().replace(r#""call":"wait""#, r#""call":"signal""#);
    let err = dsl::build(&dsl::parse(&unpaired).unwrap()).unwrap_err();
    assert!(matches!(err, DslError::Build { site: None, .. }), "{err}");
    // Not JSON of the recorded shape.
    assert!(matches!(dsl::parse(r#"{"name":"x"}"#), Err(DslError::Parse(_))));
}

#[test]
fn packets_need_the_ll_protocol_and_scratch_chunks() {
    let program = |protocol: &str, dst_buffer: &str| {
        format!(
            r#"{{"name":"pkt","collective":"test","num_ranks":2,"buffer_chunks":[1,1],"protocol":"{protocol}","calls":[
              {{"call":"scratch","id":0,"rank":1,"size":1}},
              {{"call":"channel","id":0,"kind":"memory","dst":1,"src":0}},
              {{"call":"transfer","name":"put_packets","channel":0,
                "dst":{{"rank":1,"buffer":"{dst_buffer}","scratch":0,"index":0,"size":1}},
                "src":{{"rank":0,"buffer":"i","index":0,"size":1}},"tb":0,"site":{{"file":"pkt.py","line":9}}}},
              {{"call":"scratch","id":1,"rank":0,"size":1}},
              {{"call":"channel","id":1,"kind":"memory","dst":0,"src":1}},
              {{"call":"transfer","name":"put_packets","channel":1,
                "dst":{{"rank":0,"buffer":"s","scratch":1,"index":0,"size":1}},
                "src":{{"rank":1,"buffer":"i","index":0,"size":1}},"tb":0}}]}}"#
        )
    };
    let plan = dsl::build(&dsl::parse(&program("LL", "s")).unwrap()).unwrap();
    assert_eq!(plan.gpus[0].threadblocks[0].ops[0].name.as_str(), "ppkt");
    let err = dsl::build(&dsl::parse(&program("Simple", "s")).unwrap()).unwrap_err().to_string();
    assert!(err.starts_with("pkt.py:9: ") && err.contains("LL protocol"), "{err}");
    let err = dsl::build(&dsl::parse(&program("LL", "o")).unwrap()).unwrap_err().to_string();
    assert!(err.contains("scratch buffers only"), "{err}");
}
