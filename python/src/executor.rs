//! `mscclpp.Executor`: runs execution plans (`mscclpp.plan(...)`, `mscclpp.ExecutionPlan(path)`) on device
//! buffers, zero copy.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use crate::algorithms::{check_sizes, ptr_of};
use crate::buffer::data_type;
use crate::comm::CommGroup;
use crate::errors::{Res, closed, err, guard, guard_detached};
use crate::plans::ExecutionPlan;
use crate::staged;

/// Runs plans on the communicator's GPU.
#[pyclass(module = "mscclpp", frozen)]
pub struct Executor {
    inner: Mutex<Option<Arc<mscclpp_exec::executor::Executor>>>,
}

impl Executor {
    /// The Rust executor, or `mscclpp.ClosedError`.
    pub fn inner(&self) -> Res<Arc<mscclpp_exec::executor::Executor>> {
        self.inner.lock().map_err(|_| err("executor lock poisoned"))?.clone().ok_or_else(|| closed("this Executor"))
    }
}

#[pymethods]
impl Executor {
    /// The executor of `comm` (shared with its algorithms).
    #[new]
    fn new(py: Python<'_>, comm: &CommGroup) -> PyResult<Self> {
        let state = guard(|| comm.state())?;
        let exec = guard_detached(py, move || state.executor())?;
        Ok(Executor { inner: Mutex::new(Some(exec)) })
    }

    /// Queue one run of `plan` on `stream` (an int `CUstream`; 0: the default stream): `input_size` bytes at
    /// `input_buffer` into `output_size` bytes at `output_buffer` (device addresses, CUDA tensors or
    /// `RawGpuBuffer`s). Every rank makes the same calls; the first run with a new pair of buffers sets them up
    /// collectively, so pass buffers allocated the same way on every rank (e.g. `RawGpuBuffer`s).
    #[pyo3(signature = (plan, input_buffer, output_buffer, input_size, output_size, dtype, stream=0))]
    #[allow(clippy::too_many_arguments)]
    fn execute(
        &self,
        py: Python<'_>,
        plan: &ExecutionPlan,
        input_buffer: &Bound<'_, PyAny>,
        output_buffer: &Bound<'_, PyAny>,
        input_size: u64,
        output_size: u64,
        dtype: &Bound<'_, PyAny>,
        stream: u64,
    ) -> PyResult<()> {
        let send = ptr_of(input_buffer, "input_buffer")?;
        let recv = ptr_of(output_buffer, "output_buffer")?;
        let dtype = data_type(dtype)?;
        let exec = guard(|| self.inner())?;
        let p = plan.inner.clone();
        guard(|| {
            let world = exec.communicator().size();
            if p.plan().world_size() != world {
                return Err(crate::errors::unsupported(format!(
                    "plan `{}` is for {} ranks but the communicator has {world}; make it with world_size={world}",
                    p.plan().name,
                    p.plan().world_size()
                )));
            }
            check_sizes(p.plan().collective, world, input_size, output_size, dtype)
        })?;
        guard_detached(py, move || staged::run_direct(&exec, &p, send, recv, input_size, output_size, dtype, stream))
    }

    /// Wait for `stream` (bounded by `MSCCLPP_WAIT_TIMEOUT_MS`; a device wait that expired names the rank, thread
    /// block, operation and peer).
    #[pyo3(signature = (stream=0))]
    fn synchronize(&self, py: Python<'_>, stream: u64) -> PyResult<()> {
        let exec = guard(|| self.inner())?;
        guard_detached(py, move || {
            let device = *exec.communicator().device();
            // SAFETY: the caller passes a live stream of the communicator's GPU (or 0 for the default stream).
            let s = unsafe {
                mscclpp_sys::driver::Stream::borrow_raw(&device, stream as usize as mscclpp_sys::driver::RawStream)
            };
            Ok(exec.synchronize(&s)?)
        })
    }

    /// Release the executor (later calls raise `mscclpp.ClosedError`).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = guard(|| Ok(self.inner.lock().map_err(|_| err("executor lock poisoned"))?.take()))?;
        py.detach(move || drop(taken));
        Ok(())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Executor>()?;
    Ok(())
}
