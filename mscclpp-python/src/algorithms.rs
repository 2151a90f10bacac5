//! `mscclpp.default_algorithms(comm)` and `mscclpp.programs()`: the registry's programs as algorithm objects
//! that run on raw device pointers and a CUDA stream handle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mscclpp_exec::executor::ExecutionPlan;
use mscclpp_lang::registry::{self, ProgramMeta};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args::{check_sizes, ptr_of};
use crate::buffer::{RawGpuBuffer, data_type};
use crate::comm::CommGroup;
use crate::errors::{err, guard, guard_detached, unsupported};
use crate::executor::Executor;
use crate::staged::{self, Call, DEFAULT_STAGING, Outcome};
use crate::types::{DataType, ReduceOp};

type PlanKey = (u64, u64, DataType, ReduceOp, usize, u32, bool);

/// A registered program as an algorithm: its metadata, and `execute` on device pointers.
#[pyclass(module = "mscclpp", frozen)]
pub struct Algorithm {
    meta: &'static ProgramMeta,
    plans: Mutex<HashMap<(usize, PlanKey), Arc<ExecutionPlan>>>,
}

impl Algorithm {
    /// Wrap a program.
    pub fn new(meta: &'static ProgramMeta) -> Self {
        Algorithm { meta, plans: Mutex::new(HashMap::new()) }
    }
}

#[pymethods]
impl Algorithm {
    /// MSCCL++'s `Algorithm.create_from_native_capsule`: a `mscclpp.NativeAlgorithm` from its argument (a
    /// `NativeAlgorithm`, or an object or dict with `name`, `collective` and `launch`; see
    /// `mscclpp.collection.create_from_native_capsule`).
    #[staticmethod]
    fn create_from_native_capsule<'py>(py: Python<'py>, capsule: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        py.import("mscclpp.collection")?.getattr("create_from_native_capsule")?.call1((capsule,))
    }

    /// Registry name.
    #[getter]
    fn name(&self) -> &'static str {
        self.meta.name
    }

    /// `allreduce`, `allgather`, `reducescatter`, `broadcast` or `alltoall`.
    #[getter]
    fn collective(&self) -> &'static str {
        self.meta.collective.as_str()
    }

    /// `Simple` or `LL`.
    #[getter]
    fn protocol(&self) -> &'static str {
        self.meta.protocol.as_str()
    }

    /// Supported message sizes in bytes, `(min, max)`; `max` is `None` when unbounded.
    #[getter]
    fn message_range(&self) -> (u64, Option<u64>) {
        (self.meta.message_sizes.min, self.meta.message_sizes.upper())
    }

    /// Supported world sizes, `(min, max)`.
    #[getter]
    fn world_sizes(&self) -> (u64, Option<u64>) {
        (self.meta.world_sizes.min, self.meta.world_sizes.upper())
    }

    /// `in_place`, `out_of_place` or `both`.
    #[getter]
    fn buffer_mode(&self) -> &'static str {
        self.meta.buffer_mode.as_str()
    }

    /// Integer tags.
    #[getter]
    fn tags<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for t in self.meta.tags {
            d.set_item(t.key, t.value)?;
        }
        Ok(d)
    }

    /// One-line description.
    #[getter]
    fn description(&self) -> &'static str {
        self.meta.description
    }

    /// Run the collective on `comm`: `input_size` bytes at `input_buffer` (a device address such as
    /// `tensor.data_ptr()`, a CUDA tensor or a `RawGpuBuffer`) into `output_size` bytes at `output_buffer`, on
    /// the CUDA stream `stream` (an int such as `torch.cuda.current_stream().cuda_stream`; 0: the default stream).
    ///
    /// `symmetric_memory=False` (default) copies through staging buffers of the communicator, so any buffers
    /// work; `True` runs in place on the given buffers (zero copy): every rank must then pass buffers allocated
    /// the same way in the same order (e.g. `RawGpuBuffer`s), since the first run with a new pair of buffers
    /// sets them up collectively; one buffer as both input and output runs the plan in place.
    /// `nblocks`/`nthreads_per_block` (0: the program's table) shape the plan.
    /// Returns 0; raises `mscclpp.UnsupportedError` for a size, type or world size this algorithm does not run.
    #[pyo3(signature = (comm, input_buffer, output_buffer, input_size, output_size, dtype, op=ReduceOp::SUM,
                        stream=0, executor=None, nblocks=0, nthreads_per_block=0, symmetric_memory=false,
                        extras=None))]
    #[allow(clippy::too_many_arguments)]
    fn execute(
        &self,
        py: Python<'_>,
        comm: &CommGroup,
        input_buffer: &Bound<'_, PyAny>,
        output_buffer: &Bound<'_, PyAny>,
        input_size: u64,
        output_size: u64,
        dtype: &Bound<'_, PyAny>,
        op: ReduceOp,
        stream: u64,
        executor: Option<PyRef<'_, Executor>>,
        nblocks: usize,
        nthreads_per_block: u32,
        symmetric_memory: bool,
        extras: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<i32> {
        // MSCCL++'s algorithms take `extras` (per-algorithm options); the registry's programs have none.
        if let Some(x) = extras
            && !x.is_none()
            && x.len().is_ok_and(|n| n > 0)
        {
            return guard(|| {
                Err(crate::errors::unsupported(format!(
                    "{}: extras are not used by this library's algorithms; pass None or an empty dict",
                    self.meta.name
                )))
            });
        }
        let send = ptr_of(input_buffer, "input_buffer")?;
        let recv = ptr_of(output_buffer, "output_buffer")?;
        let dtype = data_type(dtype)?;
        let state = guard(|| comm.state())?;
        let exec = match &executor {
            Some(e) => Some(guard(|| e.inner())?),
            None => None,
        };
        let meta = self.meta;
        guard(|| op.check_for(meta.collective))?;
        guard(|| check_sizes(meta.collective, state.comm.size(), input_size, output_size, dtype))?;
        guard_detached(py, move || {
            if symmetric_memory {
                let exec = match exec {
                    Some(e) => e,
                    None => state.executor()?,
                };
                // Zero copy runs the plan on the caller's buffers as they are: in place when they are one buffer.
                let inplace = send == recv;
                let key = (input_size, output_size, dtype, op, nblocks, nthreads_per_block, inplace);
                let world = state.comm.size();
                let plan = {
                    let mut plans = self.plans.lock().map_err(|_| err("plan cache poisoned"))?;
                    match plans.get(&(world, key)) {
                        Some(p) => p.clone(),
                        None => {
                            let (p, _) = staged::prepare_plan(
                                &[inplace],
                                world,
                                meta.collective,
                                Some(meta),
                                input_size,
                                dtype,
                                op.lang(),
                                nblocks,
                                nthreads_per_block,
                            )
                            .map_err(|r| {
                                let placement = if inplace { "in place" } else { "out of place" };
                                unsupported(format!(
                                    "{} ({placement}, since the input and output buffers are {}): {r}",
                                    meta.name,
                                    if inplace { "the same" } else { "different" }
                                ))
                            })?;
                            let p = Arc::new(p);
                            plans.insert((world, key), p.clone());
                            p
                        }
                    }
                };
                staged::run_direct(&exec, &plan, send, recv, input_size, output_size, dtype, stream)?;
                return Ok(0);
            }
            let mut g = state.staged_with(DEFAULT_STAGING)?;
            let st = g.as_mut().ok_or_else(|| err("staging buffers missing"))?;
            let call = Call {
                collective: meta.collective,
                send,
                recv,
                in_bytes: input_size,
                out_bytes: output_size,
                dtype,
                reduce: op.lang(),
                stream,
                program: Some(meta),
                nblocks,
                nthreads: nthreads_per_block,
            };
            match st.run(&call)? {
                Outcome::Ran => Ok(0),
                Outcome::Fallback(why) => Err(unsupported(format!("{}: {why}", meta.name))),
            }
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Algorithm(name={:?}, collective={:?}, message_range={})",
            self.meta.name,
            self.meta.collective.as_str(),
            self.meta.message_sizes.display_bytes()
        )
    }
}

/// Algorithm objects for every registered program that runs on `comm`'s world size. `scratch` sets the size of
/// each staging buffer of the communicator (bytes, or a `RawGpuBuffer` whose size is used; default 32 MiB) when
/// the staging buffers do not exist yet.
#[pyfunction]
#[pyo3(signature = (comm, scratch=None))]
fn default_algorithms(
    py: Python<'_>,
    comm: &CommGroup,
    scratch: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Algorithm>> {
    let bytes = match scratch {
        None => None,
        Some(s) => match s.cast::<RawGpuBuffer>() {
            Ok(b) => Some(b.get().nbytes),
            Err(_) => Some(
                s.extract::<usize>()
                    .map_err(|_| crate::errors::to_py(err("scratch must be a size in bytes or a RawGpuBuffer")))?,
            ),
        },
    };
    let state = guard(|| comm.state())?;
    let world = state.comm.size();
    if let Some(b) = bytes {
        let s2 = state.clone();
        guard_detached(py, move || s2.staged_with(b).map(|_| ()))?;
    }
    Ok(registry::programs().into_iter().filter(|m| m.supports_world_size(world)).map(Algorithm::new).collect())
}

/// Every registered program (optionally of one collective, or supporting one world size), as `Algorithm`s.
#[pyfunction]
#[pyo3(signature = (collective=None, world_size=None))]
fn programs(collective: Option<&str>, world_size: Option<usize>) -> PyResult<Vec<Algorithm>> {
    guard(|| {
        let c = collective.map(crate::types::collective).transpose()?;
        Ok(registry::programs()
            .into_iter()
            .filter(|m| c.is_none_or(|c| m.collective == c))
            .filter(|m| world_size.is_none_or(|w| m.supports_world_size(w)))
            .map(Algorithm::new)
            .collect())
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Algorithm>()?;
    m.add_function(wrap_pyfunction!(default_algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(programs, m)?)?;
    Ok(())
}
