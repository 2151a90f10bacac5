//! The `mscclpp` command line.

#![forbid(unsafe_code)]

use std::process::ExitCode;

// The default algorithms register themselves at link time; reference the crate so the linker keeps them.
use mscclpp_algorithms as _;

fn main() -> ExitCode {
    mscclpp_cli::main()
}
