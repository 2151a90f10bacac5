//! The suite's environment and its launchers: every step runs with the same variables (NVLink multicast off on
//! shared hosts, the kernel cache, bounded waits, the host's NVRTC, Open MPI as root), and multi-rank steps start
//! through one mpirun command line (or torchrun where a step exercises it).

use std::path::Path;

/// Variables every step runs with, in order (name, value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteEnv {
    /// The variables.
    pub vars: Vec<(String, String)>,
}

/// The variables mpirun forwards to its ranks (when they are set), before a step's own.
const FORWARDED: [&str; 5] = [
    "NCCL_NVLS_ENABLE",
    "MSCCLPP_CACHE_DIR",
    "MSCCLPP_WAIT_TIMEOUT_MS",
    "MSCCLPP_BOOTSTRAP_TIMEOUT_MS",
    "LD_LIBRARY_PATH",
];

/// Folders searched, in order, for the host's NVRTC (`libnvrtc.so.13`).
const NVRTC_DIRS: [&str; 2] = ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"];

impl SuiteEnv {
    /// The environment on this host: `get` reads a variable of the caller's environment, `exists` says whether a
    /// file exists (both injected so that tests can build it without touching the process).
    pub fn new(get: impl Fn(&str) -> Option<String>, exists: impl Fn(&Path) -> bool) -> Self {
        let or = |name: &str, default: &str| get(name).filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_string());
        let mut vars: Vec<(String, String)> = [
            // Never NVLink multicast on shared hosts, whoever asks for it.
            ("NCCL_NVLS_ENABLE", "0".to_string()),
            ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1".to_string()),
            ("NVSHMEM_DISABLE_NVLS", "1".to_string()),
            ("MSCCLPP_CACHE_DIR", or("MSCCLPP_CACHE_DIR", "/tmp/mscclpp-cache")),
            ("MSCCLPP_BOOTSTRAP_TIMEOUT_MS", or("MSCCLPP_BOOTSTRAP_TIMEOUT_MS", "30000")),
            ("MSCCLPP_WAIT_TIMEOUT_MS", or("MSCCLPP_WAIT_TIMEOUT_MS", "10000")),
            ("OMPI_ALLOW_RUN_AS_ROOT", "1".to_string()),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let old = get("LD_LIBRARY_PATH").filter(|v| !v.is_empty());
        let nvrtc = NVRTC_DIRS.iter().find(|d| exists(&Path::new(d).join("libnvrtc.so.13")));
        let ld = match (nvrtc, old) {
            (Some(d), Some(old)) => Some(format!("{d}:{old}")),
            (Some(d), None) => Some((*d).to_string()),
            (None, old) => old,
        };
        if let Some(ld) = ld {
            vars.push(("LD_LIBRARY_PATH".to_string(), ld));
        }
        SuiteEnv { vars }
    }

    /// The environment of this process and host.
    pub fn from_host() -> Self {
        Self::new(|k| std::env::var(k).ok(), Path::exists)
    }

    /// The value of one variable.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// How multi-rank steps are started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Starter {
    /// `mpirun` (Open MPI).
    Mpirun,
    /// No mpirun on this host: `xtask gpu ranks`, which starts the ranks with mpirun's variables set.
    Ranks {
        /// The xtask executable.
        xtask: String,
    },
}

/// The launcher of multi-rank steps: one command line for every step of a part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// Ranks per job (one per GPU, or several per GPU with `MSCCLPP_SHARED_GPU=1`).
    pub ranks: usize,
    /// mpirun or the fallback.
    pub starter: Starter,
    /// Variables forwarded to the ranks (those of the suite's environment that are set).
    pub forwarded: Vec<String>,
}

impl Launcher {
    /// The launcher for `ranks` ranks in `env`, through mpirun when `have_mpirun`.
    pub fn new(ranks: usize, env: &SuiteEnv, have_mpirun: bool, xtask: &str) -> Self {
        let forwarded = FORWARDED.iter().filter(|k| env.get(k).is_some()).map(|k| k.to_string()).collect();
        let starter = if have_mpirun { Starter::Mpirun } else { Starter::Ranks { xtask: xtask.to_string() } };
        Launcher { ranks, starter, forwarded }
    }

    /// The command line that runs `program` as `self.ranks` ranks; `extra_env` names the step's own variables,
    /// which mpirun forwards too.
    pub fn command(&self, extra_env: &[String], program: &[String]) -> Vec<String> {
        let mut argv: Vec<String> = match &self.starter {
            Starter::Mpirun => {
                let mut a = words(&["mpirun", "--allow-run-as-root", "--bind-to", "none", "-np"]);
                a.push(self.ranks.to_string());
                a.extend(self.exports(extra_env));
                a
            }
            Starter::Ranks { xtask } => {
                vec![xtask.clone(), "gpu".into(), "ranks".into(), "--np".into(), self.ranks.to_string(), "--".into()]
            }
        };
        argv.extend(program.iter().cloned());
        argv
    }

    /// An mpirun job of two programs: `first` on all ranks but the last, `last` on the last one (mpirun's
    /// `A : B` form). Only mpirun can start it.
    pub fn command_split(&self, extra_env: &[String], first: &[String], last: &[String]) -> Vec<String> {
        let mut argv = words(&["mpirun", "--allow-run-as-root"]);
        argv.extend(self.exports(extra_env));
        argv.push("-np".to_string());
        argv.push(self.ranks.saturating_sub(1).to_string());
        argv.extend(first.iter().cloned());
        argv.extend(words(&[":", "-np", "1"]));
        argv.extend(last.iter().cloned());
        argv
    }

    /// mpirun's `-x NAME` arguments: the suite's variables, then the step's own (each name once).
    fn exports(&self, extra_env: &[String]) -> Vec<String> {
        let mut names: Vec<&String> = Vec::new();
        for k in self.forwarded.iter().chain(extra_env) {
            if !names.contains(&k) {
                names.push(k);
            }
        }
        names.into_iter().flat_map(|k| ["-x".to_string(), k.clone()]).collect()
    }

    /// torchrun starting `program` (not a Python script) as `self.ranks` local ranks.
    pub fn torchrun_no_python(&self, program: &[String]) -> Vec<String> {
        let mut a = words(&["torchrun", "--no-python", "--standalone", "--nproc-per-node"]);
        a.push(self.ranks.to_string());
        a.extend(program.iter().cloned());
        a
    }

    /// torchrun starting a Python script as `self.ranks` local ranks.
    pub fn torchrun_python(&self, script: &str, args: &[String]) -> Vec<String> {
        let mut a = words(&["torchrun", "--nproc-per-node"]);
        a.push(self.ranks.to_string());
        a.push(script.to_string());
        a.extend(args.iter().cloned());
        a
    }
}

/// Owned copies of string literals.
pub fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

/// Whether `program` is found on `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(ld: Option<&str>, nvrtc: bool) -> SuiteEnv {
        let ld = ld.map(str::to_string);
        SuiteEnv::new(
            move |k| if k == "LD_LIBRARY_PATH" { ld.clone() } else { None },
            move |p| nvrtc && p == Path::new("/usr/local/cuda/lib64/libnvrtc.so.13"),
        )
    }

    #[test]
    fn the_environment_turns_multicast_off_and_finds_nvrtc() {
        let e = env(Some("/opt/x"), true);
        assert_eq!(e.get("NCCL_NVLS_ENABLE"), Some("0"));
        assert_eq!(e.get("MSCCLPP_CACHE_DIR"), Some("/tmp/mscclpp-cache"));
        assert_eq!(e.get("MSCCLPP_WAIT_TIMEOUT_MS"), Some("10000"));
        assert_eq!(e.get("LD_LIBRARY_PATH"), Some("/usr/local/cuda/lib64:/opt/x"));
        assert_eq!(env(None, false).get("LD_LIBRARY_PATH"), None);
        let caller = SuiteEnv::new(
            |k| (k == "NCCL_NVLS_ENABLE" || k == "MSCCLPP_CACHE_DIR").then(|| "9".to_string()),
            |_| false,
        );
        assert_eq!(caller.get("NCCL_NVLS_ENABLE"), Some("0"), "multicast stays off whatever the caller set");
        assert_eq!(caller.get("MSCCLPP_CACHE_DIR"), Some("9"));
    }

    #[test]
    fn the_mpirun_line_forwards_the_environment_and_the_step_variables() {
        let l = Launcher::new(2, &env(None, true), true, "/x/xtask");
        let argv = l.command(&["MSCCLPP_SHARED_GPU".to_string()], &words(&["bin/mscclpp", "test", "broadcast"]));
        assert_eq!(
            argv.join(" "),
            "mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x MSCCLPP_CACHE_DIR \
             -x MSCCLPP_WAIT_TIMEOUT_MS -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS -x LD_LIBRARY_PATH -x MSCCLPP_SHARED_GPU \
             bin/mscclpp test broadcast"
        );
        let no_ld = Launcher::new(4, &env(None, false), true, "/x/xtask");
        let argv = no_ld.command(&[], &words(&["p"]));
        assert!(!argv.contains(&"LD_LIBRARY_PATH".to_string()), "{argv:?}");
        assert_eq!(argv[5], "4");
    }

    #[test]
    fn without_mpirun_the_ranks_start_through_xtask() {
        let l = Launcher::new(2, &env(None, false), false, "/x/xtask");
        assert_eq!(l.command(&[], &words(&["p", "a"])).join(" "), "/x/xtask gpu ranks --np 2 -- p a");
    }

    #[test]
    fn the_split_job_runs_the_last_rank_apart() {
        let l = Launcher::new(2, &env(None, false), true, "/x/xtask");
        let extra = ["V".to_string(), "MSCCLPP_CACHE_DIR".to_string()];
        let argv = l.command_split(&extra, &words(&["m", "test"]), &words(&["sleep", "20"]));
        assert_eq!(
            argv.join(" "),
            "mpirun --allow-run-as-root -x NCCL_NVLS_ENABLE -x MSCCLPP_CACHE_DIR -x MSCCLPP_WAIT_TIMEOUT_MS \
             -x MSCCLPP_BOOTSTRAP_TIMEOUT_MS -x V -np 1 m test : -np 1 sleep 20"
        );
        assert_eq!(
            l.torchrun_no_python(&words(&["p"])).join(" "),
            "torchrun --no-python --standalone --nproc-per-node 2 p"
        );
    }
}
