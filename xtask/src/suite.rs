//! `xtask gpu run`: the chosen parts in order under one deadline, one log per part (each beginning with where the
//! binaries and the host come from), a summary, and every log packed into one archive after each part (the GPU
//! host returns only a few files per call, and a call cut short still returns what was written).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::parts::{Context, Part};
use crate::step::{Outcome, Step, append, run_step};

/// A part that would get less than this is not started.
pub const MIN_PART: Duration = Duration::from_secs(30);
/// Kept free at the end of the deadline, for packing the logs.
pub const RESERVE: Duration = Duration::from_secs(10);

/// What a run needs besides the parts.
pub struct RunConfig {
    /// Where the archive and a copy of the summary go (what the GPU host returns).
    pub out: PathBuf,
    /// Where the logs are written (packed into the archive, not returned one by one).
    pub logs: PathBuf,
    /// Seconds from now by which every part has ended.
    pub deadline: Option<Duration>,
    /// A part that would get less time than this before the deadline is not started.
    pub min_part: Duration,
    /// Time kept free before the deadline (for packing the logs).
    pub reserve: Duration,
    /// The variables every step runs with.
    pub env: Vec<(String, String)>,
    /// The provenance lines every log begins with (commit, GPUs, ...).
    pub provenance: Vec<String>,
}

/// The verdict of one step.
#[derive(Debug, Clone)]
pub struct StepResult {
    /// The part.
    pub part: String,
    /// The step.
    pub step: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Seconds it ran.
    pub seconds: f64,
}

/// Runs `parts` (each with its steps), writes a log per part and `summary.md` into `cfg.logs`, and packs them
/// into `cfg.out/gpu-logs.tgz` (with a copy of the summary beside it). Returns every step's verdict; the run
/// passed when all are `Pass`.
pub fn run(parts: &[(&Part, Vec<Step>, usize)], cfg: &RunConfig) -> Result<Vec<StepResult>, String> {
    let logs = &cfg.logs;
    for d in [logs, &cfg.out] {
        std::fs::create_dir_all(d).map_err(|e| format!("creating {}: {e}", d.display()))?;
    }
    let start = Instant::now();
    let deadline = cfg.deadline.map(|d| start + d.saturating_sub(cfg.reserve));
    let mut results = Vec::new();
    for (part, steps, ranks) in parts {
        let log = logs.join(format!("{}.log", part.name));
        std::fs::write(&log, header(part, *ranks, &cfg.provenance))
            .map_err(|e| format!("writing {}: {e}", log.display()))?;
        let started = Instant::now();
        println!("part {}: {} steps", part.name, steps.len());
        let too_late = deadline.is_some_and(|d| d.saturating_duration_since(started) < cfg.min_part);
        let mut cut = too_late;
        if too_late {
            append(&log, "\n# not started: too little time left before the deadline\n");
        }
        for step in steps {
            let (outcome, seconds) = if cut {
                (Outcome::NotRun, 0.0)
            } else {
                append(&log, &format!("\n=== {}: {}\n", step.name, shell_words(step)));
                let (o, s) = run_step(step, &cfg.env, &log, deadline);
                let why = match &o {
                    Outcome::Fail(why) => format!(": {why}"),
                    Outcome::Cut => ": stopped at the deadline".to_string(),
                    _ => String::new(),
                };
                append(&log, &format!("--- {} {} ({s:.1} s){why}\n", o.word(), step.name));
                (o, s)
            };
            if outcome == Outcome::Cut {
                cut = true;
            }
            println!("  {} {} ({seconds:.1} s)", outcome.word(), step.name);
            results.push(StepResult { part: part.name.to_string(), step: step.name.clone(), outcome, seconds });
        }
        let mine: Vec<&StepResult> = results.iter().filter(|r| r.part == part.name).collect();
        let passed = mine.iter().filter(|r| r.outcome == Outcome::Pass).count();
        let state = if too_late {
            "not started"
        } else if cut {
            "cut by the deadline"
        } else {
            "done"
        };
        let line = format!(
            "part {}: {state}, {passed}/{} passed, {:.0} s",
            part.name,
            mine.len(),
            started.elapsed().as_secs_f64()
        );
        append(&log, &format!("\n# {line}\n"));
        println!("{line}");
        write_summary(logs, &results)?;
        let summary = logs.join("summary.md");
        std::fs::copy(&summary, cfg.out.join("summary.md"))
            .map_err(|e| format!("copying {}: {e}", summary.display()))?;
        pack(logs, &cfg.out)?;
    }
    Ok(results)
}

/// The lines every log of a part begins with.
pub fn header(part: &Part, ranks: usize, provenance: &[String]) -> String {
    let mut h = format!("# mscclpp GPU suite, part {} ({}), ranks {ranks}\n", part.name, part.checks);
    for l in provenance {
        h.push_str(&format!("# {l}\n"));
    }
    if let Some(note) = part.note {
        h.push_str(&format!("# NOTE: {note}\n"));
    }
    h
}

/// The command line of a step as a shell would show it (with its own variables in front).
pub fn shell_words(step: &Step) -> String {
    let quote = |w: &str| {
        if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=,+:@%".contains(c)) {
            w.to_string()
        } else {
            format!("'{}'", w.replace('\'', r"'\''"))
        }
    };
    let env = step.env.iter().map(|(k, v)| format!("{k}={}", quote(v)));
    env.chain(step.argv.iter().map(|w| quote(w))).collect::<Vec<_>>().join(" ")
}

/// Writes `summary.md` into the log folder: counts, one row per step, and the figures the logs printed.
pub fn write_summary(logs: &Path, results: &[StepResult]) -> Result<(), String> {
    let passed = results.iter().filter(|r| r.outcome == Outcome::Pass).count();
    let mut s = format!("# GPU suite summary\n\n- passed: {passed}, not passed: {}\n\n", results.len() - passed);
    s.push_str("| part | step | result | seconds |\n| --- | --- | --- | ---: |\n");
    for r in results {
        let why = match &r.outcome {
            Outcome::Fail(w) => format!(" ({w})"),
            _ => String::new(),
        };
        s.push_str(&format!(
            "| {} | {} | {}{why} | {:.1} |\n",
            r.part,
            r.step.replace('|', "/"),
            r.outcome.word(),
            r.seconds
        ));
    }
    let mut figures = Vec::new();
    let mut parts: Vec<&str> = results.iter().map(|r| r.part.as_str()).collect();
    parts.dedup();
    for part in parts {
        let text = std::fs::read_to_string(logs.join(format!("{part}.log"))).unwrap_or_default();
        let keep = ["RESULT ", "PASS ", "FAIL ", "SKIP ", "allreduce plan=", "NCCL "];
        figures.extend(text.lines().filter(|l| keep.iter().any(|k| l.starts_with(k))).map(|l| format!("{part}: {l}")));
    }
    if !figures.is_empty() {
        s.push_str("\n## Figures and checks printed by the steps\n\n```\n");
        for f in figures {
            s.push_str(&f);
            s.push('\n');
        }
        s.push_str("```\n");
    }
    let path = logs.join("summary.md");
    std::fs::write(&path, s).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Packs the log folder into `out/gpu-logs.tgz` (through the system `tar`).
pub fn pack(logs: &Path, out: &Path) -> Result<(), String> {
    let archive = out.join("gpu-logs.tgz");
    let status = Command::new("tar")
        .arg("czf")
        .arg(&archive)
        .arg("-C")
        .arg(logs)
        .arg(".")
        .status()
        .map_err(|e| format!("running tar: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("tar failed ({status}) packing {}", archive.display())) }
}

/// Provenance of the binaries and the host: the MANIFEST's commit, `mscclpp --version`, the GPUs, the date.
pub fn provenance(bin: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(bin.join("MANIFEST")).unwrap_or_default();
    let field = |k: &str| {
        manifest
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| "unknown".to_string())
    };
    let version =
        first_line(Command::new(bin.join("mscclpp")).arg("--version")).unwrap_or_else(|| "unknown".to_string());
    let gpus = Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::trim).collect::<Vec<_>>().join("; "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "none".to_string());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let have = |p: &str| if crate::launch::on_path(p) { "yes" } else { "no" };
    vec![
        format!(
            "binaries: commit {} (dirty: {}), collected {}; {version}",
            field("commit:"),
            field("dirty:"),
            field("collected:")
        ),
        format!("GPUs: {gpus}"),
        format!("host: {host}, {cores} cores; mpirun: {}, torchrun: {}", have("mpirun"), have("torchrun")),
        format!("date: {}", now()),
    ]
}

fn first_line(cmd: &mut Command) -> Option<String> {
    let o = cmd.output().ok()?;
    String::from_utf8_lossy(&o.stdout).lines().next().map(|l| l.trim().to_string())
}

/// The current time in UTC (from `date`, or seconds since the epoch where there is none).
pub fn now() -> String {
    first_line(Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])).unwrap_or_else(|| {
        let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        format!("{s} s after the epoch")
    })
}

/// The step list of every chosen part, in `ctx`, with its rank count.
pub fn plan<'a>(parts: &[&'a Part], ctx: &Context) -> Vec<(&'a Part, Vec<Step>, usize)> {
    parts.iter().map(|p| (*p, p.steps_in(ctx), p.ranks.unwrap_or(ctx.launcher.ranks))).collect()
}
