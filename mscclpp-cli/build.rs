//! Provenance: the commit this crate is built from and whether tracked files differ from it.
//!
//! Sets `CLI_BUILD_COMMIT` for the crate: `<short hash>`, `<short hash>, dirty` when `git status` lists changes
//! to tracked files, or `unknown` when the crate is not built from a git checkout of its workspace (a crates.io
//! build, a source tarball, no `git` on the path). The build never fails for want of git.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let info = git_info(&manifest_dir).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CLI_BUILD_COMMIT={info}");
}

/// Runs git in `dir` without taking optional locks (`git status` would otherwise rewrite the index, which would
/// make the next build run this script again); `None` when git fails or is missing.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("--no-optional-locks").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// The commit description, and the `rerun-if-changed` lines that keep it current; `None` outside a checkout of
/// this crate's workspace.
fn git_info(manifest_dir: &Path) -> Option<String> {
    let dirs = git(manifest_dir, &["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"])?;
    let mut lines = dirs.lines().map(PathBuf::from);
    let (top, git_dir) = (lines.next()?, lines.next()?);
    // `--git-common-dir` may be relative to the directory git ran in.
    let common_dir = manifest_dir.join(lines.next()?);
    // A crate unpacked inside some other repository (a vendored dependency) is not built from that repository's
    // commits: only a checkout whose work tree holds this crate's workspace counts.
    let workspace = manifest_dir.parent()?;
    if top.canonicalize().ok()? != workspace.canonicalize().ok()? {
        return None;
    }
    let hash = git(manifest_dir, &["rev-parse", "--short=7", "HEAD"])?;
    if hash.is_empty() || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    // A new commit or checkout moves HEAD or the branch it names; staging and committing rewrite the index.
    let mut watched = vec![git_dir.join("HEAD"), git_dir.join("index"), common_dir.join("packed-refs")];
    if let Some(head_ref) = git(manifest_dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(common_dir.join(head_ref));
    }
    // An edit to any tracked file may change the dirty flag: watch every top-level entry of the committed tree
    // (cargo scans a directory recursively). `target/` and other untracked entries are not in it.
    if let Some(entries) = git(manifest_dir, &["ls-tree", "--full-tree", "--name-only", "HEAD"]) {
        watched.extend(entries.lines().map(|e| top.join(e)));
    }
    // A path that does not exist would make cargo run this script on every build.
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let status = git(manifest_dir, &["status", "--porcelain", "--untracked-files=no"])?;
    Some(if status.is_empty() { hash } else { format!("{hash}, dirty") })
}
