//! Every `MSCCLPP_*` name in the workspace's Rust sources is a declared variable (or a C macro of the device
//! sources, which the sources spell inside generated CUDA text).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Names of C preprocessor macros that Rust code writes into device sources; they are not environment variables.
/// A name directly followed by `(` (a function-like macro) or preceded by `-D` or `#define ` is one too.
/// Preprocessor macros of the device code (`MSCCLPP_INTERP_<TYPE>_<PACKET>` selects one interpreter entry point).
/// `MSCCLPP_INTERP_NAME`/`_T`/`_P`/`_THREADS` name, type, packet and block size of an entry point compiled alone.
const DEVICE_MACROS: &[&str] = &[
    "MSCCLPP_DEVICE_INLINE",
    "MSCCLPP_INTERPRETER",
    "MSCCLPP_INTERP_ONLY",
    "MSCCLPP_INTERP",
    "MSCCLPP_INTERP_NAME",
    "MSCCLPP_INTERP_T",
    "MSCCLPP_INTERP_P",
    "MSCCLPP_INTERP_THREADS",
    // Compiles only the plan-specialised program of the in-memory header mscclpp/interp_fixed_one.hpp.
    "MSCCLPP_FIXED_ONLY",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// `(name, is_macro)` for every `MSCCLPP_[A-Z0-9_]+` in `text`.
fn names(text: &str) -> Vec<(String, bool)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(pos) = text[i..].find("MSCCLPP_") {
        let start = i + pos;
        let mut end = start + "MSCCLPP_".len();
        while end < bytes.len()
            && (bytes[end].is_ascii_uppercase() || bytes[end].is_ascii_digit() || bytes[end] == b'_')
        {
            end += 1;
        }
        let before = &text[..start];
        let word_start = start == 0
            || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_')
            || before.ends_with("-D");
        if word_start && end > start + "MSCCLPP_".len() {
            let name = text[start..end].trim_end_matches('_').to_string();
            let is_macro = bytes.get(end) == Some(&b'(')
                || before.ends_with("-D")
                || before.ends_with("#define ")
                || DEVICE_MACROS.contains(&name.as_str());
            out.push((name, is_macro));
        }
        i = end;
    }
    out
}

#[test]
fn every_mscclpp_name_in_the_sources_is_declared() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 20, "found only {} .rs files under {}", files.len(), root.display());
    let mut seen = BTreeSet::new();
    let mut missing = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (name, is_macro) in names(&text) {
            if is_macro {
                continue;
            }
            seen.insert(name.clone());
            if !mscclpp_config::is_declared(&name) {
                missing.insert(format!("{name} ({})", file.display()));
            }
        }
    }
    assert!(seen.contains("MSCCLPP_WAIT_TIMEOUT_MS"), "the scan found no known variable: {seen:?}");
    assert!(missing.is_empty(), "undeclared variables (add them to mscclpp-config/src/table.rs): {missing:?}");
}

#[test]
fn the_scanner_tells_variables_from_macros() {
    // `@` stands for the prefix, so that this file itself names no variable.
    let p = |s: &str| s.replace('@', "MSCCLPP");
    let found = names(&p("x @_CACHE_DIR y -D@_DEVICE_COMPILE=1 #define @_X_OFFSETOF(T) @_X_OFFSETOF(a) Z@_NOT"));
    let want = [("@_CACHE_DIR", false), ("@_DEVICE_COMPILE", true), ("@_X_OFFSETOF", true), ("@_X_OFFSETOF", true)];
    assert_eq!(found, want.map(|(n, m)| (p(n), m)).to_vec());
}

#[test]
fn every_variable_is_declared_once() {
    let mut names = BTreeSet::new();
    for v in mscclpp_config::VARIABLES {
        let m = v.meta();
        assert!(names.insert(m.name), "{} declared twice", m.name);
        assert!(!m.doc.is_empty() && !m.reader.is_empty(), "{}", m.name);
        assert!(!v.default_text().is_empty(), "{} has no default text", m.name);
    }
    for v in mscclpp_config::LAUNCHER_VARIABLES {
        assert!(names.insert(v.name), "{} declared twice", v.name);
    }
    assert!(names.contains("MSCCLPP_SHARED_GPU") && names.contains("NCCL_NVLS_ENABLE"));
}
