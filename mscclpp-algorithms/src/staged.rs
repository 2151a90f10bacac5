//! All-gather and reduce-scatter for the middle sizes, staged through the peers' scratch: one signal hop per
//! launch instead of two.
//!
//! The programs that write straight into a peer's output (or read its input) must first hear that the peer has
//! entered the launch, since until then the caller may still use those buffers: a handshake, then the data, then
//! a signal, two flag hops per launch. The executor owns the scratch, so these programs write into it at once.
//! The scratch is doubled (one half per launch parity), so a launch never overwrites what a peer still reads: a
//! rank can reach launch `L + 2`, which writes the half of launch `L` again, only after it has received the
//! peers' signals of launch `L + 1`, which each peer sends after it has finished launch `L`. What they pay
//! instead is a local copy (or reduction) out of the scratch, which is cheap next to a flag hop up to a few MiB.

use mscclpp_lang::prelude::*;

use crate::util::{peer_channels, slot};

/// All-pairs all-gather staged through scratch: each rank puts its chunk into a slot of every peer's scratch and
/// signals, then waits for each peer's chunk and copies it into its output; one thread block per peer (and one
/// more, out of place, that copies the rank's own chunk into its output).
#[collective_program(
    name = "allgather_staged",
    collective = "allgather",
    world_sizes = 2..=8,
    message_sizes = 64 * 1024..=8 << 20,
    buffer_mode = "both",
    thread_blocks = [(0, 4), (512 * 1024, 16), (2 << 20, 32)],
    tags(default = 1)
)]
pub fn allgather_staged(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    p.set_double_scratch(true);
    let n = p.world_size();
    let f = p.input(0)?.len();
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    for r in 0..n {
        let mine = p.input(r)?.all()?;
        let out = p.output(r)?;
        if !p.inplace() {
            p.rank(r)?.copy(out.slice(r * f..(r + 1) * f)?, mine, n - 1)?;
        }
        let chans = peer_channels(p, r)?;
        for (t, (q, ch)) in chans.iter().enumerate() {
            let s = slot(r, *q) * f;
            ch.put(scratch[*q].slice(s..s + f)?, mine, t)?;
            ch.signal(t, SyncType::Before)?;
        }
        for (t, (q, ch)) in chans.iter().enumerate() {
            ch.wait(t, SyncType::After)?;
            let s = slot(*q, r) * f;
            p.rank(r)?.copy(out.slice(q * f..(q + 1) * f)?, scratch[r].slice(s..s + f)?, t)?;
        }
    }
    Ok(())
}

/// Reduce-scatter staged through scratch: each rank puts slice `q` of its input into a slot of peer `q`'s scratch
/// and signals (one thread block per peer), waits for every peer, then reduces its own slice with the slots it
/// received, spread over all its thread blocks. Only writes cross the link, which need fewer thread blocks than
/// the reads of [`crate::reducescatter`] to reach the same bandwidth.
#[collective_program(
    name = "reducescatter_staged",
    collective = "reducescatter",
    world_sizes = 2..=8,
    message_sizes = 64 * 1024..=16 << 20,
    buffer_mode = "both",
    thread_blocks = [(0, 4), (512 * 1024, 16), (4 << 20, 32)],
    tags(default = 1)
)]
pub fn reducescatter_staged(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    p.set_double_scratch(true);
    let n = p.world_size();
    let f = p.output(0)?.len();
    let tbs: Vec<usize> = (0..n - 1).collect();
    let group = p.tb_group(&tbs)?;
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    for r in 0..n {
        staged_reduce_scatter(p, r, &scratch, f, &group, p.output(r)?.all()?)?;
    }
    Ok(())
}

/// The reduce-scatter of the staged programs, on rank `r` with slices of `f` units: it puts slice `q` of its input
/// into its slot of peer `q`'s `scratch` and signals (thread block `t` serves the `t`-th peer), waits for every
/// peer, then reduces slice `r` of its input with the slots it received into `dst`, spread over `group` (whose
/// thread blocks are those serving the peers).
fn staged_reduce_scatter<'p, D: ChunkKind>(
    p: &Program<'p, Simple>,
    r: usize,
    scratch: &[Buffer<'p, Scratch>],
    f: usize,
    group: &ThreadBlockGroup,
    dst: Chunk<'p, D>,
) -> Result<(), ProgramError> {
    let input = p.input(r)?;
    let chans = peer_channels(p, r)?;
    for (t, (q, ch)) in chans.iter().enumerate() {
        let s = slot(r, *q) * f;
        ch.put(scratch[*q].slice(s..s + f)?, input.slice(q * f..(q + 1) * f)?, t)?;
        ch.signal(t, SyncType::Before)?;
    }
    for (t, (_, ch)) in chans.iter().enumerate() {
        ch.wait(t, SyncType::None)?;
    }
    // Each thread block has seen its peer's signal; the barrier makes every peer's slot visible to all.
    p.barrier(r, group.tbs())?;
    let received = crate::util::received_slots(scratch, r, f)?;
    p.rank(r)?.reduce(dst, input.slice(r * f..(r + 1) * f)?, &received, group, ReduceOp::Sum)
}

/// Two-shot all-reduce by writes only, staged through the peers' scratch: rank `r` puts slice `q` of its input
/// into a slot of peer `q`'s scratch and signals (one thread block per peer, all at once); once every peer's slice
/// has arrived it reduces its own slice with them and, in the same pass, writes the sum into its output and into
/// every peer's output (`res`), spread over all its thread blocks; a last signal/wait round tells each peer that
/// the sum has landed.
///
/// Nothing crosses a link by a load, and every phase sends to every peer at once, so all links carry data both
/// ways the whole time: at 4 ranks and more, where peer reads of the read-based two-shots queue up behind each
/// other, writes keep up with the links (docs/algorithms.md, "Four ranks and more"). The scratch is doubled as in
/// [`reducescatter_staged`]; it holds `2 (n - 1) / n` of the message, so the program stops at 256 MiB.
///
/// No handshake is needed before the all-gather writes: a peer's signal of the first phase says that it has
/// entered the launch (its output may be written) and that its input slice for this rank has been sent (in place,
/// that slice of its buffer may be overwritten).
#[collective_program(
    name = "allreduce_staged",
    collective = "allreduce",
    world_sizes = 2..=8,
    message_sizes = 1 << 20..=256 << 20,
    buffer_mode = "both",
    // The tuner's choices on 2 and 4 H200s: 64 thread blocks per rank from 2 MiB, 128 (96 at 4 ranks) from 4 MiB.
    thread_blocks = [(0, 32), (2 << 20, 64), (4 << 20, 128)],
    tags(default = 1)
)]
pub fn allreduce_staged(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    p.set_double_scratch(true);
    let n = p.world_size();
    let f = p.input(0)?.len() / n;
    let tbs: Vec<usize> = (0..n - 1).collect();
    let group = p.tb_group(&tbs)?;
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    for r in 0..n {
        let own = p.output(r)?.slice(r * f..(r + 1) * f)?;
        staged_reduce_scatter(p, r, &scratch, f, &group, own)?;
        // All-gather: the sum into every peer's output, fused with the reduction above into one `res`; then each
        // thread block tells every peer that its part has landed, and waits for theirs.
        let sync = crate::reducescatter::sync_channels(p, r, tbs.len())?;
        for (q, ch) in &sync[0] {
            ch.put(p.output(*q)?.slice(r * f..(r + 1) * f)?, own, &group)?;
        }
        for (t, chs) in sync.iter().enumerate() {
            for (_, ch) in chs {
                ch.signal(t, SyncType::Before)?;
            }
            for (_, ch) in chs {
                ch.wait(t, SyncType::None)?;
            }
        }
    }
    Ok(())
}

/// Chunks per slice of [`reducescatter_pipelined`]: the reduction of one chunk overlaps the puts of the next, so
/// only the last chunk's reduction adds to the time the link is busy (4, 12 and 16 measured no faster on 2 × H200).
const PIPELINE_CHUNKS: usize = 8;

/// Reduce-scatter staged through scratch and pipelined, for large messages: one thread block per peer puts slice
/// `q` of this rank's input into its slot of peer `q`'s scratch chunk by chunk, signalling after each chunk, while
/// one more thread block waits for each chunk from every peer and reduces it with this rank's own slice into the
/// output. The link never waits for a reduction (they run on another thread block), and a reduction waits only
/// for its own chunk.
///
/// On 2 × H200 it moves 345 GB/s (bus bandwidth) at 256 MiB against 325 for [`crate::reducescatter`]'s peer reads
/// (64 instances of 512 or 1024 threads); below 16 MiB the per-chunk signals cost more than they hide. Chosen
/// through tuned tables only (`default = 0`): its 4-rank figures are not measured yet.
///
/// The scratch is doubled as in [`reducescatter_staged`] (it holds `(n - 1) / n` of the message per launch
/// parity), so the program stops at 1 GiB.
#[collective_program(
    name = "reducescatter_pipelined",
    collective = "reducescatter",
    world_sizes = 2..=8,
    message_sizes = 1 << 20..=1 << 30,
    buffer_mode = "both",
    thread_blocks = [(0, 16), (16 << 20, 64)],
    tags(default = 0)
)]
pub fn reducescatter_pipelined(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_chunk_factor(PIPELINE_CHUNKS)?;
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    p.set_double_scratch(true);
    let n = p.world_size();
    let f = p.output(0)?.len();
    let g = f / PIPELINE_CHUNKS;
    let reducer = n - 1;
    let group = p.tb_group(&[reducer])?;
    let scratch = crate::util::per_rank_scratch(p, (n - 1) * f)?;
    for r in 0..n {
        let input = p.input(r)?;
        let output = p.output(r)?.all()?;
        let chans = peer_channels(p, r)?;
        // Thread block `t` puts the `t`-th peer's slice, a signal after each chunk.
        for (t, (q, ch)) in chans.iter().enumerate() {
            let s = slot(r, *q) * f;
            for c in 0..PIPELINE_CHUNKS {
                let (d, o) = (s + c * g, q * f + c * g);
                ch.put(scratch[*q].slice(d..d + g)?, input.slice(o..o + g)?, t)?;
                ch.signal(t, SyncType::Before)?;
            }
        }
        // The reducer takes chunk `c` once every peer's signal for it has come.
        let received = crate::util::received_slots(&scratch, r, f)?;
        for c in 0..PIPELINE_CHUNKS {
            let w = c * g..(c + 1) * g;
            for (i, (_, ch)) in chans.iter().enumerate() {
                ch.wait(reducer, if i + 1 == chans.len() { SyncType::After } else { SyncType::None })?;
            }
            let slots = received.iter().map(|s| s.slice(w.clone())).collect::<Result<Vec<_>, _>>()?;
            let mine = r * f + w.start..r * f + w.end;
            p.rank(r)?.reduce(output.slice(w.clone())?, input.slice(mine)?, &slots, &group, ReduceOp::Sum)?;
        }
    }
    Ok(())
}
