//! `mscclpp install`.

use std::process::ExitCode;

/// Arguments of `mscclpp install`.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {}

/// Runs `mscclpp install`.
pub fn run(_args: InstallArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`mscclpp install` is not implemented yet")
}
