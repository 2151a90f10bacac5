//! The CPU side of mscclpp: everything that needs no GPU.
//!
//! - [`plan`]: the MSCCL++ JSON execution-plan schema, parsing with located errors, validation, chunk math.

pub mod plan;
pub mod prelude;
pub mod program;
