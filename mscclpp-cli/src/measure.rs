//! What `mscclpp test` and `mscclpp bench` share: the buffers of one case, the fill pattern and reference result
//! computed on all cores, the comparison with the reference and the element types of the interpreter.

use std::sync::{Arc, Mutex, MutexGuard};

use mscclpp_exec::sys::driver::{PinnedHostMemory, Stream};
use mscclpp_exec::{Communicator, GpuBuffer};
use mscclpp_lang::data::{BufferSizes, DataType, FillPattern, Placement, first_mismatch};
use mscclpp_lang::plan::{Collective, Plan};

/// The tuner's correctness rule and helpers, shared: the tolerance per element type times the world size, the
/// count of wrong elements, and splitting work over all cores.
pub(crate) use mscclpp_exec::tune::{count_wrong, out_of_tolerance, par_expected, par_fill_into, tolerance};

/// The buffers of one case: input and output (one allocation in place) with the collective's placement in them,
/// and the pinned host memory every fill goes out of and every result comes back into.
pub(crate) struct Buffers {
    pub(crate) input: Arc<GpuBuffer>,
    pub(crate) output: Arc<GpuBuffer>,
    pub(crate) placement: Placement,
    pub(crate) sizes: BufferSizes,
    /// As large as the larger of input and output: pinned, so the copies run at the host link's rate (the driver
    /// stages a pageable copy through a buffer of its own, several times slower at 1 GiB), and allocated once per
    /// case, so a check faults in no fresh pages of host memory.
    host: Mutex<PinnedHostMemory>,
}

impl Buffers {
    pub(crate) fn input_ptr(&self) -> u64 {
        self.input.ptr() + self.placement.input_offset
    }
    pub(crate) fn output_ptr(&self) -> u64 {
        self.output.ptr() + self.placement.output_offset
    }
    /// Poison the output on the device (every byte 0xFF: NaN in the float types), then write the input of launch
    /// `launch`, computed on all cores into the pinned host memory.
    pub(crate) fn fill(&self, pattern: &FillPattern, rank: usize, launch: u32) -> anyhow::Result<()> {
        self.output.fill(POISON)?;
        self.write_input(&self.input, self.placement.input_offset as usize, pattern, rank, launch)
    }
    /// A device buffer holding the input of launch `launch` (for [`Buffers::restore`]), written through the pinned
    /// host memory.
    pub(crate) fn stage(&self, pattern: &FillPattern, rank: usize, launch: u32) -> anyhow::Result<GpuBuffer> {
        let staged = GpuBuffer::new(self.input.device(), (self.sizes.input as usize).max(16))?;
        self.write_input(&staged, 0, pattern, rank, launch)?;
        Ok(staged)
    }
    /// Write the input of `rank` at launch `launch` into `dst` at `offset`, computed on all cores into the pinned
    /// host memory.
    fn write_input(
        &self,
        dst: &GpuBuffer,
        offset: usize,
        pattern: &FillPattern,
        rank: usize,
        launch: u32,
    ) -> anyhow::Result<()> {
        let mut host = self.host()?;
        let data = &mut host.as_mut_slice()[..self.sizes.input as usize];
        par_fill_into(pattern, rank, launch, 0, data);
        Ok(dst.write(offset, data)?)
    }
    /// Queue on `stream` what [`Buffers::fill`] does from the host, with the input taken from `staged` (a device
    /// copy of a fill, [`Buffers::stage`]): poison the output, then write the input.
    pub(crate) fn restore(&self, stream: &Stream, staged: &GpuBuffer) -> anyhow::Result<()> {
        if self.sizes.output > 0 {
            stream.memset(self.output_ptr(), POISON, self.sizes.output as usize)?;
        }
        stream.copy_d2d(self.input_ptr(), staged.ptr(), self.sizes.input as usize)?;
        Ok(())
    }
    /// Copy the output into the pinned host memory and hand it to `look` (the memory is the case's: nothing is
    /// allocated per check).
    pub(crate) fn with_output<R>(&self, look: impl FnOnce(&[u8]) -> R) -> anyhow::Result<R> {
        let mut host = self.host()?;
        let out = &mut host.as_mut_slice()[..self.sizes.output as usize];
        self.output.read(self.placement.output_offset as usize, out)?;
        Ok(look(out))
    }
    fn host(&self) -> anyhow::Result<MutexGuard<'_, PinnedHostMemory>> {
        self.host.lock().map_err(|_| anyhow::anyhow!("the host buffer of a check was poisoned by a panic"))
    }
}

/// The byte every element of an output is set to before a checked launch, on the device: NaN in the float types,
/// which equals no result, so an element a launch leaves unwritten fails the check (in `i32` it reads -1, a sum
/// as seldom as any one value).
const POISON: u8 = 0xFF;

/// Compare; returns a message for the first element out of tolerance, and whether the match is bit for bit.
pub(crate) fn compare(dtype: DataType, want: &[u8], got: &[u8], world: usize) -> (Option<String>, bool) {
    let Some(first) = first_mismatch(dtype, want, got) else {
        return (None, true);
    };
    let es = dtype.size();
    let tol = tolerance(dtype, world);
    for i in first..want.len() / es {
        let w = dtype.decode(&want[i * es..(i + 1) * es]);
        let g = dtype.decode(&got[i * es..(i + 1) * es]);
        if out_of_tolerance(w, g, tol) {
            return (Some(format!("element {i} (byte {}): expected {w}, got {g}", i * es)), false);
        }
    }
    (None, false)
}

impl Buffers {
    pub(crate) fn new(comm: &Communicator, plan: &Plan, sizes: BufferSizes, inplace: bool) -> anyhow::Result<Buffers> {
        Buffers::for_collective(comm, plan.collective, sizes, inplace)
    }
    /// The buffers of `collective` at `sizes` on this rank's GPU.
    pub(crate) fn for_collective(
        comm: &Communicator,
        collective: Collective,
        sizes: BufferSizes,
        inplace: bool,
    ) -> anyhow::Result<Buffers> {
        let placement = Placement::new(collective, inplace, comm.rank(), sizes);
        let device = comm.device();
        let input = Arc::new(GpuBuffer::new(device, placement.input_alloc.max(16) as usize)?);
        let output = if placement.shared {
            input.clone()
        } else {
            Arc::new(GpuBuffer::new(device, placement.output_alloc.max(16) as usize)?)
        };
        let host_bytes = sizes.input.max(sizes.output).max(16) as usize;
        let host = Mutex::new(PinnedHostMemory::zeroed(device, host_bytes)?);
        Ok(Buffers { input, output, placement, sizes, host })
    }
}

/// Median of sorted values (NaN when empty).
pub(crate) fn median_sorted(v: &[f64]) -> f64 {
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Median and minimum of per-call times (NaN when there are none): the autotuner's.
pub(crate) use mscclpp_exec::tune::median_and_min;

/// Loads this machine's tuned table from the cache directory and installs it for the registry's selection (what
/// `mscclpp bench` and `mscclpp test` do after joining the job); rank 0 says which table it uses. Collective.
/// Without a usable table the run goes on with the normal selection.
pub fn use_tuned_table(comm: &Communicator) {
    match mscclpp_exec::tune::install_tuned_table(comm) {
        Ok(Some(source)) if comm.rank() == 0 => println!("tuned table: {source}"),
        Ok(_) => {}
        Err(e) if comm.rank() == 0 => eprintln!("warning: no tuned table: {e}"),
        Err(_) => {}
    }
}

/// Ranks per node of the plans a run builds: `given` (`--ranks-per-node`), else the job's own, from the ranks' host
/// names (`MSCCLPP_HOSTID` where set: two ranks in two network namespaces are two nodes). Collective: every rank
/// must call it.
pub fn ranks_per_node(comm: &Communicator, given: Option<usize>) -> anyhow::Result<usize> {
    let world = comm.size();
    match given {
        Some(r) if r == 0 || !world.is_multiple_of(r) => {
            anyhow::bail!("--ranks-per-node {r} does not divide the world of {world} ranks into equal nodes")
        }
        Some(r) => Ok(r),
        None => Ok(mscclpp_exec::tune::table::ranks_per_node(comm)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_elements_are_counted() {
        let dt = DataType::F32;
        let enc = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let want = enc(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(count_wrong(dt, &want, &want, 2), 0);
        assert_eq!(count_wrong(dt, &want, &enc(&[1.0, 9.0, 3.0, f32::NAN]), 2), 2);
        assert_eq!(count_wrong(dt, &want, &enc(&[1.0, 2.0]), 2), 2);
        let (med, min) = median_and_min(vec![5.0, 1.0, 3.0]);
        assert_eq!((med, min), (3.0, 1.0));
        assert!(median_and_min(Vec::new()).0.is_nan());
    }
}
