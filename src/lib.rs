//! mscclpp: GPU-driven collective communication in Rust.
//!
//! Collective algorithms are Rust functions marked `#[collective_program]` that build a typed program graph;
//! they register into a plan registry, compile to MSCCL++-compatible JSON execution plans, are verified on the
//! CPU, and run on GPUs through the executor.

/// The GPU runtime (bootstrap, communicator, channels, proxy, kernel launcher); `exec::sys` is the CUDA edge.
pub use mscclpp_exec as exec;
pub use mscclpp_lang as lang;

/// Everything an algorithm author needs: `use mscclpp::prelude::*;`.
pub mod prelude {
    pub use mscclpp_lang::prelude::*;
}
