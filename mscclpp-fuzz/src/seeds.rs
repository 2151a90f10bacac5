//! Seed inputs: the MSCCL++ plan corpus in `tests/corpus/mscclpp`, the plans our default algorithms emit, the
//! saved regression inputs in `mscclpp-fuzz/regressions/<target>/`, and hand-made bootstrap transcripts.

use std::path::{Path, PathBuf};

use mscclpp_lang::plan::emit_plan;
use mscclpp_lang::registry::{self, PlanCache, Target as BuildTarget};

use crate::targets::{Target, bootstrap_seeds};

/// The workspace root (the fuzz crate's parent folder).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The folder of saved inputs of `target` that once broke the contract (each is a regression test).
pub fn regression_dir(target: Target) -> PathBuf {
    workspace_root().join("mscclpp-fuzz").join("regressions").join(target.name())
}

/// Every file under `dir` whose name ends in `ext` (recursively), sorted.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p, ext));
        } else if p.to_string_lossy().ends_with(ext) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The corpus plans no larger than `max_len` bytes.
pub fn corpus_plans(max_len: usize) -> Vec<Vec<u8>> {
    files(&workspace_root().join("tests/corpus/mscclpp"), ".json")
        .into_iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|d| d.len() <= max_len)
        .collect()
}

/// The plans of every registered program at 2 and 4 ranks (where it builds), no larger than `max_len` bytes.
pub fn emitted_plans(max_len: usize) -> Vec<Vec<u8>> {
    let cache = PlanCache::memory_only();
    let mut out = Vec::new();
    for meta in registry::programs() {
        for world in [2, 4] {
            if let Ok(c) = cache.compile(meta, &BuildTarget::new(world)) {
                let text = emit_plan(&c.plan).into_bytes();
                if text.len() <= max_len {
                    out.push(text);
                }
            }
        }
    }
    out
}

/// The saved regression inputs of `target`.
pub fn regressions(target: Target) -> Vec<(PathBuf, Vec<u8>)> {
    files(&regression_dir(target), "")
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(".md"))
        .filter_map(|p| std::fs::read(&p).ok().map(|d| (p, d)))
        .collect()
}

/// Seeds of `target`: plans no larger than `max_len` for the plan targets, encoded requests for the registry,
/// transcripts for the bootstrap; the regression inputs in every case.
pub fn seeds(target: Target, max_len: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = match target {
        Target::Plan | Target::Verify => {
            let mut v = corpus_plans(max_len);
            v.extend(emitted_plans(max_len));
            v
        }
        Target::Registry => registry_seeds(),
        Target::Bootstrap => bootstrap_seeds(),
    };
    out.extend(regressions(target).into_iter().map(|(_, d)| d));
    out
}

/// Registry requests for each registered program (its name by index, sizes as text, world sizes 2 to 8).
fn registry_seeds() -> Vec<Vec<u8>> {
    let n = registry::programs().len().max(1);
    let mut out = Vec::new();
    for i in 0..n.min(255) {
        for (world, size) in [(2u8, &b"1M"[..]), (4, b"4K+16"), (8, b"1048576")] {
            let mut s = vec![(i - i % 3) as u8];
            s.push(size.len() as u8);
            s.extend_from_slice(size);
            s.extend_from_slice(&[world, 0, 1, (i % 7) as u8, 2, 0, 0]);
            out.push(s);
        }
    }
    out
}
