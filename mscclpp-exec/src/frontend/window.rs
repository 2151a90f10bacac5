//! Which sizes the callers of the frontend (the NCCL-ABI library, `mscclpp.torch`) take rather than hand to NCCL
//! or `torch.distributed`: the tuned table's verdict where this machine has one, else a built-in window. One
//! home for both, so they decide alike.

use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::Collective;
use mscclpp_lang::registry::{self, Request};

/// The window on a machine no tuned table covers: the largest piece (one rank's part: an all-reduce's or
/// broadcast's message, an all-gather's input, a reduce-scatter's output) taken on `world` ranks.
///
/// On 2 and 4 ranks every collective has a program up to 4 MiB pieces whose peers meet only in scratch, which
/// runs zero copy on the caller's buffers; on 2×H200 and 4×H200 these beat NCCL 2.28 at every size up to 4 MiB
/// (results/2026-11-26-4xH200/bench). Above that, and on more ranks, only a measurement of the machine (a tuned
/// table) says where ours win.
pub fn builtin_window(world: usize) -> u64 {
    if world <= 4 { 4 << 20 } else { 256 << 10 }
}

/// The window where this machine's tuned table covers the collective and world size: the table decides size by
/// size ([`table_prefers_fallback`]) up to here.
pub const TABLE_WINDOW: u64 = 1 << 30;

/// The largest piece of `collective` taken on `world` ranks: [`TABLE_WINDOW`] when the installed tuned table was
/// measured for this world size and has rows for the collective (a table that never timed a collective cannot say
/// where ours win), else [`builtin_window`].
pub fn window(collective: Collective, world: usize) -> u64 {
    match registry::tuned_table() {
        Some(t) if t.key.world_size == world && t.rows.iter().any(|r| r.collective == collective) => TABLE_WINDOW,
        _ => builtin_window(world),
    }
}

/// Whether a piece of `piece` bytes of `collective` on `world` ranks is within [`window`]. A piece within the
/// built-in window always is (the table's window is never smaller), so only larger ones look at the tuned table:
/// the small calls of the NCCL-ABI library's hot path take no lock.
pub fn within(collective: Collective, world: usize, piece: u64) -> bool {
    piece <= builtin_window(world) || piece <= window(collective, world)
}

/// The piece of a call with `in_bytes` of input and `out_bytes` of output (the smaller of the two).
pub fn piece(in_bytes: u64, out_bytes: u64) -> u64 {
    in_bytes.min(out_bytes)
}

/// Whether the installed tuned table measured NCCL faster than every program of ours for `collective` with
/// `in_bytes` of input per rank in `dtype` on `world` ranks (its row at or above the size says so).
pub fn table_prefers_fallback(collective: Collective, world: usize, in_bytes: u64, dtype: DataType) -> bool {
    registry::tuned_prefers_nccl(&Request::new(collective, world, in_bytes).dtype(dtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_window_covers_the_zero_copy_programs_up_to_four_ranks() {
        assert_eq!(builtin_window(2), 4 << 20);
        assert_eq!(builtin_window(4), 4 << 20);
        assert_eq!(builtin_window(8), 256 << 10);
        assert_eq!(piece(1024, 4096), 1024, "an all-gather's piece is its input");
        assert_eq!(piece(4096, 1024), 1024, "a reduce-scatter's piece is its output");
        // No table for 8 ranks in this binary's tests: the built-in window's edge.
        assert!(within(Collective::Broadcast, 8, 256 << 10));
        assert!(!within(Collective::Broadcast, 8, (256 << 10) + 1));
    }
}
