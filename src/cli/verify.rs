//! `mscclpp verify`.

use std::process::ExitCode;

/// Arguments of `mscclpp verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {}

/// Runs `mscclpp verify`.
pub fn run(_args: VerifyArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`mscclpp verify` is not implemented yet")
}
