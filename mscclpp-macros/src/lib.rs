//! The `#[collective_program]` attribute of mscclpp.
//!
//! It marks a function that builds a collective program with the eDSL, checks the function's signature, keeps the
//! function exactly as written (so it stays callable and the IDE sees real Rust), and registers it, with its
//! metadata, in the plan registry of `mscclpp_lang::registry`.
//!
//! ```ignore
//! use mscclpp_lang::prelude::*;
//!
//! /// Every rank writes its chunk into every peer's output.
//! #[collective_program(
//!     name = "allgather_allpairs",
//!     collective = "allgather",
//!     world_sizes = 2..=8,
//!     message_sizes = 0..,
//!     buffer_mode = "both",
//!     tags(default = 1),
//! )]
//! fn allgather_allpairs(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
//!     // ...
//!     Ok(())
//! }
//! ```
//!
//! # Keys
//!
//! | key | value | default |
//! |---|---|---|
//! | `name` | string: the program's registry name | the function's name |
//! | `collective` | `"allgather"`, `"allreduce"`, `"reducescatter"`, `"alltoall"`, `"sendrecv"`, `"broadcast"`, `"test"`, `"custom"` | required |
//! | `world_sizes` | `N`, `A..=B`, `A..B` or `A..` | required |
//! | `ranks_per_node` | `"world"` (one node), `N`, `A..=B`, `A..B` or `A..` | `"world"` |
//! | `message_sizes` | byte range, as for `world_sizes`; integer arithmetic (`64 * 1024`, `1 << 20`) is allowed | `0..` |
//! | `buffer_mode` | `"in_place"`, `"out_of_place"` or `"both"` | `"both"` |
//! | `protocol` | `"Simple"` or `"LL"`; must agree with the signature | taken from the signature |
//! | `tags(k = v, ...)` | integer tags, e.g. `tags(default = 1)` | none |
//! | `description` | string | the first paragraph of the doc comment |
//! | `thread_blocks` | `[(from_bytes, blocks), ...]`: thread blocks per rank wanted from each message size on; the registry turns it into a number of instances (see `ProgramMeta::tuned_target`) | `[(0, 1)]`: one instance |
//! | `check` | `true` or `false`: generate the world-size test described below | `true` |
//!
//! # The generated test
//!
//! Beside the function the attribute generates a `#[cfg(test)] #[test]` that calls
//! `mscclpp_lang::registry::check_program(name)`: it builds the program for every declared world size, in and out
//! of place as `buffer_mode` allows, runs the CPU verifier (two schedules, smallest message) on the smallest and the
//! largest world size, and fails naming each (world size, placement) that does not build or verify. A crate of
//! programs gets one such test per program under `cargo test`, run in parallel. `check = false` leaves the test out
//! (e.g. for a program that counts its builds, or one that is broken on purpose).
//!
//! The function must be a free function of the form
//! `fn NAME(p: &mut Program<'_, Simple | LL>) -> Result<(), ProgramError>`; anything else is a compile error that
//! points at the offending part of the signature.

#![forbid(unsafe_code)]

use proc_macro::TokenStream;

mod eval;
mod expand;
mod meta;
mod signature;

/// Marks a function as a collective program and registers it in `mscclpp_lang::registry`.
///
/// See the [crate documentation](crate) for the keys. The function itself is emitted unchanged.
#[proc_macro_attribute]
pub fn collective_program(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::collective_program(attr.into(), item.into()).into()
}
