//! `mscclpp.CommGroup`: a communicator (TCP bootstrap plus this rank's GPU) and what hangs off it: the shared
//! executor and the staging buffers of the staged collectives.

use std::sync::{Arc, Mutex};

use mscclpp_exec::bootstrap::{TcpBootstrap, UniqueId};
use mscclpp_exec::{Communicator, env};
use mscclpp_sys::driver::Device;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{Res, closed, err, guard, guard_detached};
use crate::state::CommState;

/// A communicator: `CommGroup(interface_ip_port_trio="eth0:10.0.0.1:29500", rank=r, size=n)` or
/// `CommGroup.from_env()` under torchrun, mpirun or srun.
#[pyclass(module = "mscclpp", frozen)]
pub struct CommGroup {
    state: Mutex<Option<Arc<CommState>>>,
}

impl CommGroup {
    /// The live state, or `mscclpp.ClosedError`.
    pub fn state(&self) -> Res<Arc<CommState>> {
        self.state
            .lock()
            .map_err(|_| err("communicator lock poisoned by an earlier failure"))?
            .clone()
            .ok_or_else(|| closed("this CommGroup"))
    }

    /// Join through an MPI communicator (duck-typed as mpi4py's): rank 0's bootstrap id travels by its `bcast`.
    fn from_mpi(py: Python<'_>, m: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (rank, size): (usize, usize) =
            (m.call_method0("Get_rank")?.extract()?, m.call_method0("Get_size")?.extract()?);
        if size == 0 || rank >= size {
            return guard(|| Err(err(format!("the MPI communicator says rank {rank} of {size}"))));
        }
        let mine = if rank == 0 {
            Some(guard(|| Ok(UniqueId::new().map_err(|e| err(format!("bootstrap id: {e}")))?.to_text()))?)
        } else {
            None
        };
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("root", 0)?;
        let text: String = m.call_method("bcast", (mine,), Some(&kwargs))?.extract()?;
        let id = guard(|| UniqueId::from_text(&text).map_err(|e| err(format!("the bootstrap id from rank 0: {e}"))))?;
        let comm = guard_detached(py, move || join(&id, rank, size))?;
        Ok(CommGroup::wrap(comm))
    }

    fn wrap(comm: Communicator) -> CommGroup {
        let state = CommState::new(comm);
        CommGroup { state: Mutex::new(Some(Arc::new(state))) }
    }
}

/// Installs the tuned table of `comm`'s machine (the one shipped for its GPU model and world size, under what
/// `mscclpp tune` measured there) for the registry's selection, as the NCCL-ABI library does at set-up; without
/// one (or on an error, which the table loader reports once on stderr) the programs' own tables decide.
/// Collective: every rank calls it while joining.
fn with_tuned_table(comm: Communicator) -> Communicator {
    let _ = mscclpp_exec::tune::install_tuned_table(&comm);
    comm
}

fn job_id() -> String {
    mscclpp_config::value_of("MSCCLPP_JOB_ID").unwrap_or_else(|| "mscclpp-python".to_string())
}

fn from_trio(trio: &str, rank: usize, size: usize) -> Res<Communicator> {
    if size == 0 || rank >= size {
        return Err(err(format!("rank {rank} is not below size {size}: ranks are numbered 0..size-1")));
    }
    let addr = UniqueId::parse_addr(trio).map_err(|e| {
        err(format!("interface_ip_port_trio {trio:?}: {e}; write it as \"ifname:ip:port\" or \"ip:port\""))
    })?;
    join(&UniqueId::from_addr(addr, &job_id()), rank, size)
}

/// Join the bootstrap `id` names as `rank` of `size`, on this rank's GPU, with the machine's tuned table.
fn join(id: &UniqueId, rank: usize, size: usize) -> Res<Communicator> {
    let device = Device::open(env::gpu_ordinal(env::local_rank(rank))?)?;
    let bootstrap = TcpBootstrap::new(rank, size, id, mscclpp_exec::bootstrap::default_timeout())?;
    Ok(with_tuned_table(Communicator::new(Arc::new(bootstrap), device)?))
}

#[pymethods]
impl CommGroup {
    /// Join a job whose rank 0 listens at `interface_ip_port_trio` (`ifname:ip:port` or `ip:port`), or, as
    /// MSCCL++ also allows, through an MPI communicator (`CommGroup(MPI.COMM_WORLD)`: mpi4py's `Get_rank`,
    /// `Get_size` and `bcast` carry rank 0's bootstrap id). MSCCL++'s keyword `interfaceIpPortTrio` is accepted
    /// beside ours.
    #[new]
    #[pyo3(signature = (mpi_comm=None, interface_ip_port_trio=None, rank=None, size=None, *, interfaceIpPortTrio=None))]
    #[allow(non_snake_case)]
    fn new(
        py: Python<'_>,
        mpi_comm: Option<&Bound<'_, PyAny>>,
        interface_ip_port_trio: Option<String>,
        rank: Option<i64>,
        size: Option<i64>,
        interfaceIpPortTrio: Option<String>,
    ) -> PyResult<Self> {
        // `CommGroup("eth0:10.0.0.1:29500", 0, 2)`: a trio given positionally lands in the first slot.
        let (mpi_comm, positional_trio) = match mpi_comm {
            Some(m) if m.is_instance_of::<pyo3::types::PyString>() => (None, Some(m.extract::<String>()?)),
            other => (other, None),
        };
        if let Some(m) = mpi_comm {
            return Self::from_mpi(py, m);
        }
        let trio = interface_ip_port_trio.or(interfaceIpPortTrio).or(positional_trio).filter(|t| !t.is_empty());
        let (trio, rank, size) = match (trio, rank, size) {
            (Some(t), Some(r), Some(s)) => (t, r, s),
            _ => {
                return guard(|| {
                    Err(err("CommGroup needs interface_ip_port_trio, rank and size (e.g. \
                             CommGroup(interface_ip_port_trio=\"eth0:10.0.0.1:29500\", rank=0, size=2)), or an MPI \
                             communicator (CommGroup(MPI.COMM_WORLD)); under torchrun or mpirun use \
                             CommGroup.from_env()"))
                });
            }
        };
        if rank < 0 || size <= 0 {
            return guard(|| Err(err(format!("rank {rank} and size {size} must be non-negative and size positive"))));
        }
        let comm = guard_detached(py, move || from_trio(&trio, rank as usize, size as usize))?;
        Ok(CommGroup::wrap(comm))
    }

    /// MSCCL++'s name of [`rank`](Self::rank).
    #[getter]
    fn my_rank(&self) -> PyResult<usize> {
        self.rank()
    }

    /// MSCCL++'s name of [`size`](Self::size).
    #[getter]
    fn nranks(&self) -> PyResult<usize> {
        self.size()
    }

    /// Ranks on this rank's host (from the bootstrap's host ids).
    #[getter]
    fn nranks_per_node(&self, py: Python<'_>) -> PyResult<usize> {
        let s = guard(|| self.state())?;
        guard_detached(py, move || Ok(s.comm.bootstrap().ranks_per_host()?))
    }

    /// MSCCL++'s `communicator` attribute: the group itself (its methods are the communicator's here).
    #[getter]
    fn communicator(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// From the launcher's environment: torchrun (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`), mpirun or srun; the
    /// rendezvous is `MSCCLPP_MASTER_ADDR:MSCCLPP_MASTER_PORT`, else `MASTER_ADDR` and `MASTER_PORT + 1`.
    #[staticmethod]
    fn from_env(py: Python<'_>) -> PyResult<CommGroup> {
        let comm = guard_detached(py, || Ok(with_tuned_table(Communicator::from_env()?.0)))?;
        Ok(CommGroup::wrap(comm))
    }

    /// This process's rank.
    #[getter]
    fn rank(&self) -> PyResult<usize> {
        guard(|| Ok(self.state()?.comm.rank()))
    }

    /// Number of ranks.
    #[getter]
    fn size(&self) -> PyResult<usize> {
        guard(|| Ok(self.state()?.comm.size()))
    }

    /// The CUDA device ordinal this rank uses.
    #[getter]
    fn device(&self) -> PyResult<usize> {
        guard(|| Ok(self.state()?.comm.device().ordinal()))
    }

    /// Whether [`close`](Self::close) was called.
    #[getter]
    fn closed(&self) -> bool {
        self.state.lock().map(|s| s.is_none()).unwrap_or(true)
    }

    /// Return once every rank has entered (bounded by `MSCCLPP_BOOTSTRAP_TIMEOUT_MS`).
    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        let s = guard(|| self.state())?;
        guard_detached(py, move || Ok(s.comm.bootstrap().barrier()?))
    }

    /// Every rank's `data`, by rank (over the bootstrap: for small host data, e.g. tuning results).
    fn all_gather_bytes<'py>(&self, py: Python<'py>, data: Vec<u8>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let s = guard(|| self.state())?;
        let all = guard_detached(py, move || Ok(s.comm.bootstrap().all_gather(&data)?))?;
        Ok(all.iter().map(|b| PyBytes::new(py, b)).collect())
    }

    /// `root`'s `data` on every rank.
    fn broadcast_bytes<'py>(&self, py: Python<'py>, root: usize, data: Vec<u8>) -> PyResult<Bound<'py, PyBytes>> {
        let s = guard(|| self.state())?;
        let out = guard_detached(py, move || Ok(s.comm.bootstrap().broadcast(root, &data)?))?;
        Ok(PyBytes::new(py, &out))
    }

    /// Release the communicator: later calls on it raise `mscclpp.ClosedError`. Objects made from it (algorithms,
    /// executors) keep what they need alive until they are dropped.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = guard(|| Ok(self.state.lock().map_err(|_| err("communicator lock poisoned"))?.take()))?;
        // Staged work may still run on the caller's stream: its drop waits (bounded) with the interpreter released.
        py.detach(move || drop(taken));
        Ok(())
    }

    /// Memory channels from `local` to every peer's `remote` (default peers: every other rank), receiving packets
    /// in local `packet_buffer` (a `RawGpuBuffer`, a CUDA tensor or a device address); buffers are
    /// `RawGpuBuffer`s, CUDA tensors or `(ptr, nbytes)`. Every rank calls it with the same `tag`.
    #[pyo3(signature = (local, remote, packet_buffer=None, tag=0, peers=None))]
    fn memory_channels(
        &self,
        py: Python<'_>,
        local: &Bound<'_, PyAny>,
        remote: &Bound<'_, PyAny>,
        packet_buffer: Option<&Bound<'_, PyAny>>,
        tag: u64,
        peers: Option<Vec<usize>>,
    ) -> PyResult<crate::native::ChannelArray> {
        let local = crate::native::region(local, "local")?;
        let remote = crate::native::region(remote, "remote")?;
        let packet = packet_buffer.map(|p| crate::args::ptr_of(p, "packet_buffer")).transpose()?;
        let s = guard(|| self.state())?;
        guard_detached(py, move || crate::native::memory_channels(&s, local, remote, packet, tag, peers))
    }

    /// Port channels (through a proxy service of their own) from `local` to every peer's `remote`; see
    /// `memory_channels`.
    #[pyo3(signature = (local, remote, tag=0, peers=None))]
    fn port_channels(
        &self,
        py: Python<'_>,
        local: &Bound<'_, PyAny>,
        remote: &Bound<'_, PyAny>,
        tag: u64,
        peers: Option<Vec<usize>>,
    ) -> PyResult<crate::native::ChannelArray> {
        let local = crate::native::region(local, "local")?;
        let remote = crate::native::region(remote, "remote")?;
        let s = guard(|| self.state())?;
        guard_detached(py, move || crate::native::port_channels(&s, local, remote, tag, peers))
    }

    /// The largest piece (one rank's part: the smaller of a call's input and output) of `collective` (`allreduce`,
    /// `allgather`, `reducescatter`, `broadcast`) `mscclpp.torch` takes on this communicator by default: every
    /// size up to 1 GiB where this machine's tuned table covers its world size and has rows for the collective
    /// (sizes the table gives to NCCL then fall back call by call), else the built-in window. The NCCL-ABI library
    /// uses the same rule.
    fn _window(&self, collective: &str) -> PyResult<u64> {
        let c = guard(|| crate::types::collective(collective))?;
        let s = guard(|| self.state())?;
        Ok(mscclpp_exec::frontend::window::window(c, s.comm.size()))
    }

    /// The staged collective behind `mscclpp.torch`: `None` when it was queued on `stream`, else why the caller
    /// must fall back. Raises `mscclpp.Error` when a copy or launch failed.
    #[pyo3(signature = (collective, send, recv, in_bytes, out_bytes, dtype, op, stream, staging_bytes=crate::staged::DEFAULT_STAGING))]
    #[allow(clippy::too_many_arguments)]
    fn _run_staged(
        &self,
        py: Python<'_>,
        collective: &str,
        send: u64,
        recv: u64,
        in_bytes: u64,
        out_bytes: u64,
        dtype: crate::types::DataType,
        op: crate::types::ReduceOp,
        stream: u64,
        staging_bytes: usize,
    ) -> PyResult<Option<String>> {
        let c = guard(|| crate::types::collective(collective))?;
        guard(|| op.check_for(c))?;
        let s = guard(|| self.state())?;
        guard_detached(py, move || {
            let mut g = s.staged_with(staging_bytes)?;
            let st = g.as_mut().ok_or_else(|| err("staging buffers missing"))?;
            let call = crate::staged::Call {
                collective: c,
                send,
                recv,
                in_bytes,
                out_bytes,
                dtype,
                reduce: op.lang(),
                stream,
                program: None,
                nblocks: 0,
                nthreads: 0,
            };
            Ok(match st.run(&call)? {
                crate::staged::Outcome::Ran => None,
                crate::staged::Outcome::Fallback(why) => Some(why),
            })
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<Py<PyAny>>,
        _v: Option<Py<PyAny>>,
        _tb: Option<Py<PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        match self.state() {
            Ok(s) => format!(
                "CommGroup(rank={}, size={}, device={})",
                s.comm.rank(),
                s.comm.size(),
                s.comm.device().ordinal()
            ),
            Err(_) => "CommGroup(closed)".to_string(),
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CommGroup>()?;
    Ok(())
}
