//! One step of a part: a command with a time limit, run in a process group of its own, its output appended to the
//! part's log; and the end of a step at its limit or the suite's deadline, which stops every process it started.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What makes a step pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// The command exits 0.
    Success,
    /// The command fails and its output contains one of these texts.
    FailureWith(Vec<String>),
    /// A test binary: it exits 0 and ran at least one test (a binary that runs none checked nothing).
    TestsRan,
}

/// The variables [`Step::sharing_gpu0`] sets, for a launcher to pass on to the ranks.
pub const SHARED_GPU_ENV: [&str; 2] = ["MSCCLPP_SHARED_GPU", "CUDA_VISIBLE_DEVICES"];

/// A command of the suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The name in the log and the summary.
    pub name: String,
    /// The command line (program first).
    pub argv: Vec<String>,
    /// Variables of this step, on top of the suite's environment.
    pub env: Vec<(String, String)>,
    /// The step's own time limit.
    pub limit: Duration,
    /// What makes it pass.
    pub expect: Expect,
}

impl Step {
    /// A step that must exit 0 within `limit_s` seconds.
    pub fn new(name: impl Into<String>, limit_s: u64, argv: Vec<String>) -> Self {
        Step { name: name.into(), argv, env: Vec::new(), limit: Duration::from_secs(limit_s), expect: Expect::Success }
    }

    /// The same step with one more variable.
    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// With `shared`: the ranks share GPU 0 ([`SHARED_GPU_ENV`] set to `1` and `0`); otherwise unchanged.
    pub fn sharing_gpu0(self, shared: bool) -> Self {
        if shared { self.with_env("MSCCLPP_SHARED_GPU", "1").with_env("CUDA_VISIBLE_DEVICES", "0") } else { self }
    }

    /// The same step run as a test binary: it must exit 0 and run at least one test.
    pub fn test_binary(mut self) -> Self {
        self.expect = Expect::TestsRan;
        self
    }

    /// The same step, which must fail with output containing one of `texts`.
    pub fn must_fail_with(mut self, texts: &[&str]) -> Self {
        self.expect = Expect::FailureWith(texts.iter().map(|s| s.to_string()).collect());
        self
    }
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It met its expectation.
    Pass,
    /// It did not (with the reason).
    Fail(String),
    /// The suite's deadline stopped it.
    Cut,
    /// The deadline came before it started.
    NotRun,
}

impl Outcome {
    /// The word in the log and the summary.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail(_) => "FAIL",
            Outcome::Cut => "CUT",
            Outcome::NotRun => "NOT RUN",
        }
    }
}

/// How long a stopped process group gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// Runs `step` with `base_env` (then the step's own variables), its output appended to `log`, until it ends, its
/// limit passes or `deadline` comes. Returns the outcome and the seconds it ran.
pub fn run_step(step: &Step, base_env: &[(String, String)], log: &Path, deadline: Option<Instant>) -> (Outcome, f64) {
    let t0 = Instant::now();
    let outcome = run_inner(step, base_env, log, deadline, t0);
    (outcome, t0.elapsed().as_secs_f64())
}

fn run_inner(
    step: &Step,
    base_env: &[(String, String)],
    log: &Path,
    deadline: Option<Instant>,
    t0: Instant,
) -> Outcome {
    let Some((program, args)) = step.argv.split_first() else {
        return Outcome::Fail("empty command".to_string());
    };
    let opened = OpenOptions::new().create(true).append(true).open(log).and_then(|f| {
        let start = f.metadata()?.len();
        Ok((f.try_clone()?, f, start))
    });
    let (out, err, start) = match opened {
        Ok(x) => x,
        Err(e) => return Outcome::Fail(format!("cannot open the log {}: {e}", log.display())),
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(base_env.iter().cloned())
        .envs(step.env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            append(log, &format!("cannot start {program}: {e}\n"));
            return Outcome::Fail(format!("cannot start {program}: {e}"));
        }
    };
    let limit = t0 + step.limit;
    let (end, by_deadline) = match deadline {
        Some(d) if d < limit => (d, true),
        _ => (limit, false),
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= end => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                stop(&mut child);
                return Outcome::Fail(format!("waiting for {program}: {e}"));
            }
        }
    };
    // Whatever the step left behind (a daemon, a rank of a failed job) ends with it.
    let left = stop(&mut child);
    if left > 0 {
        append(log, &format!("[xtask] stopped {left} process(es) the step left running\n"));
    }
    let Some(status) = status else {
        if by_deadline {
            return Outcome::Cut;
        }
        return Outcome::Fail(format!("timed out after {} s", step.limit.as_secs()));
    };
    let output = read_from(log, start);
    match &step.expect {
        Expect::Success if status.success() => Outcome::Pass,
        Expect::Success => Outcome::Fail(format!("exit {}", code(&status))),
        Expect::TestsRan if !status.success() => Outcome::Fail(format!("exit {}", code(&status))),
        Expect::TestsRan if tests_ran(&output) == 0 => Outcome::Fail("ran no test".to_string()),
        Expect::TestsRan => Outcome::Pass,
        Expect::FailureWith(texts) => {
            let matched = texts.iter().any(|t| output.contains(t.as_str()));
            match (status.success(), matched) {
                (false, true) => Outcome::Pass,
                (true, _) => Outcome::Fail("succeeded but must fail".to_string()),
                (false, false) => Outcome::Fail(format!("exit {} without any of {texts:?}", code(&status))),
            }
        }
    }
}

/// How many tests a libtest binary's output says it ran (the sum of its `running N tests` lines).
pub fn tests_ran(output: &str) -> usize {
    output.lines().filter_map(|l| l.strip_prefix("running ")?.split_whitespace().next()?.parse::<usize>().ok()).sum()
}

fn code(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => format!("signal {s}"),
        (None, None) => "unknown".to_string(),
    }
}

/// Appends a line to the log (best effort: the log is the record, a failure to write it is not the step's).
pub fn append(log: &Path, text: &str) {
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(log) {
        let _ = f.write_all(text.as_bytes());
    }
}

fn read_from(log: &Path, start: u64) -> String {
    let mut s = Vec::new();
    if let Ok(mut f) = File::open(log)
        && f.seek(SeekFrom::Start(start)).is_ok()
    {
        let _ = f.read_to_end(&mut s);
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// Stops the step's process group and every process descended from it (also those that left the group, such as
/// mpirun's ranks or a daemon in a session of its own): SIGTERM, a grace period, SIGKILL. Returns how many
/// processes other than the step itself were still running.
fn stop(child: &mut Child) -> usize {
    let pid = child.id();
    let mut procs = proc_table();
    let mut victims = family(&procs, pid);
    let left = victims.iter().filter(|&&p| p != pid).count();
    if victims.is_empty() && child.try_wait().ok().flatten().is_some() {
        return 0;
    }
    signal(pid, &victims, "TERM");
    let until = Instant::now() + GRACE;
    while Instant::now() < until {
        let _ = child.try_wait();
        procs = proc_table();
        // Anything spawned meanwhile by a stopping process counts too.
        for p in family(&procs, pid) {
            if !victims.contains(&p) {
                victims.push(p);
            }
        }
        victims.retain(|p| procs.iter().any(|e| e.pid == *p && e.state != 'Z'));
        if victims.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if !victims.is_empty() {
        signal(pid, &victims, "KILL");
    }
    let _ = child.wait();
    left
}

/// Sends `sig` to the process group `pgid` and to every process of `pids`.
fn signal(pgid: u32, pids: &[u32], sig: &str) {
    let mut args = vec![format!("-{sig}"), "--".to_string(), format!("-{pgid}")];
    args.extend(pids.iter().map(u32::to_string));
    let _ = Command::new("kill").args(&args).stdout(Stdio::null()).stderr(Stdio::null()).status();
}

/// A process of the host, from `/proc/PID/stat`.
#[derive(Debug, Clone, Copy)]
struct ProcEntry {
    pid: u32,
    ppid: u32,
    pgid: u32,
    state: char,
}

fn proc_table() -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses; the last ')' ends it.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut f = rest.split(' ');
        let state = f.next()?.chars().next()?;
        let ppid = f.next()?.parse().ok()?;
        let pgid = f.next()?.parse().ok()?;
        Some(ProcEntry { pid, ppid, pgid, state })
    })
    .collect()
}

/// The live processes of group `root` and every descendant of `root` or of a member of the group.
fn family(procs: &[ProcEntry], root: u32) -> Vec<u32> {
    let mut out: Vec<u32> =
        procs.iter().filter(|p| (p.pid == root || p.pgid == root) && p.state != 'Z').map(|p| p.pid).collect();
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        for p in procs {
            if p.ppid == parent && p.state != 'Z' && !out.contains(&p.pid) {
                out.push(p.pid);
            }
        }
        i += 1;
    }
    out
}

/// Whether process `pid` is still running (absent and zombie processes are not).
#[cfg(test)]
pub fn is_running(pid: u32) -> bool {
    proc_table().iter().any(|p| p.pid == pid && p.state != 'Z')
}
