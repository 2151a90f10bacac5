//! What the autotuner measures with: the buffers of one message size with the input kept on the device and the
//! expected output kept on the host, the correctness check, and the CUDA-graph timing.

use std::time::Duration;

use mscclpp_lang::data::{BufferSizes, DataType, FillPattern, Placement, expected_output_split, first_mismatch};
use mscclpp_lang::plan::{Collective, ReduceOp};
use mscclpp_sys::driver::{DevicePtr, Event, Graph, Stream, pace};

use crate::{Communicator, GpuBuffer, Result};

/// Longest wait for one timed phase of the GPU.
pub(crate) const WAIT: Duration = Duration::from_secs(120);

/// The buffers of one collective at one size, the input as filled (a device copy) and the expected output.
pub(crate) struct Case {
    input: GpuBuffer,
    output: Option<GpuBuffer>,
    staged: GpuBuffer,
    placement: Placement,
    pub(crate) sizes: BufferSizes,
    expected: Option<Vec<u8>>,
    dtype: DataType,
}

impl Case {
    /// Allocates the buffers, fills the input with `pattern` (launch 0) and computes the expected output.
    pub(crate) fn new(
        comm: &Communicator,
        collective: Collective,
        sizes: BufferSizes,
        inplace: bool,
        pattern: &FillPattern,
    ) -> Result<Case> {
        let rank = comm.rank();
        let placement = Placement::new(collective, inplace, rank, sizes);
        let device = comm.device();
        let input = GpuBuffer::new(device, placement.input_alloc.max(16) as usize)?;
        let output = if placement.shared {
            None
        } else {
            Some(GpuBuffer::new(device, placement.output_alloc.max(16) as usize)?)
        };
        let staged = GpuBuffer::new(device, sizes.input.max(16) as usize)?;
        staged.write(0, &par_fill(pattern, rank, 0, 0, sizes.input as usize))?;
        let expected = par_expected(collective, ReduceOp::Sum, pattern, rank, 0, sizes, 0);
        Ok(Case { input, output, staged, placement, sizes, expected, dtype: pattern.dtype })
    }

    fn output_buffer(&self) -> &GpuBuffer {
        self.output.as_ref().unwrap_or(&self.input)
    }

    /// Device address of the input.
    pub(crate) fn input_ptr(&self) -> DevicePtr {
        self.input.ptr() + self.placement.input_offset
    }

    /// Device address of the output.
    pub(crate) fn output_ptr(&self) -> DevicePtr {
        self.output_buffer().ptr() + self.placement.output_offset
    }

    /// Queues on `stream`: poison the output (every byte 0xFF), then restore the input.
    pub(crate) fn restore(&self, stream: &Stream) -> Result<()> {
        if self.sizes.output > 0 {
            stream.memset(self.output_ptr(), 0xFF, self.sizes.output as usize)?;
        }
        stream.copy_d2d(self.input_ptr(), self.staged.ptr(), self.sizes.input as usize)?;
        Ok(())
    }

    /// Elements of the output that differ from the expected output by more than the tolerance (0 when the
    /// collective has no reference result).
    pub(crate) fn wrong_elements(&self, world: usize) -> Result<u64> {
        let Some(want) = &self.expected else { return Ok(0) };
        let mut got = vec![0u8; self.sizes.output as usize];
        self.output_buffer().read(self.placement.output_offset as usize, &mut got)?;
        Ok(count_wrong(self.dtype, want, &got, world))
    }
}

/// Relative tolerance per element type, times the number of ranks (the fill pattern's values are exact, so a
/// result normally matches bit for bit; this bounds what a float reduction order can change).
pub fn tolerance(t: DataType, world: usize) -> f64 {
    let per_rank = match t {
        DataType::Bf16 => 1.0 / 128.0,
        DataType::F16 => 1.0 / 1024.0,
        DataType::F32 => 1.0 / 8_388_608.0,
        _ => 0.0,
    };
    per_rank * world as f64
}

/// Whether `got` differs from `want` by more than the relative tolerance `tol` (exactly, when `tol` is 0), or is
/// NaN.
pub fn out_of_tolerance(want: f64, got: f64, tol: f64) -> bool {
    (want - got).abs() > tol * (1.0 + want.abs()) || (tol == 0.0 && want != got) || got.is_nan()
}

/// How many elements of `got` are out of [`tolerance`] against `want` (NaN is always wrong; a short output counts
/// its missing elements).
pub fn count_wrong(dtype: DataType, want: &[u8], got: &[u8], world: usize) -> u64 {
    let Some(first) = first_mismatch(dtype, want, got) else { return 0 };
    let es = dtype.size();
    let tol = tolerance(dtype, world);
    let n = want.len().min(got.len()) / es;
    let wrong = (first..n)
        .filter(|&i| {
            let w = dtype.decode(&want[i * es..(i + 1) * es]);
            let g = dtype.decode(&got[i * es..(i + 1) * es]);
            out_of_tolerance(w, g, tol)
        })
        .count() as u64;
    wrong + (want.len() / es).saturating_sub(n) as u64
}

/// Splits `out` into element-aligned pieces of about 4 MiB and runs `f(first_element, piece)` on all cores.
pub fn par_chunks(es: usize, out: &mut [u8], f: impl Fn(u64, &mut [u8]) + Sync) {
    let piece = ((4usize << 20) / es).max(1) * es;
    if out.len() <= piece {
        f(0, out);
        return;
    }
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4).clamp(1, 32);
    let next = std::sync::Mutex::new(out.chunks_mut(piece).enumerate());
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| {
                loop {
                    let item = next.lock().ok().and_then(|mut it| it.next());
                    let Some((i, p)) = item else { break };
                    f((i * piece / es) as u64, p);
                }
            });
        }
    });
}

/// The fill pattern's buffer, computed on all cores (same values as `FillPattern::buffer`).
pub fn par_fill(pattern: &FillPattern, rank: usize, launch: u32, first: u64, bytes: usize) -> Vec<u8> {
    let mut v = vec![0u8; bytes];
    par_fill_into(pattern, rank, launch, first, &mut v);
    v
}

/// [`par_fill`] into `out` (e.g. pinned host memory a caller keeps): elements `first..` of rank `rank` at launch
/// `launch`, computed on all cores (same values as `FillPattern::fill`).
pub fn par_fill_into(pattern: &FillPattern, rank: usize, launch: u32, first: u64, out: &mut [u8]) {
    par_chunks(pattern.dtype.size(), out, |e, p| pattern.fill(rank, launch, first + e, p));
}

/// `expected_output`, computed on all cores piece by piece: `expected_output_split`, the CPU verifier's reference,
/// with each region split by `par_chunks`.
pub fn par_expected(
    collective: Collective,
    op: ReduceOp,
    pattern: &FillPattern,
    rank: usize,
    launch: u32,
    sizes: BufferSizes,
    root: usize,
) -> Option<Vec<u8>> {
    let es = pattern.dtype.size();
    expected_output_split(collective, op, pattern, rank, launch, sizes, root, |region, fill| {
        par_chunks(es, region, fill)
    })
}

/// Median and fastest of per-call times (NaN when there are none).
pub fn median_and_min(mut per_call: Vec<f64>) -> (f64, f64) {
    per_call.sort_by(f64::total_cmp);
    let n = per_call.len();
    let median = match n {
        0 => f64::NAN,
        n if n % 2 == 1 => per_call[n / 2],
        n => (per_call[n / 2 - 1] + per_call[n / 2]) / 2.0,
    };
    (median, per_call.first().copied().unwrap_or(f64::NAN))
}

/// Times `launch` (one collective call queued on `stream`) in a CUDA graph of `iters` calls: one warm-up replay,
/// then `runs` timed replays between events; returns µs per call of the median replay and of the fastest.
/// `sync` waits for the stream (bounded), `barrier` lines the ranks up before the timed replays.
pub fn time_graph(
    stream: &Stream,
    runs: u32,
    iters: u32,
    launch: &dyn Fn() -> Result<()>,
    sync: &dyn Fn() -> Result<()>,
    barrier: &dyn Fn() -> Result<()>,
) -> Result<(f64, f64)> {
    let iters = iters.max(1);
    let graph = Graph::capture(stream, || {
        for _ in 0..iters {
            launch().map_err(mscclpp_sys::Error::from)?;
        }
        Ok(())
    })?;
    graph.launch(stream)?;
    sync()?;
    barrier()?;
    let marks: Vec<Event> =
        (0..=runs.max(1)).map(|_| Event::new(stream.device())).collect::<std::result::Result<_, _>>()?;
    marks[0].record(stream)?;
    for (i, m) in marks.iter().enumerate().skip(1) {
        pace(&marks, i, WAIT)?;
        graph.launch(stream)?;
        m.record(stream)?;
    }
    if let Some(last) = marks.last() {
        last.synchronize(WAIT)?;
    }
    sync()?;
    let mut per_call = Vec::with_capacity(marks.len());
    for w in marks.windows(2) {
        per_call.push(f64::from(w[1].elapsed_ms_since(&w[0])?) * 1000.0 / f64::from(iters));
    }
    Ok(median_and_min(per_call))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_in_place_equals_the_pattern_s_buffer() {
        // Several 4 MiB pieces and a ragged end, in every element type: the values written into a caller's memory
        // are the ones the reference is computed from.
        let bytes = (9 << 20) + 24;
        for dtype in DataType::ALL {
            let pattern = FillPattern::new(dtype, 4, 3);
            let mut out = vec![0x5Au8; bytes];
            par_fill_into(&pattern, 2, 7, 0, &mut out);
            assert!(out == pattern.buffer(2, 7, 0, bytes), "{dtype}");
            assert!(out != pattern.buffer(2, 8, 0, bytes), "{dtype}: launches must differ");
            assert!(par_fill(&pattern, 2, 7, 0, bytes) == out, "{dtype}");
        }
        assert!(!DataType::ALL.is_empty());
    }

    #[test]
    fn wrong_elements_are_counted_within_the_tolerance() {
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let want = f32s(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(count_wrong(DataType::F32, &want, &want, 2), 0);
        assert_eq!(count_wrong(DataType::F32, &want, &f32s(&[1.0, 9.0, 3.0, f32::NAN]), 2), 2);
        // A short output counts what is missing.
        assert_eq!(count_wrong(DataType::F32, &want, &f32s(&[1.0, 2.0]), 2), 2);
        // Integers must match exactly; f16 tolerates a last-bit difference.
        let i32s = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(count_wrong(DataType::I32, &i32s(&[5, 6]), &i32s(&[5, 7]), 8), 1);
        // f16 1.0 is 0x3C00; 0x3C01 is the next value up.
        assert_eq!(count_wrong(DataType::F16, &0x3C00u16.to_le_bytes(), &0x3C01u16.to_le_bytes(), 2), 0);
        assert_eq!(count_wrong(DataType::F16, &0x3C00u16.to_le_bytes(), &0x4000u16.to_le_bytes(), 2), 1);
    }

    #[test]
    fn the_figure_is_the_median_and_the_fastest_beside_it() {
        assert_eq!(median_and_min(vec![5.0, 1.0, 3.0]), (3.0, 1.0));
        assert_eq!(median_and_min(vec![4.0, 1.0, 3.0, 2.0]), (2.5, 1.0));
        assert!(median_and_min(Vec::new()).0.is_nan());
    }
}
