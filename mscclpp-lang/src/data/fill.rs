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

/// One rank's input values at one launch ([`FillPattern::values`]): element `index` is `at(index)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RankValues {
    key: u64,
    lo: i64,
    span: u64,
}

impl RankValues {
    /// The value of element `index`, an integer of the pattern's range.
    pub(crate) fn at(&self, index: u64) -> i64 {
        self.lo + (mix(self.key ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % self.span) as i64
    }
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

    /// The values of rank `rank`'s input at launch `launch`, with what does not depend on the position computed
    /// once.
    pub(crate) fn values(&self, rank: usize, launch: u32) -> RankValues {
        let (lo, hi) = self.range();
        let key = self.seed ^ mix((rank as u64).wrapping_mul(0x0001_0000_0001) ^ ((launch as u64) << 40) ^ 0x5EED);
        RankValues { key, lo, span: (hi - lo) as u64 }
    }

    /// The value of element `index` of rank `rank`'s input at launch `launch` (1-based; 0 = poison).
    pub fn value(&self, rank: usize, launch: u32, index: u64) -> f64 {
        self.values(rank, launch).at(index) as f64
    }

    /// Fills `out` with the elements `first..` of rank `rank` at launch `launch`; a trailing partial element is
    /// left as is.
    pub fn fill(&self, rank: usize, launch: u32, first: u64, out: &mut [u8]) {
        let values = self.values(rank, launch);
        self.dtype.encode_each(out, |i| values.at(first + i) as f64);
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

    /// The pattern's definition, element by element: what `fill` and `value` must keep producing.
    fn defined(p: &FillPattern, rank: usize, launch: u32, index: u64) -> f64 {
        let (lo, hi) = p.range();
        let h = mix(p.seed
            ^ mix((rank as u64).wrapping_mul(0x0001_0000_0001) ^ ((launch as u64) << 40) ^ 0x5EED)
            ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        (lo + (h % (hi - lo) as u64) as i64) as f64
    }

    #[test]
    fn fills_write_the_defined_values() {
        let mut checked = 0;
        for dtype in DataType::ALL {
            for (world, seed) in [(1, 1), (2, 1), (8, 77)] {
                let p = FillPattern::new(dtype, world, seed);
                for (rank, launch) in [(0, 0), (0, 1), (world - 1, 9)] {
                    let es = dtype.size();
                    // A trailing partial element stays as it was.
                    let mut out = vec![0x3Cu8; 500 * es + es.saturating_sub(1)];
                    p.fill(rank, launch, 1234, &mut out);
                    for i in 0..500u64 {
                        let want = defined(&p, rank, launch, 1234 + i);
                        assert_eq!(p.value(rank, launch, 1234 + i), want);
                        let mut one = vec![0u8; es];
                        dtype.encode(want, &mut one);
                        assert_eq!(&out[i as usize * es..(i as usize + 1) * es], &one[..], "{dtype} element {i}");
                        checked += 1;
                    }
                    assert!(out[500 * es..].iter().all(|&b| b == 0x3C), "{dtype}: the partial element was written");
                }
            }
        }
        assert_eq!(checked, 6 * 3 * 3 * 500);
    }

    #[test]
    fn encoding_writes_each_type_s_little_endian_bytes() {
        use half::{bf16, f16};
        let values = [0.0, -0.0, 1.5, -2.25, 65504.0, 1e9, -1e9, 300.7, f64::NAN, f64::INFINITY, -7.0];
        // Each type's definition: rounding to the float types, integers through i64 (wrapping).
        let defined = |dtype: DataType, v: f64| -> Vec<u8> {
            match dtype {
                DataType::F16 => f16::from_f64(v).to_le_bytes().to_vec(),
                DataType::Bf16 => bf16::from_f64(v).to_le_bytes().to_vec(),
                DataType::F32 => (v as f32).to_le_bytes().to_vec(),
                DataType::I32 => ((v as i64) as i32).to_le_bytes().to_vec(),
                DataType::U32 => ((v as i64) as u32).to_le_bytes().to_vec(),
                DataType::U8 => vec![(v as i64) as u8],
            }
        };
        for dtype in DataType::ALL {
            let es = dtype.size();
            let mut all = vec![0u8; values.len() * es];
            dtype.encode_each(&mut all, |i| values[i as usize]);
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(&all[i * es..(i + 1) * es], &defined(dtype, v)[..], "{dtype} {v}");
                let mut one = vec![0u8; es];
                dtype.encode(v, &mut one);
                assert_eq!(one, defined(dtype, v), "{dtype} {v}");
            }
            // A short buffer gets the element's first byte.
            let mut short = [0u8; 1];
            dtype.encode(-7.0, &mut short);
            assert_eq!(short[0], defined(dtype, -7.0)[0], "{dtype}");
        }
    }

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
