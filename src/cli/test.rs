//! `mscclpp test`.

use std::process::ExitCode;

/// Arguments of `mscclpp test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {}

/// Runs `mscclpp test`.
pub fn run(_args: TestArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`mscclpp test` is not implemented yet")
}
