//! Small helpers shared by the algorithms.

/// Buffer alignment of the Simple defaults: 4 bytes (one 32-bit element, two 16-bit ones), so that sizes NCCL
/// accepts for those types split into chunks; the interpreter copies unaligned vector heads and tails.
pub(crate) const SIMPLE_ALIGNMENT: u64 = 4;

/// Buffer alignment of the LL defaults: an LL16 packet carries 8 payload bytes and must start 16-byte aligned.
pub(crate) const LL_ALIGNMENT: u64 = 8;

use mscclpp_lang::prelude::*;

/// A scratch buffer of `n_chunks` chunks on every rank, in rank order.
pub(crate) fn per_rank_scratch<'p, P: ProtocolKind>(
    p: &Program<'p, P>,
    n_chunks: usize,
) -> Result<Vec<Buffer<'p, Scratch>>, ProgramError> {
    (0..p.world_size()).map(|r| p.scratch(r, n_chunks)).collect()
}

/// The peers of `rank` in a world of `n`, ascending.
pub(crate) fn peers(rank: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).filter(move |&q| q != rank)
}

/// One memory channel per peer, as `(peer, channel)`.
pub(crate) type PeerChannels<'p, P> = Vec<(usize, Channel<'p, P, Memory>)>;

/// For rank `r`, a new memory channel to every peer, as `(peer, channel)` in ascending peer order (every rank
/// making them in this order pairs channel `k` from `a` to `b` with channel `k` from `b` to `a`).
pub(crate) fn peer_channels<'p, P: ProtocolKind>(
    p: &Program<'p, P>,
    r: usize,
) -> Result<PeerChannels<'p, P>, ProgramError> {
    peers(r, p.world_size()).map(|q| Ok((q, p.memory_channel(q, r)?))).collect()
}

/// The peers of `rank` in a world of `n`, starting after it: `rank + 1, rank + 2, ...` modulo `n`.
///
/// Programs that visit their peers one at a time with all their thread blocks (read a slice from one peer, then
/// the next; put to one peer, then the next) take this order, so that at every step each rank talks to a
/// different peer and every GPU's links carry one stream each way. In ascending order every rank but rank 0 would
/// start with rank 0, three readers on one GPU's outgoing links at 4 ranks while another GPU's stood idle
/// (docs/algorithms.md, "Four ranks and more").
pub(crate) fn rotated_peers(rank: usize, n: usize) -> impl Iterator<Item = usize> {
    (1..n).map(move |k| (rank + k) % n)
}

/// Where `receiver` keeps what `sender` sends it, among its `n - 1` per-peer scratch slots.
pub(crate) fn slot(sender: usize, receiver: usize) -> usize {
    if sender < receiver { sender } else { sender - 1 }
}

/// The `n - 1` slots of `f` units that rank `r` received into its scratch (buffer `scratch[r]`), one per peer in
/// ascending order: what a staged reduce-scatter reduces with its own slice.
pub(crate) fn received_slots<'p>(
    scratch: &[Buffer<'p, Scratch>],
    r: usize,
    f: usize,
) -> Result<Vec<Chunk<'p, Scratch>>, ProgramError> {
    let mine = scratch.get(r).ok_or_else(|| ProgramError::custom(format!("no scratch buffer for rank {r}")))?;
    peers(r, scratch.len())
        .map(|q| {
            let s = slot(q, r) * f;
            mine.slice(s..s + f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_peers_form_a_permutation_at_every_step() {
        for n in 2..=8 {
            for step in 0..n - 1 {
                let mut targets: Vec<usize> = (0..n).map(|r| rotated_peers(r, n).nth(step).unwrap()).collect();
                assert!((0..n).all(|r| targets[r] != r));
                targets.sort();
                assert_eq!(targets, (0..n).collect::<Vec<_>>(), "n = {n}, step {step}");
            }
            for r in 0..n {
                let mut all: Vec<usize> = rotated_peers(r, n).collect();
                all.sort();
                assert_eq!(all, peers(r, n).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn slots_are_dense_and_distinct() {
        for n in 2..=8 {
            for d in 0..n {
                let mut s: Vec<usize> = peers(d, n).map(|q| slot(q, d)).collect();
                s.sort();
                assert_eq!(s, (0..n - 1).collect::<Vec<_>>());
            }
        }
    }
}
