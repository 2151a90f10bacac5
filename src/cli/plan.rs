//! `mscclpp plan`.

use std::process::ExitCode;

/// Arguments of `mscclpp plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {}

/// Runs `mscclpp plan`.
pub fn run(_args: PlanArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`mscclpp plan` is not implemented yet")
}
