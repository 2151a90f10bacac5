//! Fuzzing of mscclpp's untrusted inputs on a stable toolchain: plans (parser and validator), registry requests,
//! the CPU verifier and the bootstrap's wire format.
//!
//! The harness is self-contained (no nightly toolchain, no sanitizer runtime): a seeded mutator that knows JSON,
//! seeds from the MSCCL++ corpus and our own emitted plans, and outcome-class feedback (an input that reaches a
//! new kind of result joins the working corpus). The `mscclpp-fuzz` binary adds a hang guard and an allocation
//! guard; `tests/` replays every seed and saved regression input and runs a short campaign of each target.

pub mod driver;
pub mod mutate;
pub mod rng;
pub mod seeds;
pub mod targets;

pub use driver::{Campaign, Stats, run, run_one};
pub use targets::Target;
