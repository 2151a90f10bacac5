//! `xtask gpu collect`: builds in release mode everything the GPU suite runs and gathers it, stripped, into one
//! folder the GPU host can run from (it has no Rust): the executables cargo reports, the tuning plans, the custom
//! kernel's source and a MANIFEST naming the commit they were built from.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::parts::tune_variants;
use crate::suite::now;

/// The cargo builds of the suite's binaries: (cargo subcommand and arguments).
pub fn builds() -> Vec<Vec<&'static str>> {
    vec![
        vec!["build", "--release", "-p", "mscclpp-cli", "--bin", "mscclpp"],
        vec!["build", "--release", "-p", "mscclpp", "--example", "allreduce", "--example", "reliability"],
        vec!["build", "--release", "-p", "mscclpp", "--example", "interp_cost"],
        vec!["build", "--release", "-p", "mscclpp-exec", "--examples"],
        // The MPI bootstrap's job (the `launchers` part): links the build host's libmpi (mpicc and libclang needed).
        vec!["build", "--release", "-p", "mscclpp-exec", "--features", "mpi", "--example", "mpi_allreduce"],
        vec!["build", "--release", "-p", "xtask", "--bin", "xtask"],
        vec!["test", "--release", "--no-run", "-p", "mscclpp-sys", "-p", "mscclpp-exec"],
        vec!["test", "--release", "--no-run", "-p", "mscclpp-nccl", "--test", "standalone_gpu"],
        vec!["build", "--release", "-p", "mscclpp-nccl", "--lib"],
    ]
}

/// An executable cargo built: where it is and where it goes in the collected folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The file cargo wrote.
    pub source: PathBuf,
    /// Its path inside the destination (`tests/NAME` for test binaries, `NAME` for the rest).
    pub dest: PathBuf,
}

/// The executables named in cargo's `--message-format=json` output (its `compiler-artifact` messages).
pub fn artifacts(json_lines: &str) -> Vec<Artifact> {
    json_lines
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m.get("reason").and_then(|r| r.as_str()) == Some("compiler-artifact"))
        .filter_map(|m| {
            let exe = m.get("executable")?.as_str()?;
            let name = m.get("target")?.get("name")?.as_str()?;
            let test = m.get("profile").and_then(|p| p.get("test")).and_then(|t| t.as_bool()).unwrap_or(false);
            let dest = if test { Path::new("tests").join(name) } else { PathBuf::from(name) };
            Some(Artifact { source: PathBuf::from(exe), dest })
        })
        .collect()
}

/// The shared libraries (`cdylib`) named in cargo's `--message-format=json` output.
pub fn cdylibs(json_lines: &str) -> Vec<PathBuf> {
    json_lines
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m.get("reason").and_then(|r| r.as_str()) == Some("compiler-artifact"))
        .filter(|m| {
            m.get("target")
                .and_then(|t| t.get("kind"))
                .and_then(|k| k.as_array())
                .is_some_and(|k| k.iter().any(|x| x.as_str() == Some("cdylib")))
        })
        .filter_map(|m| m.get("filenames").and_then(|f| f.as_array()).cloned())
        .flatten()
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .filter(|f| f.extension().is_some_and(|e| e == "so"))
        .collect()
}

/// How many tests (ignored ones included) a libtest binary holds: the count of its `--list` lines.
fn test_count(exe: &Path) -> Result<usize, String> {
    let out = run_ok(Command::new(exe).arg("--list"), &format!("{} --list", exe.display()))?;
    Ok(String::from_utf8_lossy(&out).lines().filter(|l| l.ends_with(": test")).count())
}

fn run_ok(cmd: &mut Command, what: &str) -> Result<Vec<u8>, String> {
    let out = cmd.stderr(Stdio::inherit()).output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() { Ok(out.stdout) } else { Err(format!("{what} failed ({})", out.status)) }
}

/// The pinned pyroute2 release the `launchers` part's network namespaces use (pure Python: imported straight from
/// its wheel on the GPU host, which has no `ip` and no network).
const PYROUTE2: &str = "pyroute2==0.9.7";

/// `netns/veth.py` and the pyroute2 wheel (downloaded here). Without the wheel the netns step says so and fails.
fn netns(dest: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = dest.join("netns");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    std::fs::copy("xtask/scripts/netns_veth.py", dir.join("veth.py"))
        .map_err(|e| format!("copying xtask/scripts/netns_veth.py: {e}"))?;
    let mut files = vec![PathBuf::from("netns/veth.py")];
    let got = Command::new("python3")
        .args(["-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d"])
        .arg(&dir)
        .arg(PYROUTE2)
        .status();
    match got {
        Ok(s) if s.success() => {}
        _ => eprintln!("[xtask] warning: could not download {PYROUTE2}; the launchers part's netns step will say so"),
    }
    for e in std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.ends_with(".whl") {
            files.push(Path::new("netns").join(name));
        }
    }
    Ok(files)
}

/// Builds, copies and strips into `dest`, writes the tuning plans and the MANIFEST.
pub fn collect(dest: &Path) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    // A folder of an earlier collect (it has our MANIFEST) starts empty, so nothing stale travels.
    if dest.join("MANIFEST").is_file() {
        std::fs::remove_dir_all(dest).map_err(|e| format!("emptying {}: {e}", dest.display()))?;
    }
    std::fs::create_dir_all(dest.join("tests")).map_err(|e| format!("creating {}: {e}", dest.display()))?;
    let mut files: Vec<PathBuf> = Vec::new();
    for args in builds() {
        let what = format!("cargo {}", args.join(" "));
        eprintln!("[xtask] {what}");
        // The GPU hosts are fresh machines: the binaries must carry their kernels, never compile them there.
        let out = run_ok(
            Command::new(&cargo).args(&args).arg("--message-format=json").env("MSCCLPP_REQUIRE_EMBEDDED", "1"),
            &what,
        )?;
        for lib in cdylibs(&String::from_utf8_lossy(&out)) {
            let Some(name) = lib.file_name() else { continue };
            let rel = Path::new(crate::nccl::DIR).join(name);
            std::fs::create_dir_all(dest.join(crate::nccl::DIR)).map_err(|e| format!("creating nccl/: {e}"))?;
            std::fs::copy(&lib, dest.join(&rel)).map_err(|e| format!("copying {}: {e}", lib.display()))?;
            run_ok(Command::new("strip").arg("--strip-unneeded").arg(dest.join(&rel)), "strip the cdylib")?;
            if !files.contains(&rel) {
                files.push(rel);
            }
        }
        for a in artifacts(&String::from_utf8_lossy(&out)) {
            if files.contains(&a.dest) {
                continue;
            }
            if a.dest.starts_with("tests") && test_count(&a.source)? == 0 {
                // Its tests need features this build leaves off (`ib`, `mpi`): it would run nothing there.
                eprintln!("[xtask] left out {}: it holds no test in this build", a.dest.display());
                continue;
            }
            let to = dest.join(&a.dest);
            std::fs::copy(&a.source, &to)
                .map_err(|e| format!("copying {} to {}: {e}", a.source.display(), to.display()))?;
            run_ok(Command::new("strip").arg(&to), &format!("strip {}", to.display()))?;
            files.push(a.dest);
        }
    }
    for script in crate::nccl::SCRIPTS {
        let rel = Path::new(crate::nccl::DIR).join(script);
        std::fs::copy(Path::new("mscclpp-nccl/tests").join(script), dest.join(&rel))
            .map_err(|e| format!("copying mscclpp-nccl/tests/{script}: {e}"))?;
        files.push(rel);
    }
    files.extend(crate::python::collect(dest)?);
    let lib = Path::new(crate::nccl::DIR).join(crate::nccl::LIBRARY);
    if !files.contains(&lib) {
        return Err(format!("cargo reported no {}", crate::nccl::LIBRARY));
    }
    for need in [
        "mscclpp",
        "xtask",
        "allreduce",
        "gpu_checks",
        "tests/standalone_gpu",
        "reliability",
        "interp_cost",
        "mpi_allreduce",
    ] {
        if !files.iter().any(|f| f == Path::new(need)) {
            return Err(format!("cargo reported no executable `{need}`"));
        }
    }
    let tune = dest.join("tune");
    std::fs::create_dir_all(&tune).map_err(|e| format!("creating {}: {e}", tune.display()))?;
    for (stem, instances, threads) in tune_variants() {
        let (i, t) = (instances.to_string(), threads.to_string());
        let args = ["plan", "allreduce_oneshot_ll", "--world-size", "2", "--instances", &i, "--threads-per-block", &t];
        let plan =
            run_ok(Command::new(dest.join("mscclpp")).args(args).args(["--in-place", "--compact"]), "mscclpp plan")?;
        let rel = Path::new("tune").join(format!("{stem}.json"));
        std::fs::write(dest.join(&rel), plan).map_err(|e| format!("writing {}: {e}", rel.display()))?;
        files.push(rel);
    }
    files.extend(netns(dest)?);
    std::fs::copy("examples/custom_kernel.cu", dest.join("custom_kernel.cu"))
        .map_err(|e| format!("copying examples/custom_kernel.cu: {e}"))?;
    files.push(PathBuf::from("custom_kernel.cu"));
    let git = |args: &[&str]| Command::new("git").args(args).output().ok().filter(|o| o.status.success());
    let commit = git(&["rev-parse", "HEAD"]).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).map(|o| !o.stdout.is_empty());
    let manifest = manifest(commit.as_deref(), dirty, &now(), &files);
    std::fs::write(dest.join("MANIFEST"), manifest).map_err(|e| format!("writing the MANIFEST: {e}"))?;
    eprintln!("[xtask] collected {} files into {}", files.len(), dest.display());
    Ok(())
}

/// The MANIFEST: the commit and whether the tree differed from it, when, and the files.
pub fn manifest(commit: Option<&str>, dirty: Option<bool>, when: &str, files: &[PathBuf]) -> String {
    let dirty = match dirty {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    };
    let mut s = format!("commit: {}\ndirty: {dirty}\ncollected: {when}\nfiles:\n", commit.unwrap_or("unknown"));
    for f in files {
        s.push_str(&format!("  {}\n", f.display()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executables_come_from_the_compiler_artifact_messages() {
        let lines = [
            r#"{"reason":"compiler-artifact","target":{"name":"mscclpp","kind":["bin"]},"profile":{"test":false},"executable":"/t/release/mscclpp"}"#,
            r#"{"reason":"compiler-artifact","target":{"name":"mscclpp_lang","kind":["lib"]},"profile":{"test":false},"executable":null}"#,
            r#"{"reason":"compiler-artifact","target":{"name":"nvrtc_compile","kind":["test"]},"profile":{"test":true},"executable":"/t/release/deps/nvrtc_compile-0123"}"#,
            r#"{"reason":"compiler-message","message":{}}"#,
            r#"{"reason":"build-finished","success":true}"#,
            "not json",
        ]
        .join("\n");
        let a = artifacts(&lines);
        assert_eq!(
            a,
            vec![
                Artifact { source: "/t/release/mscclpp".into(), dest: "mscclpp".into() },
                Artifact { source: "/t/release/deps/nvrtc_compile-0123".into(), dest: "tests/nvrtc_compile".into() },
            ]
        );
    }

    #[test]
    fn shared_libraries_come_from_cdylib_artifacts() {
        let lines = [
            r#"{"reason":"compiler-artifact","target":{"name":"mscclpp_nccl","kind":["cdylib","rlib"]},"filenames":["/t/release/libmscclpp_nccl.so","/t/release/libmscclpp_nccl.rlib"],"executable":null}"#,
            r#"{"reason":"compiler-artifact","target":{"name":"mscclpp_lang","kind":["lib"]},"filenames":["/t/release/libmscclpp_lang.rlib"],"executable":null}"#,
        ]
        .join("\n");
        assert_eq!(cdylibs(&lines), vec![PathBuf::from("/t/release/libmscclpp_nccl.so")]);
        assert!(builds().iter().any(|b| b.contains(&"mscclpp-nccl") && b.contains(&"--lib")));
    }

    #[test]
    fn the_manifest_names_commit_dirtiness_and_files() {
        let m = manifest(Some("abc"), Some(true), "2026-01-01T00:00:00Z", &["mscclpp".into(), "tests/x".into()]);
        assert_eq!(m, "commit: abc\ndirty: yes\ncollected: 2026-01-01T00:00:00Z\nfiles:\n  mscclpp\n  tests/x\n");
        assert!(builds().iter().all(|b| b.contains(&"--release")));
    }
}
