//! The parts of the GPU suite: what each checks, roughly how long it takes, and its steps. Program names come from
//! `mscclpp list --json` and corpus plans from `tests/corpus/mscclpp`, so the steps follow the registry.
//! (Over 700 lines: the one table of every part, with the step lists of the parts that share its helpers.)

use std::path::{Path, PathBuf};

pub use crate::context::{Context, Program, parse_programs};
use crate::launch::words;
use crate::step::Step;

/// A part of the suite: one device call's worth of steps.
#[derive(Debug, Clone, Copy)]
pub struct Part {
    /// Name on the command line.
    pub name: &'static str,
    /// What it checks.
    pub checks: &'static str,
    /// Rough duration on a 2-GPU H100/H200 host, in minutes (rounded up from the 2 × H200 runs of
    /// `results/2026-11-29-2xH200-s32` and `-s33`; `gib` needs two or three device calls of ten minutes, narrowed
    /// with `MSCCLPP_SUITE_PROGRAMS`).
    pub minutes: u32,
    /// Ranks of its jobs, when not the suite's `--ranks`.
    pub ranks: Option<usize>,
    /// A line for the log header (e.g. that its timings mean nothing).
    pub note: Option<&'static str>,
    /// Its steps.
    pub steps: fn(&Context) -> Vec<Step>,
}

impl Part {
    /// The steps of this part in `ctx` (with the part's own rank count).
    pub fn steps_in(&self, ctx: &Context) -> Vec<Step> {
        match self.ranks {
            Some(r) => (self.steps)(&ctx.with_ranks(r)),
            None => (self.steps)(ctx),
        }
    }
}

/// The parts that run the MSCCL++ corpus plans (`tests/corpus/mscclpp`, found from the current folder): without
/// them those parts would pass having run none, so `gpu run` refuses to start.
pub const NEEDS_CORPUS: [&str; 2] = ["corpus", "shared-gpu"];

/// The parts, in the order `gpu parts` lists them.
pub const PARTS: &[Part] = &[
    Part {
        name: "runtime",
        checks: "the runtime's test binaries (with ignored tests), fault checks, every example under mpirun and torchrun",
        minutes: 2,
        ranks: Some(2),
        note: None,
        steps: runtime,
    },
    Part {
        name: "one-gpu",
        checks: "what needs one GPU: the test binaries with ignored tests, NVRTC compiles, the single-GPU fault checks",
        minutes: 1,
        ranks: None,
        note: None,
        steps: one_gpu,
    },
    Part {
        name: "shared-gpu",
        checks: "2 ranks on one GPU (MSCCLPP_SHARED_GPU=1): the correctness matrix of every default, port-channel and tuned-table-only program up to 1 MiB (4 element types, placements, eager and graph) and the 2-rank corpus plans (with the port-channel unit plans)",
        minutes: 4,
        ranks: Some(2),
        note: Some("2 ranks share one GPU: timings are meaningless"),
        steps: shared_gpu,
    },
    Part {
        name: "matrix-a",
        checks: "correctness matrix of the allreduce and allgather defaults, port-channel and tuned-table-only programs (4 dtypes, 5 sizes, placements, eager and graph)",
        minutes: 5,
        ranks: None,
        note: None,
        steps: matrix_a,
    },
    Part {
        name: "matrix-b",
        checks: "correctness matrix of the other defaults and tuned-table-only programs, and the example programs",
        minutes: 2,
        ranks: None,
        note: None,
        steps: matrix_b,
    },
    Part {
        name: "gib",
        checks: "1 GiB messages: every default, port-channel and tuned-table-only program whose range admits them, 4 dtypes, placements, eager and graph",
        minutes: 20,
        ranks: None,
        note: None,
        steps: gib,
    },
    Part {
        name: "corpus",
        checks: "every corpus plan for the job's rank count",
        minutes: 2,
        ranks: None,
        note: None,
        steps: corpus,
    },
    Part {
        name: "final",
        checks: "allreduce figures, NCCL side by side, torchrun, examples/allreduce, bad input that must fail clearly",
        minutes: 1,
        ranks: None,
        note: None,
        steps: final_part,
    },
    Part {
        name: "extra",
        checks: "instance sweeps behind the registry's tables",
        minutes: 1,
        ranks: None,
        note: None,
        steps: extra,
    },
    Part {
        name: "reliability",
        checks: "2 ranks (shared-GPU mode on one GPU): SIGKILL of a rank mid-collective (eager, graph replay) and the next job, a late and a missing rank, bad input, two communicators and two executors on one communicator concurrently, a first launch while another collective waits",
        minutes: 2,
        ranks: Some(2),
        note: Some("fault checks: timings are not measured"),
        steps: crate::reliability::steps,
    },
    Part {
        name: "soak-a",
        checks: "2 ranks: 10,000 checked launches of the first half of the default programs (registry order), RSS, fds, threads and GPU memory at start and end",
        minutes: 5,
        ranks: Some(2),
        note: Some("soak checks: timings are not measured"),
        steps: crate::reliability::soak_a,
    },
    Part {
        name: "soak-b",
        checks: "2 ranks: 10,000 checked launches of the second half of the default programs, then 1,000 replays of a captured graph, RSS, fds, threads and GPU memory at start and end",
        minutes: 5,
        ranks: Some(2),
        note: Some("soak checks: timings are not measured"),
        steps: crate::reliability::soak_b,
    },
    Part {
        name: "launchers",
        checks: "2 ranks through every launcher: mpirun with the `mpi`-feature binary (MPI bootstrap), torchrun --no-python, a Slurm-style launch (SLURM_* only, rendezvous from the node list), and two network namespaces joined by a veth pair as two nodes (bootstrap and Ethernet transport across it, the two-node all-reduce with ranks per node from the host ids, bandwidth)",
        minutes: 1,
        ranks: Some(2),
        note: Some("2 ranks share GPU 0 when the host has one: the Ethernet figure is the veth path's, not a NIC's"),
        steps: crate::launchers::steps,
    },
    Part {
        name: "tune-small",
        checks: "small-message allreduce variants (instances x threads per block, LL8/LL16) against NCCL",
        minutes: 3,
        ranks: None,
        note: None,
        steps: tune_small,
    },
    Part {
        name: "bench",
        checks: "`mscclpp bench` of the five collectives, 1 KiB-256 MiB in graphs, beside NCCL, at the suite's rank count (with one GPU 2 ranks share it, no NCCL, up to 1 MiB); CSV, JSON and PNG kept in the logs",
        minutes: 8,
        ranks: None,
        note: Some("with one GPU the 2 ranks share it: timings are meaningless"),
        steps: bench,
    },
    Part {
        name: "tune",
        checks: "`mscclpp tune` at the suite's rank count (2 ranks sharing the GPU when there is one): tables written, listed, followed by bench and test, a budget that stops, a stale table ignored; tables kept in the logs",
        minutes: 10,
        ranks: None,
        note: Some("with one GPU the 2 ranks share it: the path is checked, its timings mean nothing"),
        steps: crate::tune::steps,
    },
    Part {
        name: "startup",
        checks: "start-up: a 1 KiB allreduce job from an empty and a warm kernel cache (embedded kernels, then NVRTC), against bare mpirun",
        minutes: 1,
        ranks: Some(2),
        note: Some("2 ranks share GPU 0; each step's seconds (summary.md) are the figure: process start to exit"),
        steps: startup,
    },
    Part {
        name: "nccl",
        checks: "libmscclpp_nccl.so under torchrun: every torch.distributed collective eager (1 KiB-256 MiB) and in the five CUDA graph capture patterns with and without LD_PRELOAD (and device_id), outputs compared, each call's path from the library's counters against its window and tuned table, forced fallback, a rank killed during graph replays, timing table both ways with targets",
        minutes: 3,
        ranks: None,
        note: None,
        steps: crate::nccl::steps,
    },
    Part {
        name: "interp-cost",
        checks: "the interpreter's own cost: each LL program (one-shot and two-shot all-reduce, all-gather, reduce-scatter) as a hand-written kernel against the interpreter running the same plan with its specialised program, and the one-shot on the generic interpreter, 1 KiB-1 MiB (each within its message sizes); the LL128 two-shot 256 KiB-4 MiB; the Simple all-reduces allreduce_rsag, allreduce_twoshot and allreduce_staged 1-64 MiB against their hand-written kernels (2 ranks; with one GPU they share it and only correctness is checked)",
        minutes: 1,
        ranks: Some(2),
        note: None,
        steps: crate::interp_cost::steps,
    },
    Part {
        name: "nccl-shared",
        checks: "libmscclpp_nccl.so without any NCCL, 2 ranks on GPU 0 (NCCL refuses two ranks on one GPU): init, every accelerated collective zero copy and staged on reallocated buffers, padded tiny all-reduces, broadcasts from each root, a CUDA graph, a skipped call reported by ncclCommGetAsyncError",
        minutes: 1,
        ranks: Some(2),
        note: Some("2 ranks share one GPU: correctness only"),
        steps: crate::nccl::shared_steps,
    },
    Part {
        name: "python",
        checks: "the mscclpp wheel: its GPU and torch tests (pytest), then under torchrun the torch examples (CustomizedComm, default algorithms, plans, a native kernel; eager and CUDA graph, checked against a reference and NCCL), the all-reduce timing table against torch.distributed, and the peers table (NCCL, its symmetric kernels, torch symm_mem one-shot and two-shot; CSV and PNG)",
        minutes: 3,
        ranks: None,
        note: Some(
            "with one GPU the 2 ranks share it (MSCCLPP_SHARED_GPU=1): NCCL cannot run, results are checked against torch-computed references and timings are meaningless",
        ),
        steps: crate::python::steps,
    },
];

/// The part named `name`, or an error listing the parts.
pub fn find(name: &str) -> Result<&'static Part, String> {
    PARTS.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = PARTS.iter().map(|p| p.name).collect();
        format!("unknown part `{name}`; the parts are: {}", names.join(", "))
    })
}

/// The parts table as `gpu parts` prints it.
pub fn table() -> String {
    let w = PARTS.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut s = format!("{:<w$}  {:>5}  CHECKS\n", "PART", "~MIN");
    for p in PARTS {
        s.push_str(&format!("{:<w$}  {:>5}  {}\n", p.name, p.minutes, p.checks));
    }
    s
}

/// Sizes of the correctness matrix (each where the plan's range admits it).
const SIZES: &str = "1K,4K+16,1M,1M+48,64M";
/// Sizes of the shared-GPU matrix: the matrix's, up to 1 MiB.
const SHARED_SIZES: &str = "1K,4K+16,1M,1M+48";
/// Sizes of the small-message figures.
const SMALL: &str = "1K,4K,16K,64K";

/// The tests, by (binary, name), that need two GPUs: `one-gpu` skips them; `runtime` and `nccl` run them.
pub const TWO_GPU_TESTS: &[(&str, &str)] = &[("standalone_gpu", crate::nccl::WINDOW_TEST)];

fn test_binaries(ctx: &Context, one_gpu: bool) -> Vec<Step> {
    ctx.tests
        .iter()
        .map(|t| {
            let name = t.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let mut argv = vec![t.display().to_string(), "--include-ignored".into(), "--test-threads=1".into()];
            // Tests that need two GPUs: the parts of two ranks run them.
            if one_gpu {
                for (_, test) in TWO_GPU_TESTS.iter().filter(|(bin, _)| *bin == name) {
                    argv.extend(["--skip".into(), test.to_string()]);
                }
            }
            let s = Step::new(format!("test {name}"), 300, argv)
                .test_binary()
                .with_env("MSCCLPP_REQUIRE_NVRTC", "1")
                .with_env("MSCCLPP_BOOTSTRAP_TIMEOUT_MS", "2000");
            if one_gpu { s.with_env("CUDA_VISIBLE_DEVICES", "0") } else { s }
        })
        .collect()
}

/// A check of `gpu_checks`: (step name, limit, subcommand, environment, pinned to GPU 0 when the part pins).
type GpuCheck = (&'static str, u64, &'static str, &'static [(&'static str, &'static str)], bool);

/// The fault checks of `gpu_checks` that need one GPU.
const SINGLE_GPU_CHECKS: &[GpuCheck] = &[
    ("check wait-timeout", 60, "wait-timeout", &[("MSCCLPP_WAIT_TIMEOUT_MS", "500")], true),
    ("check nvls-disabled", 30, "nvls-disabled", &[("MSCCLPP_DISABLE_NVLS", "1")], true),
    ("check no-gpu", 30, "no-gpu", &[("CUDA_VISIBLE_DEVICES", "")], false),
    ("check too-few-gpus", 30, "too-few-gpus", &[], true),
    ("check no-nvrtc", 30, "no-nvrtc", &[("MSCCLPP_NVRTC_PATH", "/nonexistent/libnvrtc.so.13")], true),
    ("check syncer", 60, "syncer", &[], true),
];

/// The steps of [`SINGLE_GPU_CHECKS`] (`pin`: only GPU 0 visible).
fn single_gpu_checks(ctx: &Context, pin: bool) -> Vec<Step> {
    SINGLE_GPU_CHECKS
        .iter()
        .map(|(name, limit, sub, env, pinnable)| {
            let mut step = Step::new(*name, *limit, vec![ctx.exe("gpu_checks"), sub.to_string()]);
            for (k, v) in *env {
                step = step.with_env(k, v);
            }
            if pin && *pinnable { step.with_env("CUDA_VISIBLE_DEVICES", "0") } else { step }
        })
        .collect()
}

/// The example binaries the `runtime` part runs under each launcher: (program, arguments under torchrun, limit
/// under mpirun, limit under torchrun, the torchrun step's name).
const EXAMPLES: &[(&str, &[&str], u64, u64, &str)] = &[
    ("ping_pong", &[], 120, 120, "torchrun ping_pong"),
    ("memory_channel_bw", &["268435456"], 300, 300, "torchrun memory_channel_bw (to 256 MiB)"),
    ("port_channel", &[], 180, 180, "torchrun port_channel"),
];

fn runtime(ctx: &Context) -> Vec<Step> {
    let mut s = test_binaries(ctx, false);
    s.extend(single_gpu_checks(ctx, false));
    s.push(Step::new(
        "check raw-buffer (2 ranks)",
        120,
        ctx.mpi(&[], vec![ctx.exe("gpu_checks"), "raw-buffer".into()]),
    ));
    for (ex, _, limit, _, _) in EXAMPLES {
        s.push(Step::new(format!("mpirun {ex}"), *limit, ctx.mpi(&[], vec![ctx.exe(ex)])));
    }
    let env = ["MSCCLPP_PROXY_SIGNAL", "MSCCLPP_RESULT_PREFIX"];
    s.push(
        Step::new("mpirun port_channel (signal by copy)", 180, ctx.mpi(&env, vec![ctx.exe("port_channel")]))
            .with_env("MSCCLPP_PROXY_SIGNAL", "copy")
            .with_env("MSCCLPP_RESULT_PREFIX", "copy_signal_"),
    );
    // Each rank claims another host: port channels go over the Ethernet transport.
    let per_rank = r#"MSCCLPP_HOSTID=host-$OMPI_COMM_WORLD_RANK exec "$0" "$@""#;
    s.push(
        Step::new(
            "mpirun port_channel (Ethernet: MSCCLPP_HOSTID per rank)",
            240,
            ctx.mpi(
                &["MSCCLPP_RESULT_PREFIX"],
                vec!["bash".into(), "-c".into(), per_rank.into(), ctx.exe("port_channel")],
            ),
        )
        .with_env("MSCCLPP_RESULT_PREFIX", "ethernet_"),
    );
    let kernel = || vec![ctx.exe("custom_kernel"), ctx.exe("custom_kernel.cu")];
    s.push(Step::new("mpirun custom_kernel", 120, ctx.mpi(&[], kernel())));
    let torch = |name: &str, limit: u64, program: Vec<String>| {
        Step::new(name, limit, ctx.launcher.torchrun_no_python(&program)).with_env("MSCCLPP_RESULT_PREFIX", "torchrun_")
    };
    for (ex, args, _, limit, name) in EXAMPLES {
        let mut program = vec![ctx.exe(ex)];
        program.extend(words(args));
        s.push(torch(name, *limit, program));
    }
    s.push(torch("torchrun custom_kernel", 120, vec![ctx.exe("custom_kernel")]));
    s
}

fn one_gpu(ctx: &Context) -> Vec<Step> {
    let mut s = test_binaries(ctx, true);
    s.extend(single_gpu_checks(ctx, true));
    s
}

fn shared_gpu(ctx: &Context) -> Vec<Step> {
    let env = crate::step::SHARED_GPU_ENV;
    let shared = |s: Step| s.sharing_gpu0(true);
    let mut s = vec![shared(warm_up(ctx, &env))];
    // The matrix's sizes up to 1 MiB (each call is orders of magnitude slower when ranks share a GPU), every
    // element type, both placements, eager and graph, every launch checked, no timing.
    for p in ctx.matrix_programs() {
        let argv =
            ctx.mscclpp(&["test", &p.name, "--size", SHARED_SIZES, "--dtype", "f16,bf16,f32,i32", p.placements()]);
        let mut argv = argv;
        argv.extend(words(&["--eager-and-graph", "--iters", "3", "--no-timing"]));
        s.push(shared(Step::new(format!("shared-gpu {}", p.name), 180, ctx.mpi(&env, argv))));
    }
    // The corpus plans for two ranks, as the corpus part runs them.
    for (f, ranks) in &ctx.corpus {
        if *ranks != 2 {
            continue;
        }
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let f = f.display().to_string();
        let mut argv = ctx.mscclpp(&["test", &f, "--size", "1M,64K", "--dtype", "f16,f32", "--eager-and-graph"]);
        argv.extend(words(&["--iters", "3", "--no-timing"]));
        s.push(shared(Step::new(format!("shared-gpu corpus {name}"), 120, ctx.mpi(&env, argv))));
    }
    // The single-GPU test binaries belong to `one-gpu`; this part is the multi-rank correctness matrix.
    s
}

fn warm_up(ctx: &Context, env: &[&str]) -> Step {
    // Compiles the interpreter once; the ranks then load the cubin from the cache.
    let argv = ctx.mscclpp(&["test", "allreduce_twoshot", "--size", "1K", "--iters", "1", "--no-timing"]);
    Step::new("warm-up: compile the interpreter", 300, ctx.mpi(env, argv))
}

/// The correctness matrix of the programs `pick` selects among [`Context::matrix_programs`]: dtypes x sizes x placements x {eager, a graph of
/// 10 launches replayed 10 times}, every launch checked.
fn matrix(ctx: &Context, pick: impl Fn(&Program) -> bool) -> Vec<Step> {
    ctx.matrix_programs()
        .filter(|p| pick(p) && ctx.picked(&p.name))
        .map(|p| {
            let mut argv =
                ctx.mscclpp(&["test", &p.name, "--size", SIZES, "--dtype", "f16,bf16,f32,i32", p.placements()]);
            argv.extend(words(&["--eager-and-graph", "--iters", "10", "--runs", "10"]));
            Step::new(format!("default {}", p.name), 600, ctx.mpi(&[], argv))
        })
        .collect()
}

/// matrix-a holds the allreduce and allgather programs of the matrices, matrix-b the rest (so that each fits one device call).
fn in_matrix_a(p: &Program) -> bool {
    p.collective == "allreduce" || p.collective == "allgather"
}

fn matrix_a(ctx: &Context) -> Vec<Step> {
    let mut s = vec![warm_up(ctx, &[])];
    s.extend(matrix(ctx, in_matrix_a));
    s
}

fn matrix_b(ctx: &Context) -> Vec<Step> {
    let mut s = vec![warm_up(ctx, &[])];
    s.extend(matrix(ctx, |p| !in_matrix_a(p)));
    for p in ctx.examples().filter(|p| ctx.picked(&p.name)) {
        let mut argv = ctx.mscclpp(&["test", &p.name, "--size", SIZES, "--dtype", "f16,i32", p.placements()]);
        argv.extend(words(&["--eager-and-graph", "--iters", "10", "--runs", "10"]));
        s.push(Step::new(format!("default {}", p.name), 300, ctx.mpi(&[], argv)));
    }
    s
}

fn gib(ctx: &Context) -> Vec<Step> {
    let mut s = vec![warm_up(ctx, &[])];
    // One checked launch per mode (each check recomputes 1 GiB on the host), timing from 3 runs of one launch.
    for p in ctx.matrix_programs().filter(|p| p.max_size.is_none_or(|m| m >= 1 << 30)) {
        if !ctx.picked(&p.name) {
            continue;
        }
        let mut argv = ctx.mscclpp(&["test", &p.name, "--size", "1G", "--dtype", "f16,bf16,f32,i32", p.placements()]);
        argv.extend(words(&["--eager-and-graph", "--iters", "1", "--runs", "3"]));
        s.push(Step::new(format!("1 GiB {}", p.name), 300, ctx.mpi(&[], argv)));
    }
    s
}

fn corpus(ctx: &Context) -> Vec<Step> {
    let mut s = vec![warm_up(ctx, &[])];
    for (f, ranks) in &ctx.corpus {
        if *ranks != ctx.launcher.ranks {
            continue;
        }
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let f = f.display().to_string();
        let argv = ctx.mscclpp(&["test", &f, "--size", "1M,64K", "--dtype", "f16,f32", "--eager-and-graph"]);
        s.push(Step::new(format!("corpus {name}"), 120, ctx.mpi(&[], argv)));
    }
    s
}

fn final_part(ctx: &Context) -> Vec<Step> {
    let mut s = vec![warm_up(ctx, &[])];
    s.extend(mscclpp_steps(ctx, FINAL_PERF));
    let script = ctx.nccl_script.display().to_string();
    s.push(Step::new("NCCL allreduce (torch.distributed)", 200, ctx.launcher.torchrun_python(&script, &[])));
    let twoshot = ctx.mscclpp(&["test", "allreduce_twoshot", "--size", "1M,64M", "--dtype", "f16", "--graph"]);
    s.push(Step::new("torchrun allreduce_twoshot", 120, ctx.launcher.torchrun_no_python(&twoshot)));
    for size in ["1024", "65536", "268435456"] {
        s.push(Step::new(
            format!("example allreduce {size}"),
            120,
            ctx.mpi(&[], vec![ctx.exe("allreduce"), size.into()]),
        ));
    }
    // A corpus plan for a world size other than the job's: 4 ranks, or 8 when the job itself has 4.
    let other = if ctx.launcher.ranks == 4 { 8 } else { 4 };
    let plan = format!("tests/corpus/mscclpp/generated/single_node__allreduce__n{other}.json");
    let expected = format!("is for {other} ranks");
    s.push(
        Step::new("plan for another world size", 60, ctx.mpi(&[], ctx.mscclpp(&["test", &plan, "--size", "1M"])))
            .must_fail_with(&[&expected]),
    );
    for (name, texts, args) in BAD_INPUT {
        s.push(Step::new(*name, 60, ctx.mpi(&[], ctx.mscclpp(&split(args)))).must_fail_with(texts));
    }
    let job = ctx.launcher.command_split(
        &["MSCCLPP_BOOTSTRAP_TIMEOUT_MS".to_string()],
        &ctx.mscclpp(&["test", "allreduce_twoshot", "--size", "1M"]),
        &words(&["sleep", "20"]),
    );
    s.push(
        Step::new("a rank that never calls", 90, job)
            .with_env("MSCCLPP_BOOTSTRAP_TIMEOUT_MS", "5000")
            .must_fail_with(&["did not arrive", "missing", "timed out"]),
    );
    s
}

fn extra(ctx: &Context) -> Vec<Step> {
    let mut s = vec![warm_up(ctx, &[])];
    s.extend(mscclpp_steps(ctx, EXTRA_PERF));
    let argv = vec![ctx.exe("allreduce"), "268435456".into(), "allreduce_twoshot".into(), "32".into()];
    s.push(Step::new("example allreduce 256 MiB twoshot x32", 120, ctx.mpi(&[], argv)));
    s
}

/// A step of the `mscclpp` command under the job's launcher: (step name, time limit in seconds, its arguments).
type MscclppStep = (&'static str, u64, &'static str);

/// The timed runs of the `final` part: the registry's choice (tuned table) at small and large sizes.
const FINAL_PERF: &[MscclppStep] = &[
    (
        "perf allreduce small (tuned)",
        120,
        "test allreduce_oneshot_ll --size 1K,4K,16K,64K --dtype f16 --in-place --graph --iters 10 --runs 30",
    ),
    (
        "perf allreduce large (tuned)",
        180,
        "test allreduce_twoshot --size 1M,64M,256M --dtype f16 --in-place --graph --iters 10 --runs 10",
    ),
];

/// Bad input the `final` part expects refused: (step name, texts of which the output must hold one, arguments).
const BAD_INPUT: &[(&str, &[&str], &str)] = &[
    (
        "size outside the plan's range",
        &["outside the plan's range"],
        "test allreduce_oneshot_ll --size 64M --in-place --no-timing",
    ),
    (
        "a size the chunk math cannot split",
        &["cannot split", "cannot be split", "not a multiple"],
        "test allreduce_twoshot --size 1K+2 --no-timing",
    ),
    (
        "more thread blocks than multiprocessors",
        &["multiprocessors"],
        "test allreduce_twoshot --instances 200 --size 200K --no-timing",
    ),
];

/// The instance sweeps of the `extra` part.
const EXTRA_PERF: &[MscclppStep] = &[
    (
        "perf oneshot_ll x1",
        120,
        "test allreduce_oneshot_ll --instances 1 --size 1K,4K,16K,64K --dtype f16 --in-place --graph --iters 10 --runs 10",
    ),
    (
        "perf oneshot_ll x4",
        120,
        "test allreduce_oneshot_ll --instances 4 --size 1K,4K,16K,64K --dtype f16 --in-place --graph --iters 10 --runs 10",
    ),
    (
        "perf oneshot_ll x8",
        120,
        "test allreduce_oneshot_ll --instances 8 --size 1K,4K,16K,64K --dtype f16 --in-place --graph --iters 10 --runs 10",
    ),
    (
        "perf twoshot x16",
        180,
        "test allreduce_twoshot --instances 16 --size 1M,64M,256M --dtype f16 --in-place --graph --iters 10 --runs 10",
    ),
    (
        "perf twoshot x32",
        180,
        "test allreduce_twoshot --instances 32 --size 1M,64M,256M --dtype f16 --in-place --graph --iters 10 --runs 10",
    ),
    (
        "perf twoshot x64",
        180,
        "test allreduce_twoshot --instances 64 --size 1M,64M,256M --dtype f16 --in-place --graph --iters 10 --runs 10",
    ),
];

/// The words of `args`.
fn split(args: &str) -> Vec<&str> {
    args.split_whitespace().collect()
}

/// The steps of `table`, each `mscclpp` with its arguments under the job's launcher.
fn mscclpp_steps(ctx: &Context, table: &[MscclppStep]) -> Vec<Step> {
    table.iter().map(|(name, limit, args)| Step::new(*name, *limit, ctx.mpi(&[], ctx.mscclpp(&split(args))))).collect()
}

/// The tuning plans `gpu collect` writes: (file stem, instances, threads per block).
pub fn tune_variants() -> Vec<(String, u32, u32)> {
    let mut v = Vec::new();
    for i in [1, 2, 4, 8] {
        for t in [1024, 512, 256] {
            v.push((format!("oneshot_ll_x{i}_t{t}"), i, t));
        }
    }
    v
}

fn tune_small(ctx: &Context) -> Vec<Step> {
    let common = ["--size", SMALL, "--dtype", "f16", "--in-place", "--graph", "--iters", "10", "--runs", "30"];
    let variant = |name: &str, plan: &str, more: &[&str]| {
        let mut argv = ctx.mscclpp(&["test", plan]);
        argv.extend(words(&common));
        argv.extend(words(more));
        Step::new(format!("variant {name}"), 180, ctx.mpi(&[], argv))
    };
    let mut s = vec![
        variant("registry-default", "allreduce_oneshot_ll", &[]),
        variant("registry-default-ll8", "allreduce_oneshot_ll", &["--packet", "ll8"]),
    ];
    for (stem, _, _) in tune_variants() {
        let plan = ctx.bin.join("tune").join(format!("{stem}.json")).display().to_string();
        s.push(variant(&stem, &plan, &[]));
    }
    let script = ctx.nccl_script.display().to_string();
    s.push(Step::new(
        "variant nccl",
        180,
        ctx.launcher.torchrun_python(&script, &words(&["1024", "4096", "16384", "65536"])),
    ));
    s
}

/// The corpus plans under `root` (`generated/` and `upstream/`) with their rank counts, skipping multi-node plans
/// and the unit-test plans other than those over port channels (the proxy's own checks); a plan that cannot be
/// read counts 0 ranks (never selected).
pub fn corpus_plans(root: &Path) -> Vec<(PathBuf, usize)> {
    let mut files: Vec<PathBuf> = ["generated", "upstream"]
        .iter()
        .filter_map(|d| std::fs::read_dir(root.join(d)).ok())
        .flat_map(|d| d.filter_map(|e| e.ok().map(|e| e.path())))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                !n.contains("multi_node__") && (!n.contains("unit__") || uses_port_channels(p))
            })
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let n = std::fs::read_to_string(&f)
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|v| v.get("gpus").and_then(|g| g.as_array()).map(Vec::len))
                .unwrap_or(0);
            (f, n)
        })
        .collect()
}

/// Whether the plan file declares a port channel on some rank.
fn uses_port_channels(path: &Path) -> bool {
    let plan = std::fs::read_to_string(path).ok().and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok());
    let gpus = plan.as_ref().and_then(|v| v.get("gpus")).and_then(|g| g.as_array()).cloned().unwrap_or_default();
    gpus.iter()
        .filter_map(|g| g.get("channels").and_then(|c| c.as_array()))
        .flatten()
        .any(|c| c["channel_type"] == "port")
}

/// Start-up cost: the same 1 KiB all-reduce job (one checked launch) five times each from an empty and from a warm
/// kernel cache, with the embedded kernels and with NVRTC (`MSCCLPP_EMBEDDED_KERNELS=0`), and bare `mpirun true`.
fn startup(ctx: &Context) -> Vec<Step> {
    let env = ["MSCCLPP_SHARED_GPU", "CUDA_VISIBLE_DEVICES", "MSCCLPP_CACHE_DIR", "MSCCLPP_EMBEDDED_KERNELS"];
    let root = std::env::temp_dir().join(format!("mscclpp-startup-{}", std::process::id()));
    let job = |name: String, cache: &Path, embedded: &str| {
        let argv = ctx.mscclpp(&["test", "allreduce_oneshot_ll", "--size", "1K", "--iters", "1", "--no-timing"]);
        Step::new(name, 240, ctx.mpi(&env, argv))
            .sharing_gpu0(true)
            .with_env("MSCCLPP_CACHE_DIR", &cache.display().to_string())
            .with_env("MSCCLPP_EMBEDDED_KERNELS", embedded)
    };
    let mut s = Vec::new();
    for k in 1..=5 {
        s.push(Step::new(format!("bare mpirun true {k}"), 60, ctx.mpi(&[], vec!["true".to_string()])));
    }
    for (mode, embedded) in [("embedded", "1"), ("nvrtc", "0")] {
        let runs = if embedded == "1" { 5 } else { 2 };
        for k in 1..=runs {
            s.push(job(format!("{mode} cold {k}"), &root.join(format!("{mode}-{k}")), embedded));
        }
        for k in 1..=5 {
            s.push(job(format!("{mode} warm {k}"), &root.join(format!("{mode}-{runs}")), embedded));
        }
    }
    s
}

/// `mscclpp bench` of every collective it times: with two GPUs or more, 1 KiB-256 MiB beside NCCL; with one, two
/// ranks share it (up to 1 MiB, no NCCL, which refuses two ranks on one GPU). The CSV, JSON and PNG of each go
/// into the log folder as `bench-<collective>.*`.
fn bench(ctx: &Context) -> Vec<Step> {
    let shared = ctx.gpus < 2;
    let env: &[&str] = if shared { &crate::step::SHARED_GPU_ENV } else { &[] };
    let on = |s: Step| s.sharing_gpu0(shared);
    let mut s = vec![on(warm_up(ctx, env))];
    let sizes = if shared { "1K:1M" } else { "1K:256M" };
    for collective in ["allreduce", "allgather", "reducescatter", "alltoall", "broadcast"] {
        let file = |ext: &str| ctx.logs.join(format!("bench-{collective}.{ext}")).display().to_string();
        let (csv, json, png) = (file("csv"), file("json"), file("png"));
        let mut argv = ctx.mscclpp(&["bench", collective, "--sizes", sizes, "--graph"]);
        if !shared {
            argv.push("--nccl".to_string());
        }
        argv.extend(words(&["--csv", &csv, "--json", &json, "--plot", &png]));
        s.push(on(Step::new(format!("bench {collective}"), 420, ctx.mpi(env, argv))));
    }
    // Eager launches of the small all-reduces, where the launch cost shows.
    let mut argv = ctx.mscclpp(&["bench", "allreduce", "--sizes", "1K:1M", "--eager"]);
    if !shared {
        argv.push("--nccl".to_string());
    }
    let (csv, png) = (ctx.logs.join("bench-allreduce-eager.csv"), ctx.logs.join("bench-allreduce-eager.png"));
    argv.extend(words(&["--csv", &csv.display().to_string(), "--plot", &png.display().to_string()]));
    s.push(on(Step::new("bench allreduce eager", 300, ctx.mpi(env, argv))));
    s
}
