//! The `mscclpp` binary: `list`, `plan`, `install`, and `verify` of a plan with source locations.

use std::path::Path;
use std::process::{Command, Output};

use mscclpp_lang::plan::parse_plan;

#[path = "../../tests/common/mod.rs"]
mod common;
use common::DEFAULTS;

/// Runs the binary with a private, empty cache directory.
fn mscclpp(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mscclpp")).args(args).env("MSCCLPP_CACHE_DIR", cache).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn list_shows_every_program_with_its_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let out = mscclpp(&["list"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("NAME"), "{stdout}");
    for name in DEFAULTS {
        assert!(stdout.contains(name), "{name} missing from:\n{stdout}");
    }
    for column in ["COLLECTIVE", "PROTOCOL", "WORLD", "RANKS/NODE", "MESSAGES", "BUFFERS", "TAGS"] {
        assert!(stdout.contains(column), "{column} missing");
    }
    assert!(stdout.contains("256 KiB"), "message ranges are shown:\n{stdout}");
}

#[test]
fn list_json_is_an_array_of_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let out = mscclpp(&["list", "--json"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = v.as_array().unwrap();
    assert!(list.len() >= 9, "{} programs", list.len());
    let ll = list.iter().find(|p| p["name"] == "allreduce_oneshot_ll").unwrap();
    assert_eq!(ll["collective"], "allreduce");
    assert_eq!(ll["protocol"], "LL");
    assert_eq!(ll["world_sizes"]["min"], 2);
    assert_eq!(ll["world_sizes"]["max"], 8);
    assert_eq!(ll["ranks_per_node"], "world");
    assert_eq!(ll["message_sizes"]["max"], 256 * 1024);
    assert_eq!(ll["buffer_mode"], "both");
    assert_eq!(ll["tags"]["default"], 1);
    let filtered = mscclpp(&["list", "--json", "--collective", "reducescatter"], dir.path());
    let v: serde_json::Value = serde_json::from_slice(&filtered.stdout).unwrap();
    assert_eq!(
        v.as_array().unwrap().len(),
        6,
        "reducescatter, reducescatter_fused, reducescatter_ll, reducescatter_pipelined, reducescatter_rotated, \
         reducescatter_staged"
    );
}

#[test]
fn plan_output_parses_for_every_default_at_2_4_and_8_ranks() {
    let dir = tempfile::tempdir().unwrap();
    for name in DEFAULTS {
        for ws in ["2", "4", "8"] {
            let out = mscclpp(&["plan", name, "--world-size", ws], dir.path());
            assert!(out.status.success(), "{name} {ws}: {}", text(&out.stderr));
            let plan = parse_plan(&text(&out.stdout)).unwrap_or_else(|e| panic!("{name} {ws}: {e}"));
            assert_eq!(plan.name, *name);
            assert_eq!(plan.world_size().to_string(), ws);
        }
    }
}

#[test]
fn plan_writes_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out/plan.json");
    let out = mscclpp(
        &["plan", "allgather_allpairs", "--world-size", "8", "--in-place", "-o", file.to_str().unwrap()],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("wrote"), "{}", text(&out.stderr));
    let plan = parse_plan(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(plan.world_size(), 8);
    assert!(plan.inplace);
    let out = mscclpp(&["plan", "allgather_allpairs", "-n", "2", "--out-of-place", "--compact"], dir.path());
    assert!(out.status.success());
    assert_eq!(text(&out.stdout).trim().lines().count(), 1);
    assert!(!parse_plan(&text(&out.stdout)).unwrap().inplace);
}

#[test]
fn plan_carries_source_locations_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let plain = mscclpp(&["plan", "allgather_allpairs", "-n", "2"], dir.path());
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert!(!text(&plain.stdout).contains("source_locations"));
    let out = mscclpp(&["plan", "allgather_allpairs", "-n", "2", "--source-locations"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan = parse_plan(&text(&out.stdout)).unwrap();
    let sources: Vec<_> =
        plan.gpus.iter().flat_map(|g| &g.threadblocks).flat_map(|tb| &tb.ops).flat_map(|op| op.sources()).collect();
    assert!(!sources.is_empty(), "no operation carries a source location");
    // Every recorded call lies in the program's own source file.
    assert!(
        sources.iter().all(|s| s.file.ends_with("mscclpp-algorithms/src/allgather.rs") && s.line > 0),
        "{sources:?}"
    );
}

#[test]
fn verify_names_the_program_lines_of_a_finding() {
    use mscclpp_lang::prelude::*;
    // Rank 0 puts into rank 1's output while rank 1 copies into it: a data race.
    let spec = ProgramSpec::new("racy", Collective::Test, 2).buffer_chunks(1, 1).source_locations(true);
    let mut line = 0;
    let plan = build_plan::<Simple>(&spec, |p| {
        p.memory_channel(1, 0)?.put(p.output(1)?.chunk(0)?, p.input(0)?.chunk(0)?, 0)?;
        line = line!() - 1;
        p.rank(1)?.copy(p.output(1)?.chunk(0)?, p.input(1)?.chunk(0)?, 0)
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("racy.json");
    std::fs::write(&file, mscclpp_lang::plan::emit_plan(&plan)).unwrap();
    let out = mscclpp(&["verify", file.to_str().unwrap(), "--schedules", "4"], dir.path());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("data race"), "{stdout}");
    assert!(stdout.contains(&format!("`put` at {}:{line}:", file!())), "{stdout}");
    assert!(stdout.contains(&format!("`copy` at {}:{}:", file!(), line + 2)), "{stdout}");
}

#[test]
fn plan_tuned_for_a_size_carries_the_registry_choice() {
    let dir = tempfile::tempdir().unwrap();
    let tuned = |args: &[&str]| {
        let out = mscclpp(args, dir.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
        let plan = parse_plan(&text(&out.stdout)).unwrap();
        (plan.threads_per_block(), plan.gpus[0].threadblocks.len())
    };
    // The one-shot LL allreduce: 256 threads and 4 thread blocks per rank at 4 KiB, 512 and 16 at 64 KiB.
    assert_eq!(tuned(&["plan", "allreduce_oneshot_ll", "-n", "2", "--size", "4K"]), (256, 4));
    assert_eq!(tuned(&["plan", "allreduce_oneshot_ll", "-n", "2", "--size", "64K"]), (512, 16));
    // Explicit instances and threads win over the table; no size keeps the program's defaults.
    let explicit = ["plan", "allreduce_oneshot_ll", "-n", "2", "--size", "64K", "--instances", "1"];
    assert_eq!(tuned(&[&explicit[..], &["--threads-per-block", "128"]].concat()), (128, 2));
    assert_eq!(tuned(&["plan", "allreduce_oneshot_ll", "-n", "2"]), (1024, 2));
    let out = mscclpp(&["plan", "allreduce_twoshot", "-n", "2", "--threads-per-block", "100"], dir.path());
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("multiple of 32"), "{}", text(&out.stderr));
}

#[test]
fn plan_rejects_unknown_names_and_impossible_sizes_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let out = mscclpp(&["plan", "allreduce_ring", "--world-size", "4"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("allreduce_ring") && err.contains("allreduce_twoshot") && err.contains("mscclpp list"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    let out = mscclpp(&["plan", "allreduce_twoshot", "--world-size", "16"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("2..=8") && err.contains("16"), "{err}");

    let out = mscclpp(&["plan", "seed_allgather", "--world-size", "2", "--out-of-place"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("in place only"), "{}", text(&out.stderr));

    let out = mscclpp(&["plan", "allreduce_twoshot", "--world-size", "8", "--ranks-per-node", "4"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("ranks per node"), "{}", text(&out.stderr));
}

#[test]
fn install_writes_the_default_plans_into_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let out = mscclpp(&["install"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("installed"), "{}", text(&out.stdout));
    for name in ["allgather_allpairs", "allreduce_oneshot_ll", "reducescatter", "alltoall"] {
        for ws in [2, 4, 8] {
            let f = dir.path().join(format!("default/{name}_n{ws}_outofplace.json"));
            assert!(parse_plan(&std::fs::read_to_string(&f).unwrap()).is_ok(), "{}", f.display());
        }
    }
    let index = std::fs::read_to_string(dir.path().join("default/index.json")).unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&index).unwrap().as_array().unwrap().len() >= 9 * 3);

    // --dir overrides the environment; --world-sizes narrows the set.
    let other = tempfile::tempdir().unwrap();
    let out = mscclpp(&["install", "--dir", other.path().to_str().unwrap(), "--world-sizes", "2"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(other.path().join("default/broadcast_n2_inplace.json").exists());
    assert!(!other.path().join("default/broadcast_n4_inplace.json").exists());
    // --ranks-per-node installs a multi-node shape: two nodes of 4 at 8 ranks.
    let nodes = tempfile::tempdir().unwrap();
    let out = mscclpp(
        &["install", "--dir", nodes.path().to_str().unwrap(), "--world-sizes", "8", "--ranks-per-node", "4"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let f = nodes.path().join("default/allreduce_two_nodes_n8_rpn4_inplace.json");
    assert_eq!(parse_plan(&std::fs::read_to_string(&f).unwrap()).unwrap().world_size(), 8, "{}", f.display());
    assert!(!nodes.path().join("default/allreduce_oneshot_ll_n8_inplace.json").exists());
}

#[test]
fn install_warms_the_kernel_cache_for_architectures_without_embedded_kernels() {
    if !mscclpp_exec::sys::loader::nvrtc_or_skip("install_warms_the_kernel_cache") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |embedded: &str| {
        Command::new(env!("CARGO_BIN_EXE_mscclpp"))
            .args(["install", "--world-sizes", "2", "--kernel-archs", "sm_90"])
            .env("MSCCLPP_CACHE_DIR", dir.path())
            .env("MSCCLPP_EMBEDDED_KERNELS", embedded)
            .output()
            .unwrap()
    };
    // Embedded kernels off: every entry point and the primitives are compiled into the cache.
    let out = run("0");
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    // Six element types, three packet formats (LL16, LL8, LL128), two block-size classes.
    let entries = mscclpp_exec::sys::interpreter::kernel_names().len();
    assert_eq!(entries, 36);
    let line = format!("kernels for sm_90: {entries} interpreter entry points and the primitives");
    assert!(text(&out.stdout).contains(&line), "{}", text(&out.stdout));
    let cubins = std::fs::read_dir(dir.path().join("kernels")).unwrap().count();
    assert_eq!(cubins, entries + 1, "one cubin per entry point plus the primitives");
    // With embedded kernels (when this build has them), there is nothing to compile.
    if !mscclpp_exec::sys::embedded::CUBINS.is_empty() {
        let out = run("1");
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("kernels for sm_90: embedded in this binary, nothing to compile"));
    }
}

/// Git's answer in the workspace this test was built from, `None` where git fails (no checkout, no git).
fn git(args: &[&str]) -> Option<String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new("git").arg("--no-optional-locks").arg("-C").arg(workspace).args(args).output().ok()?;
    out.status.success().then(|| text(&out.stdout).trim_end().to_string())
}

#[test]
fn version_names_the_commit_and_whether_the_tree_was_dirty() {
    let dir = tempfile::tempdir().unwrap();
    let out = mscclpp(&["--version"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = text(&out.stdout);
    assert_eq!(line.trim_end(), mscclpp_cli::BUILD_INFO);
    // mscclpp 0.1.0 (commit 1a2b3c4, dirty)
    let rest = line.trim_end().strip_prefix(&format!("mscclpp {} (commit ", env!("CARGO_PKG_VERSION"))).unwrap();
    let inner = rest.strip_suffix(')').unwrap_or_else(|| panic!("{line}"));
    let (commit, dirty) = match inner.split_once(", ") {
        Some((c, flag)) => {
            assert_eq!(flag, "dirty", "{line}");
            (c, true)
        }
        None => (inner, false),
    };
    assert_eq!(commit, mscclpp_cli::COMMIT.split(", ").next().unwrap());
    let top = git(&["rev-parse", "--show-toplevel"]).map(std::path::PathBuf::from);
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let in_checkout = top.is_some_and(|t| t.canonicalize().ok() == workspace.canonicalize().ok());
    if !in_checkout {
        assert_eq!(commit, "unknown", "{line}");
        assert!(!dirty, "{line}");
        return;
    }
    assert!(commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit()), "{line}");
    let head = git(&["rev-parse", "HEAD"]).unwrap();
    assert!(head.starts_with(commit), "{commit} is not HEAD {head}");
    let status = git(&["status", "--porcelain", "--untracked-files=no"]).unwrap();
    assert_eq!(dirty, !status.is_empty(), "{line} but git status says:\n{status}");
}

#[test]
fn a_closed_output_pipe_ends_the_command_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let cache = tempfile::tempdir().unwrap();
    // A plan for 8 ranks is far larger than a pipe's buffer: reading one byte and closing the pipe makes the
    // command's next write fail.
    let mut child = Command::new(env!("CARGO_BIN_EXE_mscclpp"))
        .args(["plan", "allreduce_oneshot_ll", "--world-size", "8"])
        .env("MSCCLPP_CACHE_DIR", cache.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(mscclpp_cli::BROKEN_PIPE_EXIT), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "a panic was reported: {stderr}");
}

#[test]
fn verify_takes_ranks_per_node_and_names_shapes_a_program_does_not_admit() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["verify", "allreduce_oneshot_ll", "--instances", "1", "--schedules", "2", "--launches", "1"];
    let ok = mscclpp(&[&base[..], &["-n", "2", "--ranks-per-node", "2"]].concat(), dir.path());
    assert!(ok.status.success(), "{}{}", text(&ok.stdout), text(&ok.stderr));
    assert!(text(&ok.stdout).contains("passed, 0 with findings"), "{}", text(&ok.stdout));
    let two_nodes = mscclpp(&[&base[..], &["-n", "4", "--ranks-per-node", "2"]].concat(), dir.path());
    assert_eq!(two_nodes.status.code(), Some(2), "{}", text(&two_nodes.stdout));
    let err = text(&two_nodes.stderr);
    assert!(err.contains("admits no shape") && err.contains("ranks per node"), "{err}");
}
