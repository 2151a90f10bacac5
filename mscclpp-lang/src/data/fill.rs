//! Deterministic fill patterns: every element value depends on the rank, the launch and the position.

use super::dtype::DataType;

/// A small seeded pseudo-random generator (SplitMix64); deterministic on every platform.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state)
    }
    /// A value in `0..n` (`n > 0`; 0 gives 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The values a host writes into input buffers before each launch.
///
/// Values are integers small enough that any reduction (sum, min, max) over `world` ranks is exact in the element
/// type, so results can be compared bit for bit and a wrong sum can be explained by the contributions it misses
/// or counts twice. Launch 0 denotes the "poison" a buffer holds before anything wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillPattern {
    /// Element type.
    pub dtype: DataType,
    /// Number of ranks whose values may be summed.
    pub world: usize,
    /// Seed.
    pub seed: u64,
}

impl FillPattern {
    /// A pattern for `world` ranks.
    pub fn new(dtype: DataType, world: usize, seed: u64) -> Self {
        FillPattern { dtype, world: world.max(1), seed }
    }

    /// Half-open value range `[lo, hi)` so that sums over `world` ranks stay exact.
    fn range(&self) -> (i64, i64) {
        let limit = self.dtype.exact_limit() as i64;
        let per_rank = (limit / self.world as i64).max(2);
        match self.dtype {
            DataType::U32 | DataType::U8 => (0, per_rank),
            _ => (-per_rank / 2, per_rank / 2),
        }
    }

    /// The value of element `index` of rank `rank`'s input at launch `launch` (1-based; 0 = poison).
    pub fn value(&self, rank: usize, launch: u32, index: u64) -> f64 {
        let (lo, hi) = self.range();
        let h = mix(self.seed
            ^ mix((rank as u64).wrapping_mul(0x0001_0000_0001) ^ ((launch as u64) << 40) ^ 0x5EED)
            ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        (lo + (h % (hi - lo) as u64) as i64) as f64
    }

    /// Fills `out` with the elements `first..` of rank `rank` at launch `launch`; a trailing partial element is
    /// left as is.
    pub fn fill(&self, rank: usize, launch: u32, first: u64, out: &mut [u8]) {
        let es = self.dtype.size();
        for (i, chunk) in out.chunks_exact_mut(es).enumerate() {
            self.dtype.encode(self.value(rank, launch, first + i as u64), chunk);
        }
    }

    /// A freshly allocated buffer of `bytes` bytes filled like [`FillPattern::fill`].
    pub fn buffer(&self, rank: usize, launch: u32, first: u64, bytes: usize) -> Vec<u8> {
        let mut v = vec![0u8; bytes];
        self.fill(rank, launch, first, &mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_of_all_ranks_are_exact() {
        for t in DataType::ALL {
            let p = FillPattern::new(t, 8, 1);
            for i in 0..200 {
                let s: f64 = (0..8).map(|r| p.value(r, 3, i)).sum();
                let mut b = vec![0u8; t.size()];
                t.encode(s, &mut b);
                assert_eq!(t.decode(&b), s, "{t}");
            }
        }
    }

    #[test]
    fn values_depend_on_rank_launch_and_position() {
        let p = FillPattern::new(DataType::F32, 4, 9);
        let a: Vec<f64> = (0..16).map(|i| p.value(0, 1, i)).collect();
        let b: Vec<f64> = (0..16).map(|i| p.value(1, 1, i)).collect();
        let c: Vec<f64> = (0..16).map(|i| p.value(0, 2, i)).collect();
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert!(a.windows(2).any(|w| w[0] != w[1]));
    }
}
