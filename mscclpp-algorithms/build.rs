//! Hashes this crate's sources into `MSCCLPP_PROGRAM_SOURCES`, which `#[collective_program]` records in every
//! program's metadata: the plan cache key then changes with any edit here (a helper, a constant), not only with the
//! program function's own tokens. A crate of user programs can do the same with this file as its build script.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// 64-bit FNV-1a: enough to tell two versions of a source tree apart for a cache key.
fn fnv1a(h: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *h ^= u64::from(*b);
        *h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let src = root.join("src");
    println!("cargo:rerun-if-changed={}", src.display());
    let mut all = Vec::new();
    if let Err(e) = files(&src, &mut all) {
        println!("cargo:warning=cannot hash {} for the plan cache key: {e}", src.display());
        return;
    }
    all.sort();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for path in &all {
        let rel = path.strip_prefix(&root).unwrap_or(path);
        fnv1a(&mut h, rel.to_string_lossy().as_bytes());
        fnv1a(&mut h, &[0]);
        match std::fs::read(path) {
            Ok(bytes) => fnv1a(&mut h, &bytes),
            Err(e) => {
                println!("cargo:warning=cannot hash {} for the plan cache key: {e}", path.display());
                return;
            }
        }
        fnv1a(&mut h, &[0]);
    }
    println!("cargo:rustc-env=MSCCLPP_PROGRAM_SOURCES={h:016x}");
}
