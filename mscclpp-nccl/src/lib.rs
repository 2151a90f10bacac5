//! `libmscclpp_nccl.so`: the NCCL 2.28 C API. Preloaded into a program that uses NCCL (PyTorch with
//! `backend="nccl"`, for one), it runs all-reduce, all-gather, reduce-scatter and broadcast with mscclpp's
//! plans where they are faster and hands everything else to the real NCCL.
//!
//! The handle the application holds is the real NCCL communicator; our state lives beside it, keyed by it
//! ([`state`]), so a call on a handle we do not know, or one we do not accelerate, goes to the real library
//! unchanged ([`real`]). See docs/nccl.md for the design, the environment variables and the limits.

pub mod abi;
pub mod accel;
pub mod exports;
pub mod group;
pub mod plans;
pub mod policy;
pub mod real;
pub mod state;

// The default collectives register themselves at link time; without this reference the linker drops them.
use mscclpp_algorithms as _;

pub use exports::EXPORTS;

/// How many programs the registry linked into this library holds (the default collectives register themselves
/// at load time). Not part of NCCL's API: the ABI check calls it to prove the registrations survived linking.
#[unsafe(no_mangle)]
pub extern "C" fn mscclpp_nccl_program_count() -> usize {
    mscclpp_lang::registry::programs().len()
}
