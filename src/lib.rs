//! mscclpp: GPU-driven collective communication in Rust.
pub use mscclpp_lang as lang;
