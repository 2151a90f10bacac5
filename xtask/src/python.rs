//! The `python` part: the `mscclpp` wheel (built by maturin at `gpu collect`, with pytest's wheels beside it for a
//! host without network) installed into a target folder on `PYTHONPATH` (torch comes from the host's own
//! Python), its GPU and torch tests, and the torch examples under `torchrun` (the suite's rank count; with one GPU 2 ranks share it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::context::Context;
use crate::launch::words;
use crate::step::Step;

/// The folder inside the collected binaries: the wheels, `tests/` and `examples/`.
pub const DIR: &str = "python";
/// Where the wheel is installed on the GPU host.
const TARGET: &str = "/tmp/mscclpp-python";
/// The examples (from `examples/torch/`), each run under torchrun.
pub const EXAMPLES: [&str; 9] = [
    "_common.py",
    "customized_comm.py",
    "default_algorithms.py",
    "plan_based.py",
    "native_kernel.py",
    "dsl_program.py",
    "tuning.py",
    "timing.py",
    "peers.py",
];
/// The test files (from `mscclpp-python/tests/`).
pub const TESTS: [&str; 5] = ["conftest.py", "test_cpu.py", "test_nvrtc.py", "test_torch.py", "test_gpu.py"];

fn path(ctx: &Context, rel: &str) -> String {
    let p = ctx.bin.join(DIR).join(rel);
    std::fs::canonicalize(&p).unwrap_or(p).display().to_string()
}

/// The part's steps.
pub fn steps(ctx: &Context) -> Vec<Step> {
    let shared = ctx.gpus < 2;
    // Its own cache directory: the tuning example writes this machine's tuned table, which later parts (the
    // `nccl` part's timings) must not follow.
    let cache = std::env::temp_dir().join(format!("mscclpp-python-{}", std::process::id())).display().to_string();
    let on = |s: Step| s.with_env("PYTHONPATH", TARGET).with_env("MSCCLPP_CACHE_DIR", &cache).sharing_gpu0(shared);
    let dir = path(ctx, "");
    let install = format!(
        "set -e; rm -rf {TARGET}; python3 -m pip install --no-deps --no-index --target {TARGET} {dir}/*.whl \
         {dir}/wheels/*.whl; PYTHONPATH={TARGET} python3 -c 'import mscclpp, torch; print(\"mscclpp\", \
         mscclpp.__version__, mscclpp.__file__, \"torch\", torch.__version__)'"
    );
    let mut s = vec![Step::new("python: install the wheel", 120, vec!["bash".into(), "-c".into(), install])];
    let pytest = words(&["python3", "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-m", "gpu or torch"]);
    let mut argv = pytest;
    argv.push(path(ctx, "tests"));
    s.push(on(Step::new("python: GPU and torch tests (pytest)", 300, argv)).with_env("CUDA_VISIBLE_DEVICES", "0"));
    let kernel = ctx.bin.join("custom_kernel.cu").display().to_string();
    let timing_json = ctx.logs.join("python-timing.json").display().to_string();
    for (script, args, limit) in [
        ("customized_comm.py", vec![], 300),
        ("default_algorithms.py", vec![], 300),
        ("plan_based.py", vec![], 300),
        ("native_kernel.py", vec![kernel], 300),
        ("dsl_program.py", vec![], 300),
        ("tuning.py", vec![], 300),
        ("timing.py", vec!["--json".to_string(), timing_json], 600),
    ] {
        let argv = ctx.launcher.torchrun_python(&path(ctx, &format!("examples/{script}")), &args);
        s.push(on(Step::new(format!("python: torchrun {script}"), limit, argv)));
    }
    // The peers (NCCL, NCCL's symmetric kernels, torch symm_mem) need a GPU per rank; the table becomes a PNG.
    if !shared {
        let log = |name: &str| ctx.logs.join(name).display().to_string();
        let (csv, json, png) = (log("peers.csv"), log("peers.json"), log("peers.png"));
        let args = words(&["--csv", &csv, "--json", &json]);
        let argv = ctx.launcher.torchrun_python(&path(ctx, "examples/peers.py"), &args);
        s.push(on(Step::new("python: torchrun peers.py", 900, argv)));
        s.push(Step::new("python: plot the peers' table", 60, ctx.mscclpp(&["plot", &csv, "-o", &png])));
    }
    s
}

fn run_ok(cmd: &mut Command, what: &str) -> Result<(), String> {
    let st = cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit()).status().map_err(|e| format!("{what}: {e}"))?;
    if st.success() { Ok(()) } else { Err(format!("{what} failed ({st})")) }
}

/// maturin from `PATH`, else the one scripts/test.sh installs into `.venv-cuda`.
fn maturin() -> PathBuf {
    if crate::launch::on_path("maturin") { PathBuf::from("maturin") } else { PathBuf::from(".venv-cuda/bin/maturin") }
}

/// Builds the wheel (release, kernels embedded) into `dest/python`, downloads pytest's wheels for CPython 3.12
/// beside it, and copies the tests and the torch examples; returns the files added (relative to `dest`).
pub fn collect(dest: &Path) -> Result<Vec<PathBuf>, String> {
    let out = dest.join(DIR);
    for sub in ["wheels", "tests", "examples"] {
        std::fs::create_dir_all(out.join(sub)).map_err(|e| format!("creating {}/{sub}: {e}", out.display()))?;
    }
    eprintln!("[xtask] maturin build --release -m mscclpp-python/Cargo.toml");
    run_ok(
        Command::new(maturin())
            .args(["build", "--release", "-m", "mscclpp-python/Cargo.toml", "-o"])
            .arg(&out)
            .env("MSCCLPP_REQUIRE_EMBEDDED", "1"),
        "maturin build (install it with `pip install maturin`, or run scripts/test.sh once)",
    )?;
    let mut files = Vec::new();
    for e in std::fs::read_dir(&out).map_err(|e| format!("reading {}: {e}", out.display()))? {
        let name = e.map_err(|e| e.to_string())?.file_name().to_string_lossy().into_owned();
        if name.starts_with("mscclpp-") && name.ends_with(".whl") {
            files.push(Path::new(DIR).join(name));
        }
    }
    if !files.iter().any(|f| f.to_string_lossy().contains("abi3")) {
        return Err("maturin wrote no abi3 wheel".into());
    }
    run_ok(
        Command::new("python3")
            .args(["-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version", "3.12", "-d"])
            .arg(out.join("wheels"))
            .arg("pytest>=7"),
        "pip download pytest (for the GPU host, which has no network)",
    )?;
    for e in std::fs::read_dir(out.join("wheels")).map_err(|e| format!("reading wheels/: {e}"))? {
        files.push(Path::new(DIR).join("wheels").join(e.map_err(|e| e.to_string())?.file_name()));
    }
    for (from, sub, names) in
        [("mscclpp-python/tests", "tests", &TESTS[..]), ("examples/torch", "examples", &EXAMPLES[..])]
    {
        for n in names {
            let rel = Path::new(DIR).join(sub).join(n);
            std::fs::copy(Path::new(from).join(n), dest.join(&rel)).map_err(|e| format!("copying {from}/{n}: {e}"))?;
            files.push(rel);
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_python_part_installs_then_tests_then_runs_every_example() {
        let mut ctx = crate::tests::context(2);
        let s = steps(&ctx);
        // install, pytest, every example but `_common.py`, and the peers' plot.
        assert_eq!(s.len(), 2 + EXAMPLES.len() - 1 + 1);
        assert!(s.last().is_some_and(|x| x.argv.iter().any(|a| a == "plot")));
        assert!(s[0].argv.join(" ").contains("--no-index --target"));
        assert!(s[1].argv.iter().any(|a| a == "gpu or torch"));
        for step in &s[1..s.len() - 1] {
            assert!(step.env.iter().any(|(k, v)| k == "PYTHONPATH" && v == TARGET), "{}", step.name);
            assert!(!step.env.iter().any(|(k, _)| k == "MSCCLPP_SHARED_GPU"), "{}", step.name);
        }
        for script in &EXAMPLES[1..] {
            assert!(
                s.iter().any(|x| x.argv[0] == "torchrun" && x.argv.iter().any(|a| a.ends_with(script))),
                "{script}"
            );
        }
        ctx.gpus = 1;
        let shared = steps(&ctx);
        assert!(shared[2..].iter().all(|x| x.env.iter().any(|(k, v)| k == "MSCCLPP_SHARED_GPU" && v == "1")));
        assert!(!shared.iter().any(|x| x.argv.iter().any(|a| a.ends_with("peers.py"))), "peers need a GPU per rank");
    }

    #[test]
    fn the_copied_files_exist() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for n in TESTS {
            assert!(root.join("mscclpp-python/tests").join(n).is_file(), "{n}");
        }
        for n in EXAMPLES {
            assert!(root.join("examples/torch").join(n).is_file(), "{n}");
        }
    }
}
