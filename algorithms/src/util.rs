//! Small helpers shared by the algorithms.

/// Buffer alignment of the Simple defaults: 4 bytes (one 32-bit element, two 16-bit ones), so that sizes NCCL
/// accepts for those types split into chunks; the interpreter copies unaligned vector heads and tails.
pub(crate) const SIMPLE_ALIGNMENT: u64 = 4;

/// Buffer alignment of the LL defaults: an LL16 packet carries 8 payload bytes and must start 16-byte aligned.
pub(crate) const LL_ALIGNMENT: u64 = 8;

/// The peers of `rank` in a world of `n`, ascending.
pub(crate) fn peers(rank: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).filter(move |&q| q != rank)
}

/// Where `receiver` keeps what `sender` sends it, among its `n - 1` per-peer scratch slots.
pub(crate) fn slot(sender: usize, receiver: usize) -> usize {
    if sender < receiver { sender } else { sender - 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

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
