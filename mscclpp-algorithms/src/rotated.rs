//! Large messages by writes only, one peer at a time: every thread block of a rank writes to the same peer, peer
//! after peer in the rotated order `r + 1, r + 2, ...` (mod `n`), so at every step the ranks form a permutation
//! and each GPU sends to one peer and receives from one.
//!
//! On 4 H200s (every pair NV18) a GPU that writes to one peer at a time moves 362 GB/s each way, as between 2
//! GPUs, where writing to three peers at once stops at 326 GB/s and reading from them at 316-333
//! (`scripts/diag/exp/nvlink_probe.cu`; docs/algorithms.md, "Four ranks and more"). Thread block `t` of every rank
//! handles slice `t` of every chunk (the same thread-block-group slices on every rank), so it needs only the
//! signals of the peers' thread block `t`: no barrier across thread blocks.

use mscclpp_lang::prelude::*;

use crate::reducescatter::{SyncChannels, closing_round, handshake, one_pass_tbs, sync_channels};
use crate::util::slot;

/// The reduce-scatter half on rank `r`, slices of `f` units: slice `q` of the input into this rank's slot of peer
/// `q`'s `scratch`, peer after peer over `group`; signals and waits; then `dst = input[r] + Σ slots received`,
/// spread over `group`. No handshake: the scratch is doubled (one half per launch parity), so a launch never
/// overwrites what a peer still reduces (as in the staged programs).
fn reduce_scatter_by_writes<'p, D: ChunkKind>(
    p: &Program<'p, Simple>,
    r: usize,
    sync: &SyncChannels<'p>,
    group: &ThreadBlockGroup,
    scratch: &[Buffer<'p, Scratch>],
    f: usize,
    dst: Chunk<'p, D>,
) -> Result<(), ProgramError> {
    let input = p.input(r)?;
    let first = sync.first().ok_or_else(|| ProgramError::custom("a rotated program needs a thread block"))?;
    for (q, ch) in first {
        let s = slot(r, *q) * f;
        ch.put(scratch[*q].slice(s..s + f)?, input.slice(q * f..(q + 1) * f)?, group)?;
    }
    closing_round(p, r, sync)?;
    let received = crate::util::received_slots(scratch, r, f)?;
    p.rank(r)?.reduce(dst, input.slice(r * f..(r + 1) * f)?, &received, group, ReduceOp::Sum)
}

/// Two-shot all-reduce by writes only, one peer at a time: the reduce-scatter half above (through the peers'
/// scratch), then the sum into every peer's output, peer after peer, and a last signal/wait round that tells each
/// peer the sum has landed. No handshake before the all-gather writes: a peer's signal of the first round says it
/// has entered the launch and sent this rank its slice (in place, that part of its buffer may be overwritten).
/// The scratch holds `2 (n - 1) / n` of the message.
#[collective_program(
    name = "allreduce_rotated",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 1 << 20..=1 << 30,
    buffer_mode = "both",
    thread_blocks = [(0, 32), (4 << 20, 64), (16 << 20, 128)],
    tags(default = 1)
)]
pub fn allreduce_rotated(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    allreduce_by_writes(p, false)
}

/// [`allreduce_rotated`] with the reduction fused into the all-gather's first write (`res`): each thread block
/// sums its part of this rank's slice and writes it to the output and to the first peer of the rotation in one
/// pass, so the reduction runs while the link is busy instead of in a pass of its own; the other peers get the
/// sum from the output, one after another.
#[collective_program(
    name = "allreduce_rotated_res",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 1 << 20..=1 << 30,
    buffer_mode = "both",
    thread_blocks = [(0, 32), (4 << 20, 64), (16 << 20, 128)],
    tags(default = 0)
)]
pub fn allreduce_rotated_res(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    allreduce_by_writes(p, true)
}

/// The two rotated all-reduces: with `fuse_first`, the reduction and the write to the first peer are one pass.
fn allreduce_by_writes(p: &mut Program<'_, Simple>, fuse_first: bool) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    p.set_double_scratch(true);
    let n = p.world_size();
    let f = p.input(0)?.len() / n;
    let tbs = one_pass_tbs(n);
    let group = p.tb_group(&tbs)?;
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    for r in 0..n {
        let sync = sync_channels(p, r, tbs.len())?;
        let own = p.output(r)?.slice(r * f..(r + 1) * f)?;
        reduce_scatter_by_writes(p, r, &sync, &group, &scratch, f, own)?;
        // A `nop` keeps the reduction apart from the puts after it: fused with all of them (`res`), it would write
        // to every peer at once. With `fuse_first` the first peer's put joins the reduction and the `nop` follows it.
        for (i, (q, ch)) in sync[0].iter().enumerate() {
            if i == usize::from(fuse_first) {
                for t in &tbs {
                    p.barrier(r, &[*t])?;
                }
            }
            ch.put(p.output(*q)?.slice(r * f..(r + 1) * f)?, own, &group)?;
        }
        closing_round(p, r, &sync)?;
    }
    Ok(())
}

/// Reduce-scatter by writes only, one peer at a time, through the peers' scratch (the first half of
/// [`allreduce_rotated`]), then the local reduction into the output.
#[collective_program(
    name = "reducescatter_rotated",
    collective = "reducescatter",
    world_sizes = 2..=8,
    message_sizes = 1 << 20..=1 << 30,
    buffer_mode = "both",
    thread_blocks = [(0, 32), (4 << 20, 64), (16 << 20, 128)],
    tags(default = 1)
)]
pub fn reducescatter_rotated(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    p.set_double_scratch(true);
    let n = p.world_size();
    let f = p.output(0)?.len();
    let tbs = one_pass_tbs(n);
    let group = p.tb_group(&tbs)?;
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    for r in 0..n {
        let sync = sync_channels(p, r, tbs.len())?;
        reduce_scatter_by_writes(p, r, &sync, &group, &scratch, f, p.output(r)?.all()?)?;
    }
    Ok(())
}

/// All-gather by writes only, one peer at a time: a handshake (every peer has entered the launch, so its output
/// may be written), this rank's chunk into every peer's output, peer after peer, then a signal/wait round that
/// tells each peer its chunk has landed. Out of place, the rank's own chunk is copied into its output first.
#[collective_program(
    name = "allgather_rotated",
    collective = "allgather",
    world_sizes = 2..=8,
    message_sizes = 1 << 20..=1 << 30,
    buffer_mode = "both",
    thread_blocks = [(0, 32), (4 << 20, 64), (16 << 20, 128)],
    tags(default = 1)
)]
pub fn allgather_rotated(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let f = p.input(0)?.len();
    let tbs = one_pass_tbs(n);
    let group = p.tb_group(&tbs)?;
    for r in 0..n {
        let sync = sync_channels(p, r, tbs.len())?;
        let mine = p.input(r)?.all()?;
        if !p.inplace() {
            p.rank(r)?.copy(p.output(r)?.slice(r * f..(r + 1) * f)?, mine, &group)?;
        }
        handshake(p, r, &sync)?;
        for (q, ch) in &sync[0] {
            ch.put(p.output(*q)?.slice(r * f..(r + 1) * f)?, mine, &group)?;
        }
        closing_round(p, r, &sync)?;
    }
    Ok(())
}
