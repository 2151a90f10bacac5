//! `mscclpp.Executor`: runs execution plans (`mscclpp.plan(...)`, `mscclpp.ExecutionPlan(path)`) on device
//! buffers, zero copy.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use crate::args::{check_sizes, ptr_of};
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
    ///
    /// Two argument orders: `execute(plan, input_buffer, output_buffer, input_size, output_size, dtype,
    /// stream=0)`, and MSCCL++'s `execute(rank, send_buff, recv_buff, send_buff_size, recv_buff_size, data_type,
    /// plan, stream, packet_type=None)` (a first argument that is an int is the rank, which must be this
    /// communicator's; `packet_type` may be None or LL16, the format the plans' packets use here). Keywords of
    /// either form work.
    #[pyo3(signature = (*args, **kwargs))]
    fn execute(
        &self,
        py: Python<'_>,
        args: &Bound<'_, pyo3::types::PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<()> {
        let a = ExecuteArgs::parse(args, kwargs)?;
        let (plan, input_buffer, output_buffer) = (&a.plan, &a.input, &a.output);
        let (input_size, output_size, dtype, stream) = (a.input_size, a.output_size, &a.dtype, a.stream);
        let plan: PyRef<'_, ExecutionPlan> = plan.extract()?;
        if let Some(rank) = a.rank {
            let exec = guard(|| self.inner())?;
            let mine = exec.communicator().rank();
            if rank != mine {
                return guard(|| {
                    Err(err(format!("execute(rank={rank}, ...) on the executor of rank {mine}: pass this rank's own")))
                });
            }
        }
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
    m.add_function(wrap_pyfunction!(_execute_args, m)?)?;
    Ok(())
}

/// The arguments of `Executor.execute`, in either order (see its documentation).
struct ExecuteArgs<'py> {
    rank: Option<usize>,
    plan: Bound<'py, PyAny>,
    input: Bound<'py, PyAny>,
    output: Bound<'py, PyAny>,
    input_size: u64,
    output_size: u64,
    dtype: Bound<'py, PyAny>,
    stream: u64,
}

impl<'py> ExecuteArgs<'py> {
    const OURS: [&'static str; 7] =
        ["plan", "input_buffer", "output_buffer", "input_size", "output_size", "dtype", "stream"];
    const MSCCLPP: [&'static str; 9] = [
        "rank",
        "send_buff",
        "recv_buff",
        "send_buff_size",
        "recv_buff_size",
        "data_type",
        "plan",
        "stream",
        "packet_type",
    ];

    fn parse(
        args: &Bound<'py, pyo3::types::PyTuple>,
        kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
    ) -> PyResult<Self> {
        use pyo3::exceptions::PyTypeError;
        // MSCCL++'s order when the first argument (or the `rank` keyword) is an int.
        let first_is_rank = match args.get_item(0) {
            Ok(a) => !a.is_instance_of::<ExecutionPlan>() && a.extract::<usize>().is_ok(),
            Err(_) => kwargs.is_some_and(|k| k.contains("rank").unwrap_or(false)),
        };
        let names: &[&str] = if first_is_rank { &Self::MSCCLPP } else { &Self::OURS };
        let mut values: Vec<Option<Bound<'py, PyAny>>> = vec![None; names.len()];
        if args.len() > names.len() {
            return Err(PyTypeError::new_err(format!(
                "execute takes at most {} arguments ({}), {} given",
                names.len(),
                names.join(", "),
                args.len()
            )));
        }
        for (i, a) in args.iter().enumerate() {
            values[i] = Some(a);
        }
        if let Some(k) = kwargs {
            for (key, v) in k.iter() {
                let key: String = key.extract()?;
                let i = names.iter().position(|n| *n == key).ok_or_else(|| {
                    PyTypeError::new_err(format!(
                        "execute got an unexpected keyword `{key}` (takes {})",
                        names.join(", ")
                    ))
                })?;
                if values[i].is_some() {
                    return Err(PyTypeError::new_err(format!("execute got `{key}` twice")));
                }
                values[i] = Some(v);
            }
        }
        let take = |name: &str| -> PyResult<Bound<'py, PyAny>> {
            let i = names.iter().position(|n| *n == name).unwrap_or(0);
            values[i].clone().ok_or_else(|| PyTypeError::new_err(format!("execute is missing `{name}`")))
        };
        let opt = |name: &str| names.iter().position(|n| *n == name).and_then(|i| values[i].clone());
        let stream = match opt("stream") {
            Some(s) if !s.is_none() => s.extract::<u64>()?,
            _ => 0,
        };
        if first_is_rank {
            if let Some(p) = opt("packet_type")
                && !p.is_none()
            {
                // MSCCL++'s `PacketType` (LL8 = 0, LL16 = 1): an enum member by name, its value, or a string.
                let name = match p.getattr("name") {
                    Ok(n) => n.str()?.to_string(),
                    Err(_) => match p.extract::<i64>() {
                        Ok(1) => "LL16".to_string(),
                        Ok(v) => format!("{v}"),
                        Err(_) => p.str()?.to_string(),
                    },
                }
                .to_ascii_lowercase();
                if !name.ends_with("ll16") {
                    return Err(crate::errors::to_py(crate::errors::unsupported(format!(
                        "packet_type {name}: the plans' packets here are LL16; pass None or PacketType.LL16"
                    ))));
                }
            }
            Ok(ExecuteArgs {
                rank: Some(take("rank")?.extract()?),
                plan: take("plan")?,
                input: take("send_buff")?,
                output: take("recv_buff")?,
                input_size: take("send_buff_size")?.extract()?,
                output_size: take("recv_buff_size")?.extract()?,
                dtype: take("data_type")?,
                stream,
            })
        } else {
            Ok(ExecuteArgs {
                rank: None,
                plan: take("plan")?,
                input: take("input_buffer")?,
                output: take("output_buffer")?,
                input_size: take("input_size")?.extract()?,
                output_size: take("output_size")?.extract()?,
                dtype: take("dtype")?,
                stream,
            })
        }
    }
}

/// How `Executor.execute` reads its arguments (for tests, which have no GPU to make an executor): a dict of
/// `order` (`"mscclpp"` or `"ours"`), `rank`, `plan`, `input`, `output`, `input_size`, `output_size`, `dtype`,
/// `stream`.
#[pyfunction]
#[pyo3(signature = (*args, **kwargs))]
fn _execute_args<'py>(
    py: Python<'py>,
    args: &Bound<'py, pyo3::types::PyTuple>,
    kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let a = ExecuteArgs::parse(args, kwargs)?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("order", if a.rank.is_some() { "mscclpp" } else { "ours" })?;
    d.set_item("rank", a.rank)?;
    d.set_item("plan", a.plan)?;
    d.set_item("input", a.input)?;
    d.set_item("output", a.output)?;
    d.set_item("input_size", a.input_size)?;
    d.set_item("output_size", a.output_size)?;
    d.set_item("dtype", a.dtype)?;
    d.set_item("stream", a.stream)?;
    Ok(d)
}
