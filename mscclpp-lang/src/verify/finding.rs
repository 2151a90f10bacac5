//! What the verifier reports.

use std::fmt::Write as _;

use serde::Serialize;

use crate::location::{Location, SourceLocation, describe_sources};

/// The kind of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// The plan cannot run at all (inconsistent references, sizes that do not fit the collective).
    InvalidPlan,
    /// An operation touches bytes outside a buffer.
    OutOfBounds,
    /// Thread blocks wait for something that never happens.
    Deadlock,
    /// Two accesses to the same bytes, at least one a write, with no happens-before between them.
    DataRace,
    /// A packet reader may accept an older packet that carries the flag it expects.
    StalePacket,
    /// A rank's buffer differs from the reference result after a launch.
    WrongResult,
    /// Signals and waits, or semaphore releases and acquires, do not balance over the launches.
    Unbalanced,
    /// The run did not finish within the step bound (a livelock).
    StepLimit,
}

impl FindingKind {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::InvalidPlan => "invalid plan",
            FindingKind::OutOfBounds => "out-of-bounds access",
            FindingKind::Deadlock => "deadlock",
            FindingKind::DataRace => "data race",
            FindingKind::StalePacket => "stale packet",
            FindingKind::WrongResult => "wrong result",
            FindingKind::Unbalanced => "unbalanced synchronisation",
            FindingKind::StepLimit => "step limit",
        }
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who performed an access or is blocked.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "agent")]
pub enum Agent {
    /// A thread block.
    ThreadBlock {
        /// Its id.
        tb: usize,
    },
    /// The host filling the input before a launch.
    HostFill,
    /// The host reading the result after a launch.
    HostCheck,
    /// The port-channel proxy of the rank, carrying out a transfer that thread block `tb` posted.
    Proxy {
        /// The posting thread block.
        tb: usize,
    },
}

/// One memory access.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Access {
    /// The rank that performed it.
    pub rank: usize,
    /// Who on that rank.
    pub agent: Agent,
    /// Operation index in the thread block.
    pub op: Option<usize>,
    /// Index inside a pipeline.
    pub inner: Option<usize>,
    /// Pipeline iteration.
    pub iteration: Option<u64>,
    /// Operation name.
    pub op_name: Option<String>,
    /// Launch (1-based).
    pub launch: u32,
    /// Read or write.
    pub write: bool,
    /// In LL packet format.
    pub packet: bool,
    /// The rank owning the bytes.
    pub owner: usize,
    /// `input`, `output`, `scratch` (in-place allocations are named by the buffer the plan used).
    pub buffer: String,
    /// Byte range `[start, end)` in that allocation.
    pub start: u64,
    /// End of the byte range.
    pub end: u64,
    /// The program source lines that recorded the operation (empty when the plan carries none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source: Vec<SourceLocation>,
}

/// "rank 0 thread block 1 op 4 `put` (pipeline iteration 1)", or with source lines "`put` at src/lib.rs:12:9
/// (rank 0 thread block 1 op 4 `put`, pipeline iteration 1)".
impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut who = format!("rank {} ", self.rank);
        match self.agent {
            Agent::ThreadBlock { tb } => write!(who, "thread block {tb}")?,
            Agent::HostFill => write!(who, "host (input fill before the launch)")?,
            Agent::HostCheck => write!(who, "host (result check after the launch)")?,
            Agent::Proxy { tb } => write!(who, "proxy (transfer posted by thread block {tb})")?,
        }
        if let Some(o) = self.op {
            write!(who, " op {o}")?;
            if let Some(i) = self.inner {
                write!(who, ".{i}")?;
            }
        }
        if let (Some(n), false) = (&self.op_name, self.source.len() > 1) {
            write!(who, " `{n}`")?;
        }
        if self.source.is_empty() {
            if let Some(it) = self.iteration {
                write!(who, " (pipeline iteration {it})")?;
            }
            f.write_str(&who)?;
        } else {
            if let Some(it) = self.iteration {
                write!(who, ", pipeline iteration {it}")?;
            }
            write!(f, "{} ({who})", describe_sources(&self.source, self.op_name.as_deref()))?;
        }
        write!(
            f,
            ", launch {}: {} {}{} of rank {} bytes [{}, {})",
            self.launch,
            if self.write { "writes" } else { "reads" },
            if self.packet { "packets in " } else { "" },
            self.buffer,
            self.owner,
            self.start,
            self.end
        )
    }
}

/// A blocked thread block in a deadlock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blocked {
    /// The blocked operation: rank, thread block, operation (and pipeline step) and name.
    #[serde(flatten)]
    pub location: Location,
    /// Launch the rank is in.
    pub launch: u32,
    /// What it waits for.
    pub waits_for: String,
}

/// The specifics of a finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Detail {
    /// A buffer holds a wrong value.
    WrongResult {
        /// Rank whose buffer is wrong.
        rank: usize,
        /// Launch after which it was checked.
        launch: u32,
        /// `output` or `input`.
        buffer: String,
        /// First wrong element (index into the buffer).
        element: u64,
        /// Expected value.
        expected: f64,
        /// Value found.
        got: f64,
        /// Number of wrong elements.
        wrong_elements: u64,
        /// What the wrong values are made of (missing or double contributions, stale data, ...).
        explanation: Vec<String>,
    },
    /// Two unordered accesses.
    Race {
        /// The earlier access (in the schedule that found it).
        first: Box<Access>,
        /// The later access.
        second: Box<Access>,
        /// Overlapping bytes `[start, end)`.
        overlap: [u64; 2],
    },
    /// Everything blocked.
    Deadlock {
        /// Every blocked thread block.
        blocked: Vec<Blocked>,
    },
    /// An access beyond a buffer.
    OutOfBounds {
        /// The operation: rank executing, thread block, operation (and pipeline step) and name.
        #[serde(flatten)]
        location: Location,
        /// Which reference and why.
        what: String,
    },
    /// Something that does not balance.
    Unbalanced {
        /// Rank.
        rank: usize,
        /// Channel or semaphore.
        what: String,
    },
    /// The plan could not be run.
    Invalid {
        /// Where, as far as known.
        #[serde(flatten)]
        location: Location,
    },
    /// The step bound was reached.
    StepLimit {
        /// Steps executed.
        steps: u64,
    },
}

/// One finding, aggregated over the schedules that hit it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Kind.
    pub kind: FindingKind,
    /// A readable explanation, precise enough to fix the plan.
    pub message: String,
    /// Structured specifics.
    pub detail: Detail,
    /// Number of schedules in which it occurred.
    pub schedules: u32,
    /// The first schedule (index) and its strategy.
    pub first_schedule: u32,
    /// Strategy of that schedule.
    pub strategy: String,
    /// The ranks on which this finding occurred, the same up to rank numbers and byte ranges (the message and
    /// details are those of the first of them found); empty when it is not tied to one rank (a deadlock, the step
    /// limit).
    pub ranks: Vec<usize>,
    #[serde(skip)]
    pub(crate) key: String,
    /// The earliest launch in which it happened (0 when not tied to a launch).
    #[serde(skip)]
    pub(crate) launch: u32,
}

impl Detail {
    /// The rank a finding is about: the rank whose buffer is wrong or whose bytes are raced on, the rank executing
    /// an out-of-bounds access, the unbalanced or invalid rank; `None` for findings of the whole run.
    pub fn rank(&self) -> Option<usize> {
        match self {
            Detail::WrongResult { rank, .. } | Detail::Unbalanced { rank, .. } => Some(*rank),
            Detail::Race { second, .. } => Some(second.owner),
            Detail::OutOfBounds { location, .. } | Detail::Invalid { location } => location.rank,
            Detail::Deadlock { .. } | Detail::StepLimit { .. } => None,
        }
    }
}

/// `message` with every rank number that follows the word `rank` or `ranks` written relative to `rank` (`rank
/// +1` for the next rank of `world`), so that the same finding on two ranks of a symmetric plan reads the same.
fn relative_ranks(message: &str, rank: usize, world: usize) -> String {
    let world = world.max(1);
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find("rank") {
        let word_start = i == 0 || !rest[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let after = &rest[i + 4..];
        let after = if let Some(a) = after.strip_prefix("s ") { a } else { after.strip_prefix(' ').unwrap_or("") };
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let head = rest.len() - after.len();
        if word_start && digits > 0 {
            let n: usize = after[..digits].parse().unwrap_or(0);
            out.push_str(&rest[..head]);
            out.push_str(&format!("+{}", (n + world - rank % world) % world));
            rest = &after[digits..];
        } else {
            out.push_str(&rest[..i + 4]);
            rest = &rest[i + 4..];
        }
    }
    out.push_str(rest);
    out
}

/// `message` with every byte or element range `[a, b)` written `[_)`.
fn without_ranges(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find('[') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let range = tail.find(')').filter(|&e| {
            let inner = &tail[1..e];
            let (a, b) = inner.split_once(", ").unwrap_or(("", ""));
            !a.is_empty() && !b.is_empty() && (a.chars().chain(b.chars())).all(|c| c.is_ascii_digit())
        });
        match range {
            Some(e) => {
                out.push_str("[_)");
                rest = &tail[e + 1..];
            }
            None => {
                out.push('[');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Collapses findings that are the same on several ranks into the first of them, listing the ranks in
/// [`Finding::ranks`]; keeps the order of first occurrence. Two findings are the same when they have the same
/// kind and the same message either with every rank number written relative to the finding's rank and byte ranges
/// left out (a symmetric plan: "rank 1 writes rank 0 bytes [0, 8)" on rank 0 is "rank 0 writes rank 1 bytes [8,
/// 16)" on rank 1) or with only the first mention of
/// the finding's own rank left out (the rest absolute: every rank of an allreduce misses rank 2's contribution). The collapsed finding counts the schedules of the rank that occurred in most of them and
/// the earliest first schedule.
pub(crate) fn collapse_across_ranks(findings: Vec<Finding>, world: usize) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    let mut keys: Vec<Option<[String; 2]>> = Vec::with_capacity(findings.len());
    for mut f in findings {
        let Some(rank) = f.detail.rank() else {
            f.ranks = Vec::new();
            out.push(f);
            keys.push(None);
            continue;
        };
        let own = format!("rank {rank}");
        let key = [
            format!("{:?}|{}", f.kind, without_ranges(&relative_ranks(&f.message, rank, world))),
            format!("{:?}|{}", f.kind, f.message.replacen(&own, "rank _", 1)),
        ];
        // Only findings of other ranks are collapsed: two findings of one rank stay apart.
        let same = keys.iter().zip(&out).position(|(k, o)| {
            !o.ranks.contains(&rank) && k.as_ref().is_some_and(|k| k[0] == key[0] || k[1] == key[1])
        });
        match same {
            Some(i) => {
                let into = &mut out[i];
                into.ranks.push(rank);
                into.ranks.sort_unstable();
                into.schedules = into.schedules.max(f.schedules);
                if f.first_schedule < into.first_schedule {
                    into.first_schedule = f.first_schedule;
                    into.strategy = f.strategy;
                }
                into.launch = into.launch.min(f.launch);
            }
            None => {
                f.ranks = vec![rank];
                out.push(f);
                keys.push(Some(key));
            }
        }
    }
    out
}

/// The result of verifying one plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Plan name.
    pub plan: String,
    /// Collective.
    pub collective: String,
    /// Protocol.
    pub protocol: String,
    /// In place.
    pub inplace: bool,
    /// Ranks.
    pub world_size: usize,
    /// Launches per schedule.
    pub launches: u32,
    /// Schedules run.
    pub schedules: u32,
    /// Element type.
    pub dtype: String,
    /// Message size in bytes (per rank: the allgather output, the input otherwise).
    pub size: u64,
    /// Input bytes per rank.
    pub input_bytes: u64,
    /// Output bytes per rank.
    pub output_bytes: u64,
    /// LL packet format ("LL16 packets", "LL8 packets"), or "no packets" for a plan whose operations use none.
    pub packet_format: String,
    /// Reduction operator checked.
    pub reduce_op: String,
    /// Scheduler steps over all schedules.
    pub steps: u64,
    /// Wall time in milliseconds.
    pub elapsed_ms: u64,
    /// Findings, most fundamental first.
    pub findings: Vec<Finding>,
}

impl Report {
    /// True when nothing was found.
    pub fn ok(&self) -> bool {
        self.findings.is_empty()
    }

    /// The kinds found, in report order, without repetition.
    pub fn kinds(&self) -> Vec<FindingKind> {
        let mut v: Vec<FindingKind> = Vec::new();
        for f in &self.findings {
            if !v.contains(&f.kind) {
                v.push(f.kind);
            }
        }
        v
    }

    /// A readable report.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "plan `{}` ({} {}, {}, {} ranks): {} launches x {} schedules, {} {} B per rank ({} in, {} out), {}, reduce {}",
            self.plan,
            self.collective,
            self.protocol,
            if self.inplace { "in place" } else { "out of place" },
            self.world_size,
            self.launches,
            self.schedules,
            self.dtype,
            self.size,
            self.input_bytes,
            self.output_bytes,
            self.packet_format,
            self.reduce_op,
        );
        if self.findings.is_empty() {
            let _ = writeln!(s, "  OK: no findings ({} steps, {} ms)", self.steps, self.elapsed_ms);
            return s;
        }
        let _ =
            writeln!(s, "  FAILED: {} finding(s) ({} steps, {} ms)", self.findings.len(), self.steps, self.elapsed_ms);
        for (i, f) in self.findings.iter().enumerate() {
            let on = if f.ranks.len() > 1 {
                let list: Vec<String> = f.ranks.iter().map(|r| r.to_string()).collect();
                format!(" on ranks {} (shown for rank {})", list.join(", "), f.detail.rank().unwrap_or(f.ranks[0]))
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "  [{}] {}{on} (in {} of {} schedules; first in schedule {} ({})):",
                i + 1,
                f.kind,
                f.schedules,
                self.schedules,
                f.first_schedule,
                f.strategy
            );
            for line in f.message.lines() {
                let _ = writeln!(s, "      {line}");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_numbers_are_written_relative_to_the_finding_rank() {
        let m = "rank 1 thread block 0, launch 2: writes output of rank 0 bytes [0, 16); ranks {0, 1}; frank 3";
        assert_eq!(
            relative_ranks(m, 1, 4),
            "rank +0 thread block 0, launch 2: writes output of rank +3 bytes [0, 16); ranks {0, 1}; frank 3"
        );
        assert_eq!(relative_ranks("rank 0 reads rank 1", 0, 2), relative_ranks("rank 1 reads rank 0", 1, 2));
        assert_ne!(relative_ranks("rank 0 reads rank 0", 0, 2), relative_ranks("rank 1 reads rank 0", 1, 2));
        assert_eq!(relative_ranks("ranks 2 and 3, rank", 2, 4), "ranks +0 and 3, rank");
        assert_eq!(without_ranges("bytes [0, 16) and [8, 9); [a, b) [1,2)"), "bytes [_) and [_); [a, b) [1,2)");
    }
}
