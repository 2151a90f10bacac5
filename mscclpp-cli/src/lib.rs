//! The `mscclpp` command line: argument parsing and one module per subcommand.
//!
//! A binary that links its own `#[collective_program]` crates can call [`main`] to get the same command line
//! over its programs and the default ones.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod info;
pub mod install;
pub mod list;
pub mod plan;
pub mod test;
pub mod verify;

/// GPU-driven collective communication: author, verify and run MSCCL++ execution plans.
#[derive(Debug, Parser)]
#[command(name = "mscclpp", version, about)]
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
    /// Run a plan on the GPUs of this job (under mpirun or torchrun) and check every launch.
    Test(test::TestArgs),
    /// Print the resolved configuration, the GPUs and their links, CUDA/NVRTC versions and InfiniBand devices.
    Info(info::InfoArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::List(a) => list::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Install(a) => install::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Test(a) => test::run(a),
        Command::Info(a) => info::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
