//! CPU tests of the suite's machinery: arguments, the parts table, selection rules, deadlines and the archive.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::launch::{Launcher, SuiteEnv, words};
use crate::parts::{self, Context, PARTS, Part, parse_programs};
use crate::step::{Outcome, Step, is_running};
use crate::suite::{self, RunConfig};
use crate::{Cli, Gpu, Top};

/// `mscclpp list --json` as the registry answers it (the fields the suite reads).
const PROGRAMS: &str = r#"[
  {"name":"allgather_allpairs","collective":"allgather","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":null},"buffer_mode":"both","tags":{"default":1}},
  {"name":"allgather_allpairs_ll","collective":"allgather","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":1048576},"buffer_mode":"both","tags":{"default":1}},
  {"name":"allreduce_nvls_zero_copy","collective":"allreduce","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":null},"buffer_mode":"in_place","tags":{"example":1,"nvls":1}},
  {"name":"allreduce_oneshot_ll","collective":"allreduce","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":262144},"buffer_mode":"both","tags":{"default":1}},
  {"name":"allreduce_twoshot","collective":"allreduce","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":null},"buffer_mode":"both","tags":{"default":1}},
  {"name":"alltoall","collective":"alltoall","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":null},"buffer_mode":"both","tags":{"default":1}},
  {"name":"broadcast","collective":"broadcast","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":null},"buffer_mode":"both","tags":{"default":1}},
  {"name":"reducescatter","collective":"reducescatter","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":null},"buffer_mode":"both","tags":{"default":1}},
  {"name":"reducescatter_ll","collective":"reducescatter","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":1048576},"buffer_mode":"both","tags":{"default":1}},
  {"name":"reducescatter_pipelined","collective":"reducescatter","world_sizes":{"min":2,"max":8},"message_sizes":{"min":1048576,"max":1073741824},"buffer_mode":"both","ranks_per_node":"world","tags":{"default":0}},
  {"name":"allreduce_two_nodes","collective":"allreduce","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":null},"buffer_mode":"both","ranks_per_node":{"nodes":2},"tags":{"default":0}},
  {"name":"seed_allgather","collective":"allgather","world_sizes":{"min":2,"max":8},"message_sizes":{"min":0,"max":null},"buffer_mode":"in_place","tags":{"example":1}}
]"#;

pub(crate) fn context(ranks: usize) -> Context {
    let env = SuiteEnv::new(|_| None, |_| false);
    Context {
        bin: PathBuf::from("/b"),
        tests: vec![PathBuf::from("/b/tests/mscclpp_sys"), PathBuf::from("/b/tests/nvrtc_compile")],
        programs: parse_programs(PROGRAMS).expect("programs"),
        corpus: parts::corpus_plans(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/mscclpp")),
        launcher: Launcher::new(ranks, &env, true, "/b/xtask"),
        nccl_script: PathBuf::from("/tmp/nccl.py"),
        only: None,
        gpus: 2,
        logs: PathBuf::from("/logs"),
    }
}

fn steps(part: &str) -> Vec<Step> {
    parts::find(part).expect("part").steps_in(&context(2))
}

fn names(steps: &[Step]) -> Vec<String> {
    steps.iter().map(|s| s.name.clone()).collect()
}

#[test]
fn an_unknown_part_is_a_clear_error_listing_the_parts() {
    let err =
        Cli::try_parse_from(["xtask", "gpu", "run", "--part", "runtime", "--part", "nope"]).expect_err("unknown part");
    let text = err.to_string();
    assert!(text.contains("unknown part `nope`"), "{text}");
    for p in PARTS {
        assert!(text.contains(p.name), "{text} lacks {}", p.name);
    }
    assert!(Cli::try_parse_from(["xtask", "gpu", "run"]).is_err(), "a run names at least one part");
}

#[test]
fn run_arguments_parse_with_their_defaults() {
    let cli = Cli::try_parse_from(["xtask", "gpu", "run", "--part", "final", "--part", "gib", "--deadline-s", "560"])
        .expect("parse");
    let Top::Gpu(Gpu::Run(a)) = cli.command else { panic!("not a run") };
    assert_eq!(a.parts.iter().map(|p| p.name).collect::<Vec<_>>(), ["final", "gib"]);
    assert_eq!(a.deadline_s, Some(560));
    assert_eq!(a.bin, PathBuf::from(".gpu-bin"));
    assert_eq!(a.ranks, 2);
    let cli = Cli::try_parse_from(["xtask", "gpu", "collect"]).expect("parse");
    assert!(matches!(cli.command, Top::Gpu(Gpu::Collect { dest }) if dest == Path::new(".gpu-bin")));
}

#[test]
fn the_parts_that_need_the_corpus_are_named_and_run_fewer_steps_without_it() {
    let with = context(2);
    let mut without = context(2);
    without.corpus.clear();
    for name in parts::NEEDS_CORPUS {
        let part = parts::find(name).expect("a part of the table");
        let (a, b) = (part.steps_in(&with).len(), part.steps_in(&without).len());
        assert!(a > b, "part {name}: {a} steps with the corpus, {b} without");
    }
    // Every other part runs the same steps either way.
    for p in PARTS.iter().filter(|p| !parts::NEEDS_CORPUS.contains(&p.name)) {
        assert_eq!(names(&p.steps_in(&with)), names(&p.steps_in(&without)), "part {}", p.name);
    }
}

#[test]
fn the_parts_table_is_not_empty_and_every_part_has_steps() {
    assert!(!PARTS.is_empty());
    let ctx = context(2);
    assert!(!ctx.corpus.is_empty(), "the corpus is found");
    for p in PARTS {
        let s = p.steps_in(&ctx);
        assert!(!s.is_empty(), "part {} has no steps", p.name);
        assert!(s.iter().all(|s| !s.argv.is_empty() && !s.limit.is_zero()), "part {}", p.name);
        let mut n = names(&s);
        n.sort();
        n.dedup();
        assert_eq!(n.len(), s.len(), "part {} repeats a step name", p.name);
        assert!(parts::table().contains(p.name));
    }
}

#[test]
fn programs_parse_with_their_tags() {
    let p = parse_programs(
        r#"[{"name":"a","collective":"allreduce","buffer_mode":"in_place","tags":{"default":0,"nvls":1}}]"#,
    )
    .expect("parse");
    assert_eq!(p[0].tags, ["nvls"]);
    assert!(p[0].table_only, "`default = 0`: a program of tuned tables only");
    assert!(p[0].in_place_only && p[0].max_size.is_none());
    assert!(parse_programs(r#"[{"collective":"allreduce"}]"#).is_err(), "a program without a name");
    assert!(parse_programs("{}").is_err());
}

#[test]
fn the_matrix_follows_the_registry_defaults_and_skips_multicast() {
    let a = names(&steps("matrix-a"));
    let b = names(&steps("matrix-b"));
    assert_eq!(
        a[1..],
        [
            "default allgather_allpairs",
            "default allgather_allpairs_ll",
            "default allreduce_oneshot_ll",
            "default allreduce_twoshot"
        ]
    );
    assert_eq!(
        b[1..],
        [
            "default alltoall",
            "default broadcast",
            "default reducescatter",
            "default reducescatter_ll",
            "default reducescatter_pipelined",
            "default seed_allgather"
        ]
    );
    assert!(a.iter().chain(&b).all(|n| !n.contains("nvls")));
    let seed = steps("matrix-b").into_iter().find(|s| s.name == "default seed_allgather").expect("seed");
    assert!(seed.argv.contains(&"--in-place".to_string()) && seed.argv.contains(&"f16,i32".to_string()));
    let gib = names(&steps("gib"));
    assert_eq!(
        gib[1..],
        [
            "1 GiB allgather_allpairs",
            "1 GiB allreduce_twoshot",
            "1 GiB alltoall",
            "1 GiB broadcast",
            "1 GiB reducescatter",
            "1 GiB reducescatter_pipelined"
        ]
    );
    let mut narrowed = context(2);
    narrowed.only = Some(vec!["broadcast".into()]);
    assert_eq!(names(&parts::find("gib").expect("gib").steps_in(&narrowed))[1..], ["1 GiB broadcast"]);
    // The same narrowing holds for the matrix and soak parts.
    narrowed.only = Some(vec!["allreduce_twoshot".into()]);
    assert_eq!(
        names(&parts::find("matrix-a").expect("matrix-a").steps_in(&narrowed))[1..],
        ["default allreduce_twoshot"]
    );
    assert!(names(&parts::find("matrix-b").expect("matrix-b").steps_in(&narrowed))[1..].is_empty());
    let soaked: Vec<String> = ["soak-a", "soak-b"]
        .iter()
        .flat_map(|p| names(&parts::find(p).expect("soak part").steps_in(&narrowed)))
        .collect();
    assert_eq!(soaked, ["reliability soak allreduce_twoshot x10000", "reliability soak graph replays x1000"]);
}

#[test]
fn corpus_steps_take_the_plans_for_the_job_size() {
    let two = steps("corpus");
    assert!(two.len() > 1);
    assert!(two[1..].iter().all(|s| s.name.starts_with("corpus ") && !s.name.contains("n4")));
    // Of the unit-test plans, exactly the four over port channels.
    let mut units: Vec<&str> = two[1..].iter().map(|s| s.name.as_str()).filter(|n| n.contains("unit__")).collect();
    units.sort();
    assert_eq!(
        units,
        [
            "corpus unit__flush_fuse_test__n2.json",
            "corpus unit__flush_test__n2.json",
            "corpus unit__put_with_signal_and_flush_test__n2.json",
            "corpus unit__put_with_signal_test__n2.json"
        ]
    );
    let four = parts::find("corpus").expect("corpus").steps_in(&context(4));
    assert!(four.len() > 1 && four[1..].iter().all(|s| !s.name.contains("__n2")), "{:?}", names(&four));
}

#[test]
fn shared_gpu_puts_two_ranks_on_gpu_0_and_says_timings_mean_nothing() {
    let p = parts::find("shared-gpu").expect("part");
    let s = p.steps_in(&context(8));
    let runs: Vec<&Step> =
        s.iter().filter(|s| s.name.starts_with("shared-gpu ") && !s.name.starts_with("shared-gpu corpus")).collect();
    assert_eq!(runs.len(), 9, "every program of the matrices");
    for r in &runs {
        assert!(r.env.contains(&("MSCCLPP_SHARED_GPU".into(), "1".into())));
        assert!(r.env.contains(&("CUDA_VISIBLE_DEVICES".into(), "0".into())));
        let line = r.argv.join(" ");
        assert!(
            line.contains("-np 2 ") && line.contains("-x MSCCLPP_SHARED_GPU") && line.contains("--eager-and-graph"),
            "{line}"
        );
        assert!(line.contains("f16,bf16,f32,i32") && line.contains("--no-timing"), "{line}");
    }
    assert!(!s.iter().any(|s| s.name.starts_with("test ")), "the test binaries belong to one-gpu");
    let h = suite::header(p, 2, &["GPUs: none".to_string()]);
    assert!(h.contains("meaningless") && h.contains("ranks 2") && h.contains("GPUs: none"), "{h}");
}

#[test]
fn failure_checks_must_fail_with_their_pattern() {
    let f = steps("final");
    let bad = f.iter().find(|s| s.name == "a rank that never calls").expect("step");
    assert!(matches!(&bad.expect, crate::step::Expect::FailureWith(t) if t.contains(&"did not arrive".to_string())));
    assert!(bad.argv.join(" ").contains(": -np 1 sleep 20"));
    assert!(f.iter().any(|s| s.argv.first().is_some_and(|p| p == "torchrun")));
    let one = steps("one-gpu");
    assert!(one.iter().all(|s| s.env.iter().any(|(k, _)| k == "CUDA_VISIBLE_DEVICES")));
    assert!(
        one.iter().filter(|s| s.name.starts_with("test ")).all(|s| s.argv.contains(&"--include-ignored".to_string()))
    );
    // The two-GPU tests: skipped by `one-gpu`, run by `runtime` (two ranks) and `nccl`.
    assert!(!parts::TWO_GPU_TESTS.is_empty());
    let mut ctx = context(2);
    for (bin, _) in parts::TWO_GPU_TESTS {
        ctx.tests.push(PathBuf::from(format!("/b/tests/{bin}")));
    }
    let skipped = |part: &str, bin: &str, test: &str| {
        let s = parts::find(part).expect("part").steps_in(&ctx);
        let t = s.into_iter().find(|s| s.name == format!("test {bin}")).expect("the test binary's step");
        t.argv.windows(2).any(|w| w[0] == "--skip" && w[1] == test)
    };
    for (bin, test) in parts::TWO_GPU_TESTS {
        assert!(skipped("one-gpu", bin, test), "one-gpu runs {bin} {test}");
        assert!(!skipped("runtime", bin, test), "runtime skips {bin} {test}");
    }
    assert!(parts::TWO_GPU_TESTS.iter().any(|(_, t)| *t == crate::nccl::WINDOW_TEST));
}

fn fake_part(name: &'static str) -> Part {
    Part { name, checks: "a test part", minutes: 0, ranks: None, note: None, steps: |_| Vec::new() }
}

fn sh(name: &str, limit_s: u64, script: &str) -> Step {
    Step::new(name, limit_s, words(&["sh", "-c", script]))
}

fn config(dir: &Path, deadline: Option<Duration>) -> RunConfig {
    RunConfig {
        out: dir.join("out"),
        logs: dir.join("logs"),
        deadline,
        min_part: Duration::from_secs(1),
        reserve: Duration::ZERO,
        env: vec![("SUITE_VAR".into(), "set".into())],
        provenance: vec!["binaries: test".into()],
    }
}

#[test]
fn a_step_past_the_deadline_is_cut_with_all_its_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pids = dir.path().join("pids");
    let p = pids.display();
    // A child in the step's group, one that leaves it for a session of its own, and the step itself, all asleep.
    let script = format!("sleep 300 & echo $! >> {p}; setsid sleep 300 & echo $! >> {p}; sleep 300");
    let part = fake_part("slow");
    let plan = vec![(&part, vec![sh("sleeper", 600, &script), sh("after", 10, "true")], 2)];
    let t0 = Instant::now();
    let results = suite::run(&plan, &config(dir.path(), Some(Duration::from_secs(3)))).expect("run");
    assert!(t0.elapsed() < Duration::from_secs(15), "stopped at the deadline, not at the step's limit");
    assert_eq!(results[0].outcome, Outcome::Cut);
    assert_eq!(results[1].outcome, Outcome::NotRun);
    let pids: Vec<u32> =
        std::fs::read_to_string(&pids).expect("pids").lines().map(|l| l.parse().expect("pid")).collect();
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(!is_running(pid), "process {pid} outlived the deadline");
    }
    let log = std::fs::read_to_string(dir.path().join("logs/slow.log")).expect("log");
    assert!(log.contains("--- CUT sleeper") && log.contains("cut by the deadline"), "{log}");
}

#[test]
fn a_step_past_its_own_limit_fails_and_the_next_one_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let part = fake_part("limits");
    let plan = vec![(&part, vec![sh("hangs", 1, "sleep 300"), sh("next", 10, "test \"$SUITE_VAR\" = set")], 2)];
    let results = suite::run(&plan, &config(dir.path(), None)).expect("run");
    assert!(matches!(&results[0].outcome, Outcome::Fail(w) if w.contains("timed out")), "{:?}", results[0]);
    assert_eq!(results[1].outcome, Outcome::Pass, "the suite's environment reaches the step");
}

#[test]
fn expected_failures_pass_only_with_their_pattern() {
    let dir = tempfile::tempdir().expect("tempdir");
    let part = fake_part("expect");
    let plan = vec![(
        &part,
        vec![
            sh("right", 10, "echo 'the plan is for 4 ranks'; exit 3").must_fail_with(&["is for 4 ranks"]),
            sh("wrong text", 10, "echo other; exit 3").must_fail_with(&["is for 4 ranks"]),
            sh("succeeds", 10, "echo 'is for 4 ranks'").must_fail_with(&["is for 4 ranks"]),
            Step::new("missing program", 10, words(&["/nonexistent/program"])),
        ],
        2,
    )];
    let r = suite::run(&plan, &config(dir.path(), None)).expect("run");
    assert_eq!(r[0].outcome, Outcome::Pass);
    assert!(matches!(r[1].outcome, Outcome::Fail(_)));
    assert!(matches!(r[2].outcome, Outcome::Fail(_)));
    assert!(matches!(r[3].outcome, Outcome::Fail(_)));
}

#[test]
fn the_archive_holds_every_log_and_the_summary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (fake_part("first"), fake_part("second"));
    let plan = vec![(&a, vec![sh("ok", 10, "echo RESULT x 1.0 us")], 2), (&b, vec![sh("bad", 10, "exit 1")], 2)];
    let cfg = config(dir.path(), None);
    let results = suite::run(&plan, &cfg).expect("run");
    assert_eq!(results.len(), 2);
    let out = Command::new("tar").arg("tzf").arg(cfg.out.join("gpu-logs.tgz")).output().expect("tar");
    let listing = String::from_utf8_lossy(&out.stdout);
    for f in ["first.log", "second.log", "summary.md"] {
        assert!(listing.lines().any(|l| l.trim_start_matches("./") == f), "{f} missing from {listing}");
    }
    let summary = std::fs::read_to_string(cfg.out.join("summary.md")).expect("summary");
    assert!(
        summary.contains("| first | ok | PASS |") && summary.contains("| second | bad | FAIL (exit 1) |"),
        "{summary}"
    );
    assert!(summary.contains("first: RESULT x 1.0 us"), "{summary}");
    let log = std::fs::read_to_string(cfg.logs.join("first.log")).expect("log");
    assert!(log.starts_with("# mscclpp GPU suite, part first") && log.contains("# binaries: test"), "{log}");
}

#[test]
fn a_test_binary_that_runs_no_test_does_not_pass() {
    assert_eq!(crate::step::tests_ran("running 0 tests\n\ntest result: ok. 0 passed"), 0);
    assert_eq!(crate::step::tests_ran("running 7 tests\ntest a ... ok\nrunning 1 test\n"), 8);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let empty = Step::new("empty", 10, vec!["echo".into(), "running 0 tests".into()]).test_binary();
    assert_eq!(crate::step::run_step(&empty, &[], &log, None).0, crate::step::Outcome::Fail("ran no test".into()));
    let some = Step::new("some", 10, vec!["echo".into(), "running 3 tests".into()]).test_binary();
    assert_eq!(crate::step::run_step(&some, &[], &log, None).0, crate::step::Outcome::Pass);
}

#[test]
fn bench_times_every_collective_beside_nccl_on_two_gpus_and_shares_one_gpu_without_it() {
    let collectives = ["allreduce", "allgather", "reducescatter", "alltoall", "broadcast"];
    let two = steps("bench");
    let benches: Vec<&Step> = two.iter().filter(|s| s.argv.iter().any(|a| a == "bench")).collect();
    assert_eq!(benches.len(), collectives.len() + 1, "{:?}", names(&two));
    for c in collectives {
        let s = benches.iter().find(|s| s.name == format!("bench {c}")).expect("a step per collective");
        let line = s.argv.join(" ");
        assert!(line.contains(&format!("bench {c} --sizes 1K:256M --graph --nccl")), "{line}");
        for ext in ["csv", "json", "png"] {
            assert!(line.contains(&format!("/logs/bench-{c}.{ext}")), "{line}");
        }
        assert!(s.env.is_empty(), "{c}: {:?}", s.env);
    }
    let mut ctx = context(2);
    ctx.gpus = 1;
    let one = parts::find("bench").expect("part").steps_in(&ctx);
    assert_eq!(one.len(), two.len());
    for s in &one {
        assert!(!s.argv.iter().any(|a| a == "--nccl"), "{}: NCCL cannot run 2 ranks on one GPU", s.name);
        assert!(s.env.iter().any(|(k, v)| k == "MSCCLPP_SHARED_GPU" && v == "1"), "{}", s.name);
    }
}

#[test]
fn interp_cost_times_with_two_gpus_and_only_checks_when_ranks_share_one() {
    let part = parts::find("interp-cost").expect("interp-cost");
    let two = part.steps_in(&context(2));
    // One job per LL program with a hand-written kernel, the one-shot again on the generic interpreter, the LL128
    // all-reduces and the Simple ones at their own sizes.
    let (programs, simple) = (crate::interp_cost::PROGRAMS.len(), crate::interp_cost::SIMPLE.0);
    let ll128 = crate::interp_cost::LL128.0;
    assert_eq!(two.len(), programs + 1 + ll128.len() + simple.len());
    for (s, p) in two.iter().zip(crate::interp_cost::PROGRAMS) {
        let line = s.argv.join(" ");
        assert!(line.contains("-np 2 ") && line.contains(&format!("/b/interp_cost 1K:1M {p}")), "{line}");
        assert!(line.contains("-x MSCCLPP_FIXED_KERNELS"), "{line}");
        assert!(!s.env.iter().any(|(k, _)| k == "MSCCLPP_SHARED_GPU"), "{:?}", s.env);
    }
    for (s, p) in two[programs + 1..].iter().zip(ll128) {
        let line = s.argv.join(" ");
        assert!(line.contains(&format!("/b/interp_cost 256K:4M:x2 {p}")), "{line}");
    }
    assert!(ll128.contains(&"allreduce_oneshot_ll128"), "{ll128:?}");
    for (s, p) in two[programs + 1 + ll128.len()..].iter().zip(simple) {
        let line = s.argv.join(" ");
        assert!(line.contains(&format!("/b/interp_cost 1M:64M:x4 {p}")), "{line}");
    }
    assert!(simple.contains(&"allreduce_staged"), "{simple:?}");
    let generic = &two[programs];
    assert!(generic.env.contains(&("MSCCLPP_FIXED_KERNELS".into(), "off".into())), "{:?}", generic.env);
    let mut one = context(2);
    one.gpus = 1;
    let shared = part.steps_in(&one);
    assert!(shared[0].name.contains("correctness only"), "{}", shared[0].name);
    assert!(shared[0].env.contains(&("MSCCLPP_SHARED_GPU".into(), "1".into())));
    assert!(shared[0].argv.join(" ").contains("-x MSCCLPP_SHARED_GPU"), "{:?}", shared[0].argv);
}

#[test]
fn a_run_without_out_gets_its_own_results_folder() {
    assert_eq!(crate::civil_date(0), "1970-01-01");
    assert_eq!(crate::civil_date(20_418), "2025-11-26");
    assert_eq!(crate::civil_date(11_016), "2000-02-29");
    let lines: Vec<String> = ["GPU 0: NVIDIA H200 (UUID: GPU-1)", "GPU 1: NVIDIA H200 (UUID: GPU-2)"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(crate::machine(&lines), "2xH200");
    assert_eq!(crate::machine(&["GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-3)".to_string()]), "1xH100");
    assert_eq!(crate::machine(&[]), "cpu");
    let m = "commit: 3977773096c4484b22dffbbb98dd5ea64d57a0fe\ndirty: no\n";
    assert_eq!(crate::manifest_commit(m).as_deref(), Some("3977773"));
    assert_eq!(crate::manifest_commit("dirty: no\n"), None);
    let out = crate::default_out(Path::new("/nonexistent"));
    assert!(out.starts_with("results") && out.to_string_lossy().contains("-unknown-"), "{}", out.display());
}
