//! Project automation. `cargo xtask gpu collect` builds what the GPU suite runs into one folder; on the GPU host
//! (which has no Rust) `.gpu-bin/xtask gpu run --part P` runs parts of the suite from that folder;
//! `xtask gpu parts` lists them. See docs/gpu-suite.md.

#![forbid(unsafe_code)]

mod collect;
mod context;
mod interp_cost;
mod launch;
mod launchers;
mod nccl;
mod parts;
mod python;
mod reliability;
mod step;
mod suite;
mod tune;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::launch::{Launcher, SuiteEnv, on_path};
use crate::parts::{Context, Part};
use crate::suite::RunConfig;

/// The command line.
#[derive(Debug, Parser)]
#[command(name = "xtask", about = "Project automation: the GPU suite")]
struct Cli {
    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, Subcommand)]
enum Top {
    /// The GPU suite.
    #[command(subcommand)]
    Gpu(Gpu),
}

#[derive(Debug, Subcommand)]
enum Gpu {
    /// Build (release) everything the suite runs and collect it, stripped, into one folder.
    Collect {
        /// The folder.
        #[arg(long, default_value = ".gpu-bin")]
        dest: PathBuf,
    },
    /// Run parts of the suite on a GPU host, from the collected folder.
    Run(RunArgs),
    /// List the parts (with `--steps`, every step of each, from the collected folder).
    Parts {
        /// Also list each part's steps (needs the collected binaries: program names come from `mscclpp list`).
        #[arg(long)]
        steps: bool,
        /// The collected binaries.
        #[arg(long, default_value = ".gpu-bin")]
        bin: PathBuf,
        /// Ranks per job.
        #[arg(long, default_value_t = 2)]
        ranks: usize,
    },
    /// Start NP copies of a command with mpirun's variables set (the launcher on hosts without mpirun).
    #[command(hide = true)]
    Ranks {
        /// Number of ranks.
        #[arg(long)]
        np: usize,
        /// The command.
        #[arg(trailing_var_arg = true, required = true)]
        command: Vec<String>,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// A part to run (repeat for several, run in order; `xtask gpu parts` lists them).
    #[arg(long = "part", required = true, value_parser = parse_part)]
    parts: Vec<&'static Part>,
    /// Seconds by which every part has ended: a part running then is stopped, later ones are not started.
    #[arg(long)]
    deadline_s: Option<u64>,
    /// The collected binaries.
    #[arg(long, default_value = ".gpu-bin")]
    bin: PathBuf,
    /// Where `gpu-logs.tgz` and `summary.md` go (default: $OUT, else `results`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where the logs are written before packing (default: a fresh folder under the system's temporary folder).
    #[arg(long)]
    logs: Option<PathBuf>,
    /// Ranks per job (one per GPU).
    #[arg(long, default_value_t = 2)]
    ranks: usize,
}

fn parse_part(name: &str) -> Result<&'static Part, String> {
    parts::find(name)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Top::Gpu(Gpu::Collect { dest }) => collect::collect(&dest).map(|()| true),
        Top::Gpu(Gpu::Parts { steps, bin, ranks }) => list_parts(steps, &bin, ranks),
        Top::Gpu(Gpu::Run(args)) => run(args),
        Top::Gpu(Gpu::Ranks { np, command }) => ranks(np, &command),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The registered programs, from the collected `mscclpp`.
fn programs(bin: &Path) -> Result<Vec<parts::Program>, String> {
    let exe = bin.join("mscclpp");
    let out =
        Command::new(&exe).args(["list", "--json"]).output().map_err(|e| format!("running {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!("`{} list --json` failed ({})", exe.display(), out.status));
    }
    parts::parse_programs(&String::from_utf8_lossy(&out.stdout))
}

/// Prints the parts table, and with `steps` every step of every part (name, limit, command line).
fn list_parts(steps: bool, bin: &Path, ranks: usize) -> Result<bool, String> {
    print!("{}", parts::table());
    if steps {
        let (ctx, _) = context(bin, ranks)?;
        for p in parts::PARTS {
            println!("\n{}:", p.name);
            for s in p.steps_in(&ctx) {
                println!("  {} ({} s): {}", s.name, s.limit.as_secs(), suite::shell_words(&s));
            }
        }
    }
    Ok(true)
}

/// What the steps are made from, on this host, with the collected binaries in `bin`; and the suite's environment.
fn context(bin: &Path, ranks: usize) -> Result<(Context, SuiteEnv), String> {
    let bin = bin
        .canonicalize()
        .map_err(|e| format!("no collected binaries at {} ({e}): run `cargo xtask gpu collect`", bin.display()))?;
    let mut tests: Vec<PathBuf> = std::fs::read_dir(bin.join("tests"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    tests.sort();
    let env = SuiteEnv::from_host();
    let xtask = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "xtask".to_string());
    let launcher = Launcher::new(ranks, &env, on_path("mpirun"), &xtask);
    let nccl_script = std::env::temp_dir().join("xtask-nccl_allreduce.py");
    std::fs::write(&nccl_script, include_str!("nccl_allreduce.py"))
        .map_err(|e| format!("writing {}: {e}", nccl_script.display()))?;
    let ctx = Context {
        tests,
        programs: programs(&bin)?,
        corpus: parts::corpus_plans(Path::new("tests/corpus/mscclpp")),
        launcher,
        nccl_script,
        only: mscclpp_config::SUITE_PROGRAMS
            .get()
            .ok()
            .flatten()
            .map(|v| v.split_whitespace().map(str::to_string).collect()),
        gpus: gpu_count(),
        logs: PathBuf::new(),
        bin,
    };
    Ok((ctx, env))
}

/// GPUs on this host as `nvidia-smi -L` lists them (0 when it does not run).
fn gpu_count() -> usize {
    gpu_lines().len()
}

/// `nvidia-smi -L`'s lines for the GPUs of this host (none without it).
fn gpu_lines() -> Vec<String> {
    std::process::Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.starts_with("GPU ")).map(str::to_string).collect()
        })
        .unwrap_or_default()
}

/// The folder a run writes to without `--out` or `$OUT`: `results/<date>-<commit>-<machine>` (see results/README.md).
fn default_out(bin: &Path) -> PathBuf {
    let manifest = std::fs::read_to_string(bin.join("MANIFEST")).unwrap_or_default();
    let commit = manifest_commit(&manifest).unwrap_or_else(|| "unknown".to_string());
    let days = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() / 86_400);
    PathBuf::from("results").join(format!("{}-{commit}-{}", civil_date(days), machine(&gpu_lines())))
}

/// The short commit a `MANIFEST` names (`commit: <hash>`).
fn manifest_commit(manifest: &str) -> Option<String> {
    let line = manifest.lines().find_map(|l| l.strip_prefix("commit:"))?.trim();
    (line.len() >= 7 && line.chars().all(|c| c.is_ascii_hexdigit())).then(|| line[..7].to_string())
}

/// `<count>x<model>` from `nvidia-smi -L` lines (`GPU 0: NVIDIA H200 (UUID: ...)` → `2xH200`); `cpu` without GPUs.
fn machine(lines: &[String]) -> String {
    let Some(first) = lines.first() else { return "cpu".to_string() };
    let name = first.split_once(": ").map_or("", |(_, r)| r).split(" (UUID").next().unwrap_or("");
    let model = name.split_whitespace().find(|w| w.chars().any(|c| c.is_ascii_digit())).unwrap_or("gpu");
    format!("{}x{model}", lines.len())
}

/// `YYYY-MM-DD` of `days` since 1970-01-01 (proleptic Gregorian calendar).
fn civil_date(days: u64) -> String {
    // Howard Hinnant's days-to-civil algorithm.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn run(args: RunArgs) -> Result<bool, String> {
    let (mut ctx, env) = context(&args.bin, args.ranks)?;
    if ctx.programs.is_empty() {
        return Err("`mscclpp list --json` lists no programs".to_string());
    }
    if let Some(p) = args.parts.iter().find(|p| parts::NEEDS_CORPUS.contains(&p.name))
        && ctx.corpus.is_empty()
    {
        return Err(format!(
            "no corpus plans under tests/corpus/mscclpp, which part `{}` runs: run from the repository root",
            p.name
        ));
    }
    let out = args.out.or_else(|| std::env::var_os("OUT").map(PathBuf::from)).unwrap_or_else(|| default_out(&ctx.bin));
    let logs = args.logs.unwrap_or_else(|| std::env::temp_dir().join(format!("xtask-gpu-logs-{}", std::process::id())));
    ctx.logs = logs.clone();
    let plan = suite::plan(&args.parts, &ctx);
    let cfg = RunConfig {
        out,
        logs,
        deadline: args.deadline_s.map(Duration::from_secs),
        min_part: suite::MIN_PART,
        reserve: suite::RESERVE,
        env: env.vars,
        provenance: suite::provenance(&ctx.bin),
    };
    let results = suite::run(&plan, &cfg)?;
    let failed: Vec<String> = results
        .iter()
        .filter(|r| r.outcome != step::Outcome::Pass)
        .map(|r| format!("{}: {} {}", r.part, r.outcome.word(), r.step))
        .collect();
    println!("passed {}, not passed {}", results.len() - failed.len(), failed.len());
    for f in &failed {
        println!("  {f}");
    }
    Ok(failed.is_empty())
}

/// Starts `np` copies of `command` with Open MPI's rank variables and waits for all; fails if any fails.
fn ranks(np: usize, command: &[String]) -> Result<bool, String> {
    let (program, args) = command.split_first().ok_or("no command")?;
    let job = format!("xtask-{}", std::process::id());
    let mut children = Vec::new();
    for r in 0..np {
        let child = Command::new(program)
            .args(args)
            .env("OMPI_COMM_WORLD_RANK", r.to_string())
            .env("OMPI_COMM_WORLD_SIZE", np.to_string())
            .env("OMPI_COMM_WORLD_LOCAL_RANK", r.to_string())
            .env("OMPI_COMM_WORLD_LOCAL_SIZE", np.to_string())
            .env("MSCCLPP_JOB_ID", &job)
            .spawn()
            .map_err(|e| format!("starting {program}: {e}"))?;
        children.push(child);
    }
    let mut ok = true;
    for mut c in children {
        ok &= c.wait().map(|s| s.success()).unwrap_or(false);
    }
    Ok(ok)
}

#[cfg(test)]
mod tests;
