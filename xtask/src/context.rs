//! What the steps of the GPU suite are made from ([`Context`]): the collected binaries, the registered programs
//! (as `mscclpp list --json` describes them), the corpus plans, the launcher and the host's GPUs. The parts
//! (`parts.rs`) and the modules that hold some parts' steps all build on it.

use std::path::PathBuf;

use crate::launch::{Launcher, words};

/// A registered program, as `mscclpp list --json` describes it (only what the suite selects on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// Registry name.
    pub name: String,
    /// Collective (allreduce, allgather, ...).
    pub collective: String,
    /// Smallest and largest world size.
    pub world: (u64, u64),
    /// Smallest message size in bytes.
    pub min_size: u64,
    /// Largest message size in bytes (`None`: no limit).
    pub max_size: Option<u64>,
    /// Whether it runs only in place.
    pub in_place_only: bool,
    /// Its tags (`default`, `example`, `nvls`, ...).
    pub tags: Vec<String>,
    /// Whether it says `default = 0` and runs on one node: no default, chosen only by the rows of tuned tables
    /// (the matrices run it all the same, since a shipped table may choose it).
    pub table_only: bool,
}

impl Program {
    /// Whether the correctness matrices run it: a default, a port-channel program or a program of tuned tables.
    pub(crate) fn in_matrices(&self) -> bool {
        self.tagged("default") || self.tagged("port") || self.table_only
    }

    pub(crate) fn tagged(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// Whether the suite runs it at all on `ranks` ranks: NVLink multicast programs are skipped (multicast stays
    /// off on shared hosts) and so is a program whose world sizes exclude the job.
    pub(crate) fn runnable(&self, ranks: usize) -> bool {
        let r = ranks as u64;
        !self.tagged("nvls") && self.world.0 <= r && r <= self.world.1
    }

    /// The placement flag: both placements where the program has both.
    pub(crate) fn placements(&self) -> &'static str {
        if self.in_place_only { "--in-place" } else { "--both-placements" }
    }
}

/// Parses the output of `mscclpp list --json`.
pub fn parse_programs(json: &str) -> Result<Vec<Program>, String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("`mscclpp list --json`: {e}"))?;
    let list = v.as_array().ok_or("`mscclpp list --json` is not an array")?;
    list.iter()
        .map(|p| {
            let text = |k: &str| {
                p.get(k).and_then(|x| x.as_str()).map(str::to_string).ok_or(format!("program without `{k}`: {p}"))
            };
            let num = |a: &str, b: &str| p.get(a).and_then(|x| x.get(b)).and_then(|x| x.as_u64());
            let world = (num("world_sizes", "min").unwrap_or(1), num("world_sizes", "max").unwrap_or(u64::MAX));
            // A tag counts unless its value is 0, false or null (`default=0` is no default).
            let set =
                |v: &serde_json::Value| !(v.is_null() || v == &serde_json::json!(0) || v == &serde_json::json!(false));
            let tags = p
                .get("tags")
                .and_then(|t| t.as_object())
                .map(|t| t.iter().filter(|(_, v)| set(v)).map(|(k, _)| k.clone()).collect())
                .unwrap_or_default();
            // A program of tuned tables only; one for several nodes needs a job of several nodes, not the suite's.
            let one_node = p.get("ranks_per_node").is_none_or(|v| v == "world");
            let table_only = one_node && p.get("tags").and_then(|t| t.get("default")) == Some(&serde_json::json!(0));
            Ok(Program {
                name: text("name")?,
                collective: text("collective")?,
                world,
                min_size: num("message_sizes", "min").unwrap_or(0),
                max_size: num("message_sizes", "max"),
                in_place_only: text("buffer_mode")? == "in_place",
                tags,
                table_only,
            })
        })
        .collect()
}

/// Everything the steps are made from.
#[derive(Debug, Clone)]
pub struct Context {
    /// The collected binaries.
    pub bin: PathBuf,
    /// Test binaries in `bin/tests`, sorted.
    pub tests: Vec<PathBuf>,
    /// The registered programs.
    pub programs: Vec<Program>,
    /// Corpus plans (path, ranks) not for unit tests or several nodes.
    pub corpus: Vec<(PathBuf, usize)>,
    /// Multi-rank launcher of the job.
    pub launcher: Launcher,
    /// Where the NCCL script is written.
    pub nccl_script: PathBuf,
    /// `MSCCLPP_SUITE_PROGRAMS`: the programs of the per-program steps, when narrowed.
    pub only: Option<Vec<String>>,
    /// GPUs on the host (`nvidia-smi -L`; 0 when unknown).
    pub gpus: usize,
    /// The log folder (packed with the logs): where steps keep files such as `mscclpp bench`'s CSV and plots.
    pub logs: PathBuf,
}

impl Context {
    pub(crate) fn exe(&self, name: &str) -> String {
        self.bin.join(name).display().to_string()
    }

    /// Whether the per-program steps take program `name` (`MSCCLPP_SUITE_PROGRAMS`, when set, names it).
    pub(crate) fn picked(&self, name: &str) -> bool {
        self.only.as_ref().is_none_or(|only| only.iter().any(|o| o == name))
    }

    pub(crate) fn mscclpp(&self, args: &[&str]) -> Vec<String> {
        let mut a = vec![self.exe("mscclpp")];
        a.extend(words(args));
        a
    }

    pub(crate) fn mpi(&self, step_env: &[&str], program: Vec<String>) -> Vec<String> {
        self.launcher.command(&words(step_env), &program)
    }

    /// The default programs of the job, in registry order.
    pub(crate) fn defaults(&self) -> impl Iterator<Item = &Program> {
        self.programs.iter().filter(|p| p.tagged("default") && p.runnable(self.launcher.ranks))
    }

    /// The programs the correctness matrices run: the defaults, the port-channel programs and the programs of
    /// tuned tables only (`default = 0`), in registry order.
    pub(crate) fn matrix_programs(&self) -> impl Iterator<Item = &Program> {
        self.programs.iter().filter(|p| p.in_matrices() && p.runnable(self.launcher.ranks))
    }

    /// The example programs of the job that the matrices do not run (not NVLink multicast).
    pub(crate) fn examples(&self) -> impl Iterator<Item = &Program> {
        self.programs.iter().filter(|p| p.tagged("example") && !p.in_matrices() && p.runnable(self.launcher.ranks))
    }

    /// The same launcher for another number of ranks.
    pub(crate) fn with_ranks(&self, ranks: usize) -> Context {
        let mut c = self.clone();
        c.launcher.ranks = ranks;
        c
    }
}
