//! The `#[repr(C)]` verbs mirrors of `mscclpp_sys::ib::ffi` against the installed `<infiniband/verbs.h>`: a C
//! probe generated from the same table (`mscclpp_sys::ib::layout`) is compiled with `cc` and its sizes,
//! alignments, field offsets and constants must equal Rust's.
//!
//! Without the header (package libibverbs-dev) or a C compiler, the test fails when `CI` is set and otherwise
//! prints a loud `SKIPPED:` line. The test exists only with feature `ib`:
//! `cargo test -p mscclpp-sys -p mscclpp-exec --features mscclpp-exec/ib`.

#[cfg(feature = "ib")]
#[test]
fn verbs_structs_match_the_c_header() {
    use std::collections::BTreeMap;
    use std::process::Command;

    fn unavailable(why: &str) {
        let msg = format!(
            "the verbs layout was NOT checked: {why}. Install the header and a C compiler (`apt-get install -y \
             libibverbs-dev gcc`) and run again"
        );
        if std::env::var_os("CI").is_some() {
            panic!("{msg} (failing because CI is set)");
        }
        eprintln!("SKIPPED: {msg}");
    }

    let dir = tempfile::tempdir().expect("temporary folder");
    let src = dir.path().join("verbs_probe.c");
    let exe = dir.path().join("verbs_probe");
    std::fs::write(&src, mscclpp_sys::ib::layout::c_probe_source()).expect("write the probe");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = match Command::new(&cc).arg("-std=gnu11").arg("-o").arg(&exe).arg(&src).output() {
        Ok(o) => o,
        Err(e) => return unavailable(&format!("the C compiler `{cc}` could not be run ({e})")),
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("infiniband/verbs.h") {
            return unavailable("<infiniband/verbs.h> is missing");
        }
        panic!("the verbs probe did not compile (a field or constant of the table is not in this verbs.h?):\n{stderr}");
    }
    let run = Command::new(&exe).output().expect("run the verbs probe");
    assert!(run.status.success(), "the verbs probe failed: {}", String::from_utf8_lossy(&run.stderr));
    let c: BTreeMap<String, u64> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect();
    let rust = mscclpp_sys::ib::layout::rust_layout();
    assert!(rust.len() > 150, "the layout table lost entries: {}", rust.len());
    let mut mismatches = Vec::new();
    for (key, value) in &rust {
        match c.get(key) {
            Some(cv) if cv == value => {}
            Some(cv) => mismatches.push(format!("{key}: Rust {value}, C {cv}")),
            None => mismatches.push(format!("{key}: missing from the C probe's output")),
        }
    }
    assert!(mismatches.is_empty(), "verbs layout differs from <infiniband/verbs.h>:\n{}", mismatches.join("\n"));
    assert_eq!(c.len(), rust.len(), "the C probe printed lines the Rust table does not have");
    eprintln!("checked {} sizes, alignments, offsets and constants against <infiniband/verbs.h>", rust.len());
}
