//! `mscclpp list`.

use std::process::ExitCode;

/// Arguments of `mscclpp list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {}

/// Runs `mscclpp list`.
pub fn run(_args: ListArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`mscclpp list` is not implemented yet")
}
