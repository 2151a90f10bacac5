//! The accelerated path of one communicator: our own communicator and executor beside the real NCCL one, two
//! staging buffers, and a plan per (collective, size, type, operator, root).
//!
//! How a call runs — zero copy on the application's buffers, on its buffers registered with every peer, or
//! through staging buffers, eagerly or inside a CUDA graph capture — is `mscclpp_exec::frontend`'s business (the
//! same runtime serves the Python module); this module sets it up beside the real communicator, gives it the
//! plan for each key (`plans::select`) and keeps what NCCL must run (sizes outside the window, sizes the
//! tuned table gives to NCCL).
//!
//! Which plan runs, and whether the call is ours at all, depends only on the call's collective, size, type,
//! operator and root, so every rank makes the same executor calls; where the buffers matter (registration), the
//! frontend makes the ranks agree first.
//!
//! Setup (first eligible call, outside graph capture): rank 0 makes a TCP bootstrap id, the real NCCL
//! communicator broadcasts it (a 128-byte device buffer on a stream of ours), every rank joins the bootstrap and
//! builds a communicator and an executor; then an all-reduce (min) of a success flag over the real communicator
//! makes every rank agree, so either all ranks accelerate or none does. Every wait is bounded
//! (`MSCCLPP_BOOTSTRAP_TIMEOUT_MS`). A call captured before the communicator's first eager call goes to NCCL (on
//! every rank alike); once set up, captured calls of any size are ours.

use std::ffi::{c_int, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mscclpp_exec::Communicator;
use mscclpp_exec::bootstrap::{Bootstrap, TcpBootstrap, UniqueId};
use mscclpp_exec::executor::Executor;
use mscclpp_exec::frontend::{self, Frontend, Path};
use mscclpp_lang::plan::ReduceOp;
use mscclpp_sys::driver::{Device, DeviceMemory, DevicePtr, Stream};
use mscclpp_sys::interpreter::ElementType;

use crate::abi::{self, CudaStream, NcclComm, NcclResult};
use crate::error::{AccelError, nccl_result};
use crate::plans::{Key, select};
use crate::policy::{self, Op};

/// The accelerated path of a communicator, in its state's mutex.
#[derive(Default)]
pub enum Slot {
    /// Not set up yet.
    #[default]
    Untried,
    /// Ready to run.
    Ready(Box<Accel>),
    /// Not available for this communicator (why); every call goes to NCCL.
    Off(AccelError),
}

/// One call, as the exported functions describe it.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// The collective.
    pub op: Op,
    /// Send buffer (device address).
    pub send: DevicePtr,
    /// Receive buffer (device address).
    pub recv: DevicePtr,
    /// Bytes of one rank's piece: the whole message of an all-reduce or broadcast, the send buffer of an
    /// all-gather, the receive buffer of a reduce-scatter.
    pub piece_bytes: u64,
    /// Element type (the interpreter's and the registry's: one enum).
    pub elem: ElementType,
    /// Reduction (sum for collectives without one).
    pub reduce: ReduceOp,
    /// The root of a broadcast (0 for the other collectives).
    pub root: usize,
    /// The caller's stream.
    pub stream: CudaStream,
}

/// Our communicator and collectives runtime for one NCCL communicator.
pub struct Accel {
    rank: usize,
    world: usize,
    device: Device,
    frontend: Frontend<Key>,
}

/// What an eligible call turned into.
pub enum Outcome {
    /// Ours (queued this way, when it succeeded): the result to return.
    Ran(NcclResult, Option<Path>),
    /// Not ours: forward to NCCL.
    Forward,
}

fn timeout() -> Duration {
    mscclpp_exec::bootstrap::default_timeout()
}

/// Wait, bounded, for a nonblocking communicator's pending operation to finish.
fn wait_comm(comm: NcclComm, first: NcclResult, what: &str) -> Result<(), AccelError> {
    let start = Instant::now();
    let mut r = first;
    while r == abi::IN_PROGRESS {
        if start.elapsed() > timeout() {
            return Err(AccelError::NcclInProgress { what: what.to_string(), waited: timeout() });
        }
        std::thread::yield_now();
        let mut state = abi::SUCCESS;
        let q = crate::forward!("ncclCommGetAsyncError", fn(NcclComm, *mut NcclResult) -> NcclResult, comm, &mut state);
        r = if q != abi::SUCCESS { q } else { state };
    }
    if r == abi::SUCCESS { Ok(()) } else { Err(AccelError::Nccl { what: what.to_string(), code: r }) }
}

pub(crate) fn query(comm: NcclComm, name: &str) -> Result<c_int, AccelError> {
    let mut v: c_int = -1;
    let r = match name {
        "rank" => crate::forward!("ncclCommUserRank", fn(NcclComm, *mut c_int) -> NcclResult, comm, &mut v),
        "count" => crate::forward!("ncclCommCount", fn(NcclComm, *mut c_int) -> NcclResult, comm, &mut v),
        _ => crate::forward!("ncclCommCuDevice", fn(NcclComm, *mut c_int) -> NcclResult, comm, &mut v),
    };
    wait_comm(comm, r, name)?;
    Ok(v)
}

/// Broadcast `bytes` from rank 0 over the real communicator (through a device buffer and a stream of ours).
fn real_broadcast(comm: NcclComm, device: &Device, bytes: &mut [u8]) -> Result<(), AccelError> {
    let e = |e: mscclpp_sys::Error| AccelError::cuda("exchanging the bootstrap id over NCCL")(e);
    let stream = Stream::new(device).map_err(e)?;
    let buf = DeviceMemory::zeroed(device, bytes.len()).map_err(e)?;
    buf.copy_from_host(0, bytes).map_err(e)?;
    let r = crate::forward!(
        "ncclBroadcast",
        fn(*const c_void, *mut c_void, usize, c_int, c_int, NcclComm, CudaStream) -> NcclResult,
        buf.ptr() as *const c_void,
        buf.ptr() as *mut c_void,
        bytes.len(),
        abi::UINT8,
        0,
        comm,
        stream.raw() as CudaStream
    );
    wait_comm(comm, r, "ncclBroadcast of the bootstrap id")?;
    stream.synchronize(timeout()).map_err(e)?;
    buf.copy_to_host(0, bytes).map_err(e)
}

/// All-reduce (min) of `flag` over the real communicator: 1 only when every rank passed 1.
fn real_agree(comm: NcclComm, device: &Device, flag: i32) -> Result<bool, AccelError> {
    let e = |e: mscclpp_sys::Error| AccelError::cuda("agreeing on the setup over NCCL")(e);
    let stream = Stream::new(device).map_err(e)?;
    let buf = DeviceMemory::zeroed(device, 4).map_err(e)?;
    buf.copy_from_host(0, &flag.to_le_bytes()).map_err(e)?;
    let r = crate::forward!(
        "ncclAllReduce",
        fn(*const c_void, *mut c_void, usize, c_int, c_int, NcclComm, CudaStream) -> NcclResult,
        buf.ptr() as *const c_void,
        buf.ptr() as *mut c_void,
        1,
        abi::INT32,
        abi::MIN,
        comm,
        stream.raw() as CudaStream
    );
    wait_comm(comm, r, "ncclAllReduce of the setup flag")?;
    stream.synchronize(timeout()).map_err(e)?;
    let mut out = [0u8; 4];
    buf.copy_to_host(0, &mut out).map_err(e)?;
    Ok(i32::from_le_bytes(out) == 1)
}

impl Accel {
    /// Set up beside a real NCCL communicator (collective over all its ranks).
    pub fn over_real(comm: NcclComm) -> Result<Accel, AccelError> {
        mscclpp_exec::startup::mark("nccl: setting up beside the real communicator");
        let rank = query(comm, "rank")? as usize;
        let world = query(comm, "count")? as usize;
        let ordinal = query(comm, "device")?;
        if world < 2 {
            return Err(AccelError::NotAccelerated(format!("{world} rank(s): nothing to accelerate")));
        }
        let device = Device::open(ordinal as usize).map_err(AccelError::cuda(format!("opening GPU {ordinal}")))?;
        let mut id = [0u8; abi::UNIQUE_ID_BYTES];
        let mine = if rank == 0 { UniqueId::new().map_err(AccelError::runtime("bootstrap id")) } else { Ok(zero_id()) };
        if let Ok(u) = &mine {
            let text = u.to_text();
            let n = text.len().min(id.len() - 1);
            id[..n].copy_from_slice(&text.as_bytes()[..n]);
        }
        // Rank 0 sends an empty id when it could not make one; the others then fail to parse it, and all agree.
        real_broadcast(comm, &device, &mut id)?;
        mscclpp_exec::startup::mark("nccl: bootstrap id broadcast over NCCL");
        let built = parse_id(&id).and_then(|id| Accel::build(rank, world, device, &id));
        let agreed = real_agree(comm, &device, i32::from(built.is_ok()))?;
        mscclpp_exec::startup::mark("nccl: set-up agreed over NCCL");
        match (built, agreed) {
            (Ok(a), true) => Ok(a),
            (Ok(_), false) => Err(AccelError::NotAccelerated("another rank could not set up mscclpp".into())),
            (Err(e), _) => Err(e),
        }
    }

    /// Set up from our own id (no real NCCL in the process).
    pub fn standalone(rank: usize, world: usize, id: &[u8]) -> Result<Accel, AccelError> {
        let count = mscclpp_sys::driver::device_count().map_err(AccelError::cuda("counting GPUs"))?;
        if count == 0 {
            return Err(AccelError::NotAccelerated("no GPU visible".into()));
        }
        let device = Device::open(rank % count).map_err(AccelError::cuda(format!("opening GPU {}", rank % count)))?;
        Accel::build(rank, world, device, &parse_id(id)?)
    }

    fn build(rank: usize, world: usize, device: Device, id: &UniqueId) -> Result<Accel, AccelError> {
        let bootstrap = TcpBootstrap::new(rank, world, id, timeout()).map_err(AccelError::runtime("bootstrap"))?;
        // One node only: the plans are chosen for `ranks_per_node = world size`.
        let hosts = bootstrap.host_ids().map_err(AccelError::runtime("exchanging host ids"))?;
        if hosts.iter().any(|h| *h != hosts[rank]) {
            return Err(AccelError::NotAccelerated(format!(
                "the ranks are on several hosts ({hosts:?}); only single-node jobs are accelerated"
            )));
        }
        mscclpp_exec::startup::mark("nccl: bootstrap joined");
        let comm = Communicator::new(Arc::new(bootstrap), device).map_err(AccelError::runtime("communicator"))?;
        // This machine's tuned table, when `mscclpp tune` wrote one (a stale one is ignored with a warning).
        // (All ranks are on this host, checked above: ranks per node is the world size, no second exchange.)
        let _ = mscclpp_exec::tune::table_key(&comm, world).and_then(|k| mscclpp_exec::tune::install_table_for(&k));
        let exec = Arc::new(Executor::new(Arc::new(comm)).map_err(AccelError::runtime("executor"))?);
        crate::user_plans::load_configured_dir();
        let source: frontend::PlanSource<Key> = Box::new(move |key: &Key| {
            // The user's plans first, then ours where the tuned table does not give the size to NCCL.
            let out_bytes = Executor::output_size(key.op.collective(), world as u64, key.in_bytes);
            if let Some(p) =
                crate::user_plans::find(key.op.collective(), world, key.in_bytes, out_bytes, key.reduce, key.root)
            {
                return Ok(p);
            }
            if policy::table_to_nccl(key.op, world, key.in_bytes, key.elem) {
                return Err(frontend::Decline::FallbackFaster);
            }
            select(world, *key).ok_or_else(|| frontend::Decline::NoPlan("no registered program runs it".into()))
        });
        let frontend = Frontend::new(exec, source, policy::settings()).map_err(AccelError::runtime("collectives"))?;
        mscclpp_exec::startup::mark("nccl: communicator, executor and runtime made");
        Ok(Accel { rank, world, device, frontend })
    }

    /// Forget the last call's stream, so dropping does not wait for it (`ncclCommAbort`: the work may hang).
    pub fn abandon(&mut self) {
        self.frontend.abandon();
    }

    /// What `ncclCommGetAsyncError` polls: the report of an expired device wait of our kernels, if any.
    pub fn probe(&self) -> crate::state::Probe {
        self.frontend.error_probe()
    }

    /// Rank, world size and GPU ordinal.
    pub fn info(&self) -> (usize, usize, usize) {
        (self.rank, self.world, self.device.ordinal())
    }

    /// Run `call`, or say it must go to NCCL.
    pub fn run(&mut self, call: &Call) -> Outcome {
        let w = self.world as u64;
        let (in_bytes, out_bytes) = io_bytes(call.op, call.piece_bytes, w);
        if in_bytes == 0 {
            // Nothing to move (NCCL accepts a count of 0 too): counted as ours, with no copy.
            return Outcome::Ran(abi::SUCCESS, Some(Path::ZeroCopy));
        }
        if policy::outside_window(call.op, self.world, call.piece_bytes)
            && !crate::user_plans::covers(call.op.collective(), self.world, in_bytes, out_bytes)
        {
            return Outcome::Forward;
        }
        let root = if call.op == Op::Broadcast { call.root } else { 0 };
        if root >= self.world {
            // NCCL reports the bad root (or, without it, the forward says what is missing).
            return Outcome::Forward;
        }
        let key = Key { op: call.op, in_bytes, elem: call.elem, reduce: call.reduce, root };
        let fc = frontend::Call {
            key,
            collective: call.op.collective(),
            send: call.send,
            recv: call.recv,
            in_bytes,
            out_bytes,
            elem: call.elem,
            root,
            stream: call.stream as u64,
        };
        match self.frontend.run(&fc) {
            Ok(frontend::Outcome::Ran(path)) => Outcome::Ran(abi::SUCCESS, Some(path)),
            Ok(frontend::Outcome::Fallback(_)) => Outcome::Forward,
            Err(e) => Outcome::Ran(
                crate::state::fail(
                    nccl_result(e.kind()),
                    format!("mscclpp {} of {} B on rank {}: {e}", call.op.name(), in_bytes, self.rank),
                ),
                None,
            ),
        }
    }

    /// Calls per path on this communicator.
    pub fn counters(&self) -> Arc<frontend::Counters> {
        self.frontend.counters()
    }

    /// Take `w` as a symmetric window: calls on buffers inside it run any plan zero copy. A window we cannot use
    /// (memory no peer can map) is said on stderr and left to NCCL; calls inside it take the other paths.
    pub fn add_window(&mut self, base: u64, size: u64) {
        if let Err(e) = self.frontend.add_window(base, size) {
            eprintln!("mscclpp-nccl: rank {}: window of {size} B at {base:#x} left to NCCL: {e}", self.rank);
        }
    }

    /// Forget the symmetric window starting at `base`.
    pub fn remove_window(&mut self, base: u64) {
        if let Err(e) = self.frontend.remove_window(base) {
            eprintln!("mscclpp-nccl: rank {}: deregistering the window at {base:#x}: {e}", self.rank);
        }
    }
}

/// Input and output bytes of `op` for a piece of `piece` bytes on `world` ranks.
fn io_bytes(op: Op, piece: u64, world: u64) -> (u64, u64) {
    match op {
        Op::AllGather => (piece, piece * world),
        Op::ReduceScatter => (piece * world, piece),
        Op::AllReduce | Op::Broadcast => (piece, piece),
    }
}

fn zero_id() -> UniqueId {
    UniqueId { addr: std::net::SocketAddr::from(([0, 0, 0, 0], 0)), secret: [0; 32], port_span: 1 }
}

/// Our bootstrap id from the NUL-terminated text in `bytes`.
pub fn parse_id(bytes: &[u8]) -> Result<UniqueId, AccelError> {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    let text =
        std::str::from_utf8(&bytes[..end]).map_err(|_| AccelError::BadId("the bootstrap id is not text".into()))?;
    if text.is_empty() {
        return Err(AccelError::BadId("rank 0 could not create a bootstrap id".into()));
    }
    UniqueId::from_text(text).map_err(|e| AccelError::BadId(format!("bootstrap id {text:?}: {e}")))
}

/// Our bootstrap id as the 128 bytes of an `ncclUniqueId` (NUL-terminated text).
pub fn id_bytes(id: &UniqueId) -> [u8; abi::UNIQUE_ID_BYTES] {
    let mut out = [0u8; abi::UNIQUE_ID_BYTES];
    let text = id.to_text();
    let n = text.len().min(out.len() - 1);
    out[..n].copy_from_slice(&text.as_bytes()[..n]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_id_round_trips_through_the_nccl_id_bytes() {
        let id = UniqueId::from_addr("10.1.2.3:4567".parse().unwrap(), "job");
        let bytes = id_bytes(&id);
        assert_eq!(bytes.len(), abi::UNIQUE_ID_BYTES);
        assert_eq!(parse_id(&bytes).unwrap(), id);
        let v6 = UniqueId::from_addr("[fe80::1234:5678:9abc:def0]:65535".parse().unwrap(), "job");
        assert_eq!(parse_id(&id_bytes(&v6)).unwrap(), v6);
        let err = parse_id(&[0u8; abi::UNIQUE_ID_BYTES]).unwrap_err().to_string();
        assert!(err.contains("rank 0 could not create"), "{err}");
        assert!(parse_id(b"garbage\0").is_err());
    }
}
