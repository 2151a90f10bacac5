//! The `mscclpp` command line: argument parsing and one module per subcommand.
//!
//! A binary that links its own `#[collective_program]` crates can call [`main`] to get the same command line
//! (`list`, `plan`, `install`, `verify`, `test`, `bench`, `tune`, `info`, `plot`) over its programs. Programs register themselves at link time, and
//! the linker keeps a crate's registrations only when the binary references the crate, so the binary names each
//! crate of programs it wants listed, the default algorithms included (`mscclpp::algorithms` through the facade,
//! or the `mscclpp-algorithms` crate):
//!
//! ```no_run
//! # mod my_algos {}
//! use std::process::ExitCode;
//!
//! fn main() -> ExitCode {
//!     use my_algos as _; // the crate that holds the user's `#[collective_program]`s
//!     use mscclpp_algorithms as _; // the defaults (or `mscclpp::algorithms` through the facade)
//!     mscclpp_cli::user_main!() // `--version` names this crate, then the library
//! }
//! ```

// `unsafe` only at two edges: the NCCL loader of `mscclpp bench --nccl` (bench_nccl), the edge to libnccl, and
// the fatal-signal reporter (crash), the edge to libc's signal handling.
#![deny(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod bench;
#[allow(unsafe_code)]
mod bench_nccl;
mod bench_plot;
pub mod bench_report;
#[allow(unsafe_code)]
pub mod crash;
pub mod info;
pub mod install;
pub mod list;
mod measure;
pub mod plan;
pub mod plot;
pub mod test;
pub mod tune;
pub mod verify;

/// The commit this crate was built from: its short hash, followed by `, dirty` when tracked files differed from
/// it, or `unknown` when it was not built from a git checkout (set by the build script).
pub const COMMIT: &str = env!("CLI_BUILD_COMMIT");

/// The version `--version` prints: the crate version and the commit, e.g. `0.1.0 (commit 1a2b3c4, dirty)`.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("CLI_BUILD_COMMIT"), ")");

/// What ran: `mscclpp 0.1.0 (commit 1a2b3c4, dirty)`, the line `mscclpp --version` prints and the first line of
/// `mscclpp test`'s output.
pub const BUILD_INFO: &str = concat!("mscclpp ", env!("CARGO_PKG_VERSION"), " (commit ", env!("CLI_BUILD_COMMIT"), ")");

/// GPU-driven collective communication: author, verify and run MSCCL++ execution plans.
#[derive(Debug, Parser)]
#[command(name = "mscclpp", version = VERSION, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the registered collective programs with their metadata.
    List(list::ListArgs),
    /// Compile a registered program into an MSCCL++ JSON execution plan.
    Plan(plan::PlanArgs),
    /// Write every default plan for world sizes 2, 4 and 8 into the plan cache.
    Install(install::InstallArgs),
    /// Run plans on simulated ranks on the CPU; report wrong results, races and deadlocks.
    Verify(verify::VerifyArgs),
    /// Run a plan on the GPUs of this job (under mpirun or torchrun); check each launch before the timing and the
    /// last timed one.
    Test(test::TestArgs),
    /// Benchmark a collective over a range of sizes on the GPUs of this job (under mpirun or torchrun), checked
    /// against the reference, optionally beside NCCL; table, CSV, JSON and PNG plots.
    Bench(bench::BenchArgs),
    /// Find the fastest program, thread blocks and threads per block at each size on the GPUs of this job (under
    /// mpirun or torchrun), optionally beside NCCL; write them into the tuned table that selection follows.
    Tune(tune::TuneArgs),
    /// Print the resolved configuration, the GPUs and their links, CUDA/NVRTC versions and InfiniBand devices.
    Info(info::InfoArgs),
    /// Plot a timing table (CSV: `bytes` and one `NAME_us` column per implementation) as a PNG of latency and bus
    /// bandwidth, like `bench --plot`.
    Plot(plot::PlotArgs),
}

/// Exit status of a process whose output pipe was closed (as a shell reports a SIGPIPE death: 128 + 13).
pub const BROKEN_PIPE_EXIT: i32 = 141;

/// Whether a panic message is `print!`'s on a closed stdout or stderr (`mscclpp list | head`).
fn is_broken_pipe_panic(message: &str) -> bool {
    message.starts_with("failed printing to std") && message.contains("Broken pipe")
}

/// Make a closed output pipe end the process quietly with [`BROKEN_PIPE_EXIT`], as other command-line tools do,
/// instead of a panic message; every other panic is reported as before.
fn exit_quietly_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_broken_pipe_panic(message) {
            std::process::exit(BROKEN_PIPE_EXIT);
        }
        default(info);
    }));
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    exit_quietly_on_broken_pipe();
    crate::crash::install_reporter();
    dispatch(Cli::parse())
}

/// [`main`] for a user's own binary: `--version` and `--help` name the user's crate and version, then this library's
/// (`my-algos 0.3.0 (mscclpp 0.1.0, commit 1a2b3c4)`). [`user_main!`] passes the calling crate's name and version.
pub fn main_for(name: &'static str, version: &'static str) -> ExitCode {
    exit_quietly_on_broken_pipe();
    crate::crash::install_reporter();
    let matches = command_for(name, version).get_matches();
    match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => dispatch(cli),
        Err(e) => {
            let _ = e.print();
            ExitCode::from(2)
        }
    }
}

/// The command line as a user's binary shows it (see [`main_for`]).
pub fn command_for(name: &'static str, version: &'static str) -> clap::Command {
    // clap keeps the version for the life of the process: leak the one string.
    let full: &'static str = Box::leak(format!("{version} (mscclpp {VERSION})").into_boxed_str());
    <Cli as clap::CommandFactory>::command().name(name).bin_name(name).version(full)
}

/// `fn main() -> ExitCode { mscclpp_cli::user_main!() }`: the command line over the programs linked into the
/// calling crate, whose `--version` names that crate and its version beside this library's.
#[macro_export]
macro_rules! user_main {
    () => {
        $crate::main_for(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
    };
}

/// Runs the command line on `args` (the program name first) as [`main`] does, but returns the exit status instead
/// of leaving it to the process: the entry point of the Python package's `mscclpp` console script, which runs in
/// the interpreter's process (no panic hooks are installed there).
pub fn run_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` print and succeed; a usage error prints and fails.
            let _ = e.print();
            return e.exit_code();
        }
    };
    let code = dispatch(cli);
    (0u8..=255).find(|k| code == ExitCode::from(*k)).map_or(1, i32::from)
}

/// Runs one parsed command line.
fn dispatch(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::List(a) => list::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Install(a) => install::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Test(a) => test::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Info(a) => info::run(a),
        Command::Plot(a) => plot::run(a),
    };
    mscclpp_exec::startup::mark("main: returned (teardown done)");
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_binary_names_its_crate_and_the_library() {
        let cmd = command_for("my-algos", "0.3.0");
        assert_eq!(cmd.get_name(), "my-algos");
        let v = cmd.render_version();
        assert!(v.starts_with("my-algos 0.3.0 (mscclpp 0.1.0"), "{v}");
        // The subcommands are the library's.
        assert!(cmd.get_subcommands().any(|c| c.get_name() == "verify"));
    }
}
