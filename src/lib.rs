//! mscclpp: GPU-driven collective communication in Rust.
//!
//! Collective algorithms are Rust functions marked `#[collective_program]` that build a typed program graph;
//! they register into a plan registry, compile to MSCCL++-compatible JSON execution plans, are verified on the
//! CPU, and run on GPUs through the executor.

/// The default collective programs (`mscclpp-algorithms`), which register themselves at link time.
///
/// The linker keeps a crate's registrations only when the binary references the crate: referencing this module
/// (`use mscclpp::algorithms as _;`) keeps the defaults linked, so they are in the registry of a binary that
/// selects programs or runs the `mscclpp` command line over its own ones (`mscclpp_cli::main`).
///
/// ```
/// use mscclpp::algorithms as _;
///
/// assert!(mscclpp::lang::registry::find("allreduce_twoshot").is_ok());
/// ```
pub use mscclpp_algorithms as algorithms;
/// The GPU runtime (bootstrap, communicator, channels, proxy, kernel launcher); `exec::sys` is the CUDA edge.
pub use mscclpp_exec as exec;
/// The eDSL, execution plans, the program registry and the CPU verifier.
pub use mscclpp_lang as lang;

/// Everything an algorithm author needs: `use mscclpp::prelude::*;`.
pub mod prelude {
    pub use mscclpp_lang::prelude::*;
}
