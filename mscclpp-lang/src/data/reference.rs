//! Buffer sizes, in-place placement and the reference result of each collective.

use super::dtype::DataType;
use super::fill::{FillPattern, RankValues};
use super::reduce::reduce_into;
use crate::plan::{Collective, ReduceOp};

/// Input and output sizes in bytes of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferSizes {
    /// Input bytes.
    pub input: u64,
    /// Output bytes.
    pub output: u64,
    /// Number of ranks.
    pub world: usize,
}

impl BufferSizes {
    /// Sizes of a standard collective for message size `size` (the output of an allgather, the input of every
    /// other collective, as the executor's size check counts it). `None` for `test`/`custom` and for sizes that
    /// do not split over the ranks.
    pub fn for_collective(collective: Collective, world: usize, size: u64) -> Option<BufferSizes> {
        let n = world.max(1) as u64;
        let (input, output) = match collective {
            Collective::AllGather => {
                if !size.is_multiple_of(n) {
                    return None;
                }
                (size / n, size)
            }
            Collective::ReduceScatter => {
                if !size.is_multiple_of(n) {
                    return None;
                }
                (size, size / n)
            }
            Collective::AllReduce | Collective::AllToAll | Collective::SendRecv | Collective::Broadcast => (size, size),
            Collective::Test | Collective::Custom => return None,
        };
        Some(BufferSizes { input, output, world })
    }

    /// Whether `input`/`output` have the proportions the collective needs.
    pub fn fits(&self, collective: Collective) -> bool {
        let n = self.world.max(1) as u64;
        match collective {
            Collective::AllGather => self.input.checked_mul(n) == Some(self.output),
            Collective::ReduceScatter => self.output.checked_mul(n) == Some(self.input),
            Collective::AllReduce | Collective::AllToAll | Collective::SendRecv | Collective::Broadcast => {
                self.input == self.output
            }
            Collective::Test | Collective::Custom => true,
        }
    }
}

/// Where the input and output buffers of one rank lie, as the executor test allocates them: out of
/// place, two allocations; in place, one allocation holding both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Whether input and output share one allocation.
    pub shared: bool,
    /// Bytes of the input allocation (of the shared allocation when in place).
    pub input_alloc: u64,
    /// Bytes of the output allocation (equal to `input_alloc` when in place).
    pub output_alloc: u64,
    /// Offset of the input inside its allocation (the executor's `constSrcOffset`).
    pub input_offset: u64,
    /// Offset of the output inside its allocation (the executor's `constDstOffset`).
    pub output_offset: u64,
}

impl Placement {
    /// The placement of rank `rank`'s buffers.
    ///
    /// In place: an allgather's input is the rank's slice of the output; a reducescatter's output is the rank's
    /// slice of the input; otherwise input and output are the same bytes (the larger size).
    pub fn new(collective: Collective, inplace: bool, rank: usize, sizes: BufferSizes) -> Placement {
        if !inplace {
            return Placement {
                shared: false,
                input_alloc: sizes.input,
                output_alloc: sizes.output,
                input_offset: 0,
                output_offset: 0,
            };
        }
        let (alloc, input_offset, output_offset) = match collective {
            Collective::AllGather if sizes.output >= sizes.input * (rank as u64 + 1) => {
                (sizes.output, sizes.input * rank as u64, 0)
            }
            Collective::ReduceScatter if sizes.input >= sizes.output * (rank as u64 + 1) => {
                (sizes.input, 0, sizes.output * rank as u64)
            }
            _ => (sizes.input.max(sizes.output), 0, 0),
        };
        Placement { shared: true, input_alloc: alloc, output_alloc: alloc, input_offset, output_offset }
    }
}

/// For an in-place allgather, the byte range of the output that is the rank's input; `None` otherwise.
pub fn input_region_in_output(collective: Collective, rank: usize, sizes: BufferSizes) -> Option<(u64, u64)> {
    (collective == Collective::AllGather).then(|| (sizes.input * rank as u64, sizes.input))
}

/// The output rank `rank` must hold after launch `launch` when every rank's input was filled with `pattern`.
///
/// `None` for `test` and `custom` (their result is whatever the operations imply). `root` is the broadcast root.
/// Sendrecv sends each rank's input to the next rank: rank r receives rank r-1's input.
pub fn expected_output(
    collective: Collective,
    op: ReduceOp,
    pattern: &FillPattern,
    rank: usize,
    launch: u32,
    sizes: BufferSizes,
    root: usize,
) -> Option<Vec<u8>> {
    expected_output_split(collective, op, pattern, rank, launch, sizes, root, |region, fill| fill(0, region))
}

/// A region of an expected output and the function that computes any element-aligned piece of it:
/// `fill(first, piece)` writes the region's elements from `first` on into `piece`.
pub type RegionFill<'a> = &'a (dyn Fn(u64, &mut [u8]) + Sync);

/// [`expected_output`], computed region by region as the caller splits the work: for every region of the output
/// (the whole output for a reduction, one piece per source rank for the copying collectives), `split(region,
/// fill)` must call `fill(first, piece)` for element-aligned pieces that cover `region`, `first` being the index
/// of the piece's first element inside the region. The pieces may be computed in any order and on any threads;
/// the result is the same bytes as [`expected_output`].
#[allow(clippy::too_many_arguments)]
pub fn expected_output_split(
    collective: Collective,
    op: ReduceOp,
    pattern: &FillPattern,
    rank: usize,
    launch: u32,
    sizes: BufferSizes,
    root: usize,
    mut split: impl FnMut(&mut [u8], RegionFill<'_>),
) -> Option<Vec<u8>> {
    let n = sizes.world.max(1);
    let mut out = vec![0u8; sizes.output as usize];
    if let Some(first) = reduction_start(collective, rank, sizes, pattern.dtype) {
        split(&mut out, &|e, piece| reduce_ranks(pattern, op, launch, n, first + e, piece));
        return Some(out);
    }
    for slot in copy_slots(collective, rank, sizes, pattern.dtype, root)? {
        split(&mut out[slot.bytes], &|e, piece| pattern.fill(slot.source, launch, slot.first + e, piece));
    }
    Some(out)
}

/// One piece of a collective's expected output that is a plain copy of some rank's fill pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CopySlot {
    /// The rank whose input pattern lands here.
    source: usize,
    /// The element of the source's pattern where the piece starts.
    first: u64,
    /// The bytes of the output the piece covers.
    bytes: std::ops::Range<usize>,
}

/// For the collectives whose expected output copies fill patterns (allgather, alltoall, sendrecv, broadcast), the
/// pieces of rank `rank`'s output, in order. `None` for the reductions (see [`reduction_start`]) and for
/// `test`/`custom`, which have no reference.
fn copy_slots(
    collective: Collective,
    rank: usize,
    sizes: BufferSizes,
    dtype: DataType,
    root: usize,
) -> Option<Vec<CopySlot>> {
    let n = sizes.world.max(1);
    let es = dtype.size() as u64;
    let out = sizes.output as usize;
    // Consecutive slots of `per` bytes, one per source rank (the last one cut at the end of the output).
    let tiled = |per: usize, first: &dyn Fn(usize) -> u64| -> Vec<CopySlot> {
        let per = per.max(1);
        (0..n)
            .map(|src| (src, (src * per).min(out)..((src + 1) * per).min(out)))
            .filter(|(_, r)| !r.is_empty())
            .map(|(source, bytes)| CopySlot { source, first: first(source), bytes })
            .collect()
    };
    let whole = |source: usize| vec![CopySlot { source, first: 0, bytes: 0..out }];
    Some(match collective {
        Collective::AllGather => tiled(sizes.input as usize, &|_| 0),
        Collective::AllToAll => {
            let per = (out / n).max(1);
            tiled(per, &|_| per as u64 / es * rank as u64)
        }
        Collective::SendRecv => whole((rank + n - 1) % n),
        Collective::Broadcast => whole(root % n),
        Collective::AllReduce | Collective::ReduceScatter | Collective::Test | Collective::Custom => return None,
    })
}

/// For a reduction (allreduce, reducescatter), the element of the fill pattern where rank `rank`'s expected output
/// starts: 0 for an allreduce, the rank's slice for a reducescatter. `None` for the other collectives.
fn reduction_start(collective: Collective, rank: usize, sizes: BufferSizes, dtype: DataType) -> Option<u64> {
    match collective {
        Collective::AllReduce => Some(0),
        Collective::ReduceScatter => Some(sizes.output / dtype.size() as u64 * rank as u64),
        _ => None,
    }
}

/// Writes into `out` the reduction with `op`, over ranks `0..world`, of the fill pattern of launch `launch` from
/// element `first` on: the expected output of a reduction (see [`reduction_start`]), or any piece of it.
fn reduce_ranks(pattern: &FillPattern, op: ReduceOp, launch: u32, world: usize, first: u64, out: &mut [u8]) {
    if world <= pattern.world {
        // Over at most the pattern's ranks every partial result is exact in the type (the pattern's range), so
        // reducing the integer values and writing each result once gives the bytes that reducing the written
        // inputs rank by rank gives (`reduce_ranks_stepwise`), several times faster.
        let ranks: Vec<RankValues> = (0..world).map(|r| pattern.values(r, launch)).collect();
        let combine = |a: i64, b: i64| match op {
            ReduceOp::Sum => a + b,
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
        };
        pattern
            .dtype
            .encode_each(out, |i| ranks.iter().map(|v| v.at(first + i)).reduce(combine).unwrap_or_default() as f64);
        return;
    }
    reduce_ranks_stepwise(pattern, op, launch, world, first, out);
}

/// [`reduce_ranks`] as the GPU computes it: rank 0's input, then each other rank's reduced into it in the type.
fn reduce_ranks_stepwise(pattern: &FillPattern, op: ReduceOp, launch: u32, world: usize, first: u64, out: &mut [u8]) {
    pattern.fill(0, launch, first, out);
    let mut tmp = vec![0u8; out.len()];
    for r in 1..world {
        pattern.fill(r, launch, first, &mut tmp);
        reduce_into(pattern.dtype, op, out, &tmp);
    }
}

/// Index of the first element where `got` differs from `want` (bitwise), comparing whole elements of `dtype`.
pub fn first_mismatch(dtype: DataType, want: &[u8], got: &[u8]) -> Option<usize> {
    if want == got {
        return None;
    }
    let es = dtype.size();
    let n = want.len().min(got.len());
    let start = want[..n].iter().zip(&got[..n]).position(|(a, b)| a != b).unwrap_or(n);
    Some(start / es)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reduction_of_values_equals_the_stepwise_one() {
        // Every type, operation and rank count up to the pattern's, a ragged piece not starting at 0: the bytes
        // must be the ones the stepwise reduction in the type writes.
        let mut cases = 0;
        for dtype in DataType::ALL {
            for op in [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max] {
                for pattern_world in [1, 2, 3, 8] {
                    let pattern = FillPattern::new(dtype, pattern_world, 5);
                    for world in 1..=pattern_world {
                        let bytes = 3000 * dtype.size() + 1;
                        let (mut fast, mut stepwise) = (vec![0xA5u8; bytes], vec![0xA5u8; bytes]);
                        reduce_ranks(&pattern, op, 4, world, 777, &mut fast);
                        reduce_ranks_stepwise(&pattern, op, 4, world, 777, &mut stepwise);
                        assert!(fast == stepwise, "{dtype} {op:?} world {world} of {pattern_world}");
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 6 * 3 * 14);
    }

    #[test]
    fn placements() {
        let s = BufferSizes::for_collective(Collective::AllGather, 4, 4096).unwrap();
        let p = Placement::new(Collective::AllGather, true, 2, s);
        assert_eq!((p.input_alloc, p.input_offset, p.output_offset), (4096, 2048, 0));
        let s = BufferSizes::for_collective(Collective::ReduceScatter, 4, 4096).unwrap();
        let p = Placement::new(Collective::ReduceScatter, true, 3, s);
        assert_eq!((p.input_alloc, p.input_offset, p.output_offset), (4096, 0, 3072));
    }

    #[test]
    fn split_reference_equals_the_whole_one() {
        let collectives = [
            Collective::AllReduce,
            Collective::ReduceScatter,
            Collective::AllGather,
            Collective::AllToAll,
            Collective::Broadcast,
            Collective::SendRecv,
        ];
        let pattern = FillPattern::new(DataType::F16, 3, 5);
        let es = DataType::F16.size();
        let mut pieces = 0;
        for collective in collectives {
            let sizes = BufferSizes::for_collective(collective, 3, 3 * 1000).unwrap();
            for rank in 0..3 {
                let whole = expected_output(collective, ReduceOp::Max, &pattern, rank, 2, sizes, 1);
                assert!(whole.is_some(), "{collective:?}");
                // Pieces of 7 elements, computed back to front.
                let split = expected_output_split(collective, ReduceOp::Max, &pattern, rank, 2, sizes, 1, |r, fill| {
                    let chunks: Vec<(usize, &mut [u8])> = r.chunks_mut(7 * es).enumerate().collect();
                    for (i, piece) in chunks.into_iter().rev() {
                        pieces += 1;
                        fill((i * 7) as u64, piece);
                    }
                });
                assert_eq!(split, whole, "{collective:?} rank {rank}");
            }
        }
        assert!(pieces > 100);
    }

    #[test]
    fn alltoall_transposes() {
        let pat = FillPattern::new(DataType::I32, 2, 3);
        let s = BufferSizes::for_collective(Collective::AllToAll, 2, 16).unwrap();
        let out = expected_output(Collective::AllToAll, ReduceOp::Sum, &pat, 1, 1, s, 0).unwrap();
        assert_eq!(DataType::I32.decode(&out[0..4]), pat.value(0, 1, 2));
        assert_eq!(DataType::I32.decode(&out[8..12]), pat.value(1, 1, 2));
    }
}
