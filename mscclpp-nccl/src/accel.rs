//! The accelerated path of one communicator: our own communicator and executor beside the real NCCL one, two
//! staging buffers, and a plan per (collective, size, type, operator).
//!
//! Buffers: the caller's data is copied into our staging buffer on the caller's stream, the plan runs between
//! our two staging buffers, and the result is copied out. The executor therefore only ever sees the same two
//! allocations on every rank: no buffer of the application is registered, nothing is cached per torch
//! allocation, and ranks whose allocators differ can never disagree about a setup exchange.
//!
//! Setup (first eligible call, outside graph capture): rank 0 makes a TCP bootstrap id, the real NCCL
//! communicator broadcasts it (a 128-byte device buffer on a stream of ours), every rank joins the bootstrap and
//! builds a communicator, an executor and the staging buffers; then an all-reduce (min) of a success flag over
//! the real communicator makes every rank agree, so either all ranks accelerate or none does. Every wait is
//! bounded (`MSCCLPP_BOOTSTRAP_TIMEOUT_MS`).
//!
//! CUDA graphs: a call is captured only when the same (plan, size, type) already ran eagerly on this
//! communicator, so its context and device plan exist and capture allocates nothing; otherwise the call goes to
//! NCCL. Both decisions are the same on every rank (they depend only on the sequence of calls).

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::ffi::{c_int, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mscclpp_exec::bootstrap::{Bootstrap, TcpBootstrap, UniqueId};
use mscclpp_exec::executor::{ExecutionPlan, Executor};
use mscclpp_exec::{Communicator, GpuBuffer};
use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::{Plan, ReduceOp};
use mscclpp_lang::registry::{self, Request};
use mscclpp_sys::driver::{Device, DeviceMemory, DevicePtr, Event, Stream};
use mscclpp_sys::interpreter::{ElementType, PacketType};

use crate::abi::{self, CudaStream, NcclComm, NcclResult};
use crate::policy::{self, Op};
use crate::state::CommState;

/// The accelerated path of a communicator, in its state's mutex.
#[derive(Default)]
pub enum Slot {
    /// Not set up yet.
    #[default]
    Untried,
    /// Ready to run.
    Ready(Box<Accel>),
    /// Not available for this communicator (why); every call goes to NCCL.
    Off(String),
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
    /// Element type for the interpreter.
    pub elem: ElementType,
    /// Element type for the registry.
    pub dtype: DataType,
    /// Reduction (sum for collectives without one).
    pub reduce: ReduceOp,
    /// The caller's stream.
    pub stream: CudaStream,
}

/// Identity of a prepared plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    op: Op,
    in_bytes: u64,
    elem: ElementType,
    reduce: ReduceOp,
}

/// A plan ready to run, and whether it is an in-place plan.
struct Prepared {
    plan: ExecutionPlan,
    inplace: bool,
}

/// Our communicator, executor and staging buffers for one NCCL communicator.
pub struct Accel {
    rank: usize,
    world: usize,
    device: Device,
    exec: Executor,
    staging_in: GpuBuffer,
    staging_out: GpuBuffer,
    plans: HashMap<Key, Option<Prepared>>,
    /// Plans that ran eagerly at least once (and so may be captured).
    warmed: HashSet<Key>,
    /// The stream of the last call: a call on another stream first waits for it (the staging buffers are
    /// shared by every call of the communicator).
    last_stream: Option<usize>,
    /// Recorded on the last stream when the stream changes.
    order: Event,
}

/// What an eligible call turned into.
pub enum Outcome {
    /// Ours: the result to return.
    Ran(NcclResult),
    /// Not ours: forward to NCCL.
    Forward,
}

fn timeout() -> Duration {
    mscclpp_config::BOOTSTRAP_TIMEOUT_MS.get().unwrap_or(Duration::from_secs(30))
}

/// Wait, bounded, for a nonblocking communicator's pending operation to finish.
fn wait_comm(comm: NcclComm, first: NcclResult, what: &str) -> Result<(), String> {
    let start = Instant::now();
    let mut r = first;
    while r == abi::IN_PROGRESS {
        if start.elapsed() > timeout() {
            return Err(format!("{what}: NCCL still in progress after {:?}", timeout()));
        }
        std::thread::yield_now();
        let mut state = abi::SUCCESS;
        let q = crate::forward!("ncclCommGetAsyncError", fn(NcclComm, *mut NcclResult) -> NcclResult, comm, &mut state);
        r = if q != abi::SUCCESS { q } else { state };
    }
    if r == abi::SUCCESS { Ok(()) } else { Err(format!("{what}: NCCL returned {r}")) }
}

fn query(comm: NcclComm, name: &str) -> Result<c_int, String> {
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
fn real_broadcast(comm: NcclComm, device: &Device, bytes: &mut [u8]) -> Result<(), String> {
    let e = |e: mscclpp_sys::Error| format!("exchanging the bootstrap id over NCCL: {e}");
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
fn real_agree(comm: NcclComm, device: &Device, flag: i32) -> Result<bool, String> {
    let e = |e: mscclpp_sys::Error| format!("agreeing on the setup over NCCL: {e}");
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
    pub fn over_real(comm: NcclComm) -> Result<Accel, String> {
        let rank = query(comm, "rank")? as usize;
        let world = query(comm, "count")? as usize;
        let ordinal = query(comm, "device")?;
        if world < 2 {
            return Err(format!("{world} rank(s): nothing to accelerate"));
        }
        let device = Device::open(ordinal as usize).map_err(|e| format!("opening GPU {ordinal}: {e}"))?;
        let mut id = [0u8; abi::UNIQUE_ID_BYTES];
        let mine = if rank == 0 { UniqueId::new().map_err(|e| format!("bootstrap id: {e}")) } else { Ok(zero_id()) };
        if let Ok(u) = &mine {
            let text = u.to_text();
            let n = text.len().min(id.len() - 1);
            id[..n].copy_from_slice(&text.as_bytes()[..n]);
        }
        // Rank 0 sends an empty id when it could not make one; the others then fail to parse it, and all agree.
        real_broadcast(comm, &device, &mut id)?;
        let built = parse_id(&id).and_then(|id| Accel::build(rank, world, device, &id));
        let agreed = real_agree(comm, &device, i32::from(built.is_ok()))?;
        match (built, agreed) {
            (Ok(a), true) => Ok(a),
            (Ok(_), false) => Err("another rank could not set up mscclpp".into()),
            (Err(e), _) => Err(e),
        }
    }

    /// Set up from our own id (no real NCCL in the process).
    pub fn standalone(rank: usize, world: usize, id: &[u8]) -> Result<Accel, String> {
        let count = mscclpp_sys::driver::device_count().map_err(|e| format!("counting GPUs: {e}"))?;
        if count == 0 {
            return Err("no GPU visible".into());
        }
        let device = Device::open(rank % count).map_err(|e| format!("opening GPU {}: {e}", rank % count))?;
        Accel::build(rank, world, device, &parse_id(id)?)
    }

    fn build(rank: usize, world: usize, device: Device, id: &UniqueId) -> Result<Accel, String> {
        let bootstrap = TcpBootstrap::new(rank, world, id, timeout()).map_err(|e| format!("bootstrap: {e}"))?;
        // One node only: the plans are chosen for `ranks_per_node = world size`.
        let hosts = bootstrap
            .all_gather(mscclpp_exec::env::host_id().as_bytes())
            .map_err(|e| format!("exchanging host ids: {e}"))?;
        if hosts.iter().any(|h| *h != hosts[rank]) {
            let names: Vec<String> = hosts.iter().map(|h| String::from_utf8_lossy(h).into_owned()).collect();
            return Err(format!("the ranks are on several hosts ({names:?}); only single-node jobs are accelerated"));
        }
        let comm = Communicator::new(Arc::new(bootstrap), device).map_err(|e| format!("communicator: {e}"))?;
        // This machine's tuned table, when `mscclpp tune` wrote one (a stale one is ignored with a warning).
        let _ = mscclpp_exec::tune::install_tuned_table(&comm);
        let exec = Executor::new(Arc::new(comm)).map_err(|e| format!("executor: {e}"))?;
        // Room for the largest piece times the world size (an all-gather's output, a reduce-scatter's input).
        let bytes = policy::staging_bytes() as usize * world;
        let staging_in = GpuBuffer::new(&device, bytes).map_err(|e| format!("staging buffer: {e}"))?;
        let staging_out = GpuBuffer::new(&device, bytes).map_err(|e| format!("staging buffer: {e}"))?;
        let order = Event::new(&device).map_err(|e| format!("event: {e}"))?;
        Ok(Accel {
            rank,
            world,
            device,
            exec,
            staging_in,
            staging_out,
            plans: HashMap::new(),
            warmed: HashSet::new(),
            last_stream: None,
            order,
        })
    }

    /// Forget the last call's stream, so dropping does not wait for it (`ncclCommAbort`: the work may hang).
    pub fn abandon(&mut self) {
        self.last_stream = None;
    }

    /// Rank, world size and GPU ordinal.
    pub fn info(&self) -> (usize, usize, usize) {
        (self.rank, self.world, self.device.ordinal())
    }

    /// The plan for `key`, selected from the registry once (`None`: no program fits; NCCL runs it).
    fn prepare(&mut self, key: Key, dtype: DataType) -> Option<&Prepared> {
        let world = self.world;
        self.plans.entry(key).or_insert_with(|| select(world, key, dtype)).as_ref()
    }

    /// Run `call`, or say it must go to NCCL.
    pub fn run(&mut self, call: &Call) -> Outcome {
        let cap = self.staging_in.len().min(self.staging_out.len()) as u64;
        let w = self.world as u64;
        let (in_bytes, out_bytes) = match call.op {
            Op::AllGather => (call.piece_bytes, call.piece_bytes * w),
            Op::ReduceScatter => (call.piece_bytes * w, call.piece_bytes),
            Op::AllReduce | Op::Broadcast => (call.piece_bytes, call.piece_bytes),
        };
        if in_bytes == 0 || in_bytes > cap || out_bytes > cap {
            return Outcome::Forward;
        }
        if policy::tuned_to_nccl(call.op, self.world, in_bytes, call.dtype) {
            return Outcome::Forward;
        }
        let key = Key { op: call.op, in_bytes, elem: call.elem, reduce: call.reduce };
        // SAFETY: the application passes a live stream of the communicator's GPU (NCCL's own contract).
        let stream = unsafe { Stream::borrow_raw(&self.device, call.stream as mscclpp_sys::driver::RawStream) };
        let Ok(capturing) = stream.is_capturing() else { return Outcome::Forward };
        if capturing && !self.warmed.contains(&key) {
            return Outcome::Forward;
        }
        // Another stream than the last call's: order after it (outside a capture; a captured call on another
        // stream goes to NCCL, since a capture cannot wait on work recorded outside it).
        let switched = self.last_stream.is_some_and(|s| s != call.stream as usize);
        if switched && capturing {
            return Outcome::Forward;
        }
        let (rank, si, so) = (self.rank as u64, self.staging_in.ptr(), self.staging_out.ptr());
        if self.prepare(key, call.dtype).is_none() {
            return Outcome::Forward;
        }
        let Some(Some(p)) = self.plans.get(&key) else { return Outcome::Forward };
        // Where the input goes and where the plan reads and writes.
        let (copy_in, input, output, copy_out) = match (p.inplace, call.op) {
            (false, _) => (si, si, so, so),
            (true, Op::AllGather) => (so + rank * in_bytes, so + rank * in_bytes, so, so),
            (true, Op::ReduceScatter) => (so, so, so + rank * out_bytes, so + rank * out_bytes),
            (true, _) => (so, so, so, so),
        };
        // A broadcast reads the send buffer only at the root.
        let needs_input = call.op != Op::Broadcast || self.rank == 0;
        let (last, order) = (self.last_stream, &self.order);
        let result = (|| -> Result<(), String> {
            if switched && let Some(prev) = last {
                // SAFETY: the previous call's stream; the application keeps a stream alive while it uses the
                // communicator on it (a destroyed one makes the record fail, reported as an error).
                let prev = unsafe { Stream::borrow_raw(&self.device, prev as mscclpp_sys::driver::RawStream) };
                order.record(&prev).map_err(|e| e.to_string())?;
                order.wait_on(&stream).map_err(|e| e.to_string())?;
            }
            if needs_input {
                stream.copy_d2d(copy_in, call.send, in_bytes as usize).map_err(|e| e.to_string())?;
            }
            self.exec
                .execute(&p.plan, input, output, in_bytes, out_bytes, call.elem, PacketType::Ll16, &stream)
                .map_err(|e| e.to_string())?;
            stream.copy_d2d(call.recv, copy_out, out_bytes as usize).map_err(|e| e.to_string())
        })();
        match result {
            Ok(()) => {
                self.warmed.insert(key);
                self.last_stream = Some(call.stream as usize);
                Outcome::Ran(abi::SUCCESS)
            }
            Err(e) => Outcome::Ran(crate::state::fail(
                abi::INTERNAL_ERROR,
                format!("mscclpp {} of {} B on rank {}: {e}", call.op.name(), in_bytes, self.rank),
            )),
        }
    }
}

impl Drop for Accel {
    /// Our kernels may still run on the application's stream when the communicator is destroyed: wait
    /// (bounded) for the last call before the staging buffers and the executor's memory are freed.
    fn drop(&mut self) {
        if let Some(last) = self.last_stream {
            // SAFETY: the last call's stream; a stream the application already destroyed makes the record fail,
            // and then there is nothing of ours left to wait for on it.
            let stream = unsafe { Stream::borrow_raw(&self.device, last as mscclpp_sys::driver::RawStream) };
            if self.order.record(&stream).is_ok() {
                let _ = self.order.synchronize(timeout());
            }
        }
    }
}

fn zero_id() -> UniqueId {
    UniqueId { addr: std::net::SocketAddr::from(([0, 0, 0, 0], 0)), secret: [0; 32], port_span: 1 }
}

/// Our bootstrap id from the NUL-terminated text in `bytes`.
pub fn parse_id(bytes: &[u8]) -> Result<UniqueId, String> {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    let text = std::str::from_utf8(&bytes[..end]).map_err(|_| "the bootstrap id is not text".to_string())?;
    if text.is_empty() {
        return Err("rank 0 could not create a bootstrap id".into());
    }
    UniqueId::from_text(text).map_err(|e| format!("bootstrap id {text:?}: {e}"))
}

/// Our bootstrap id as the 128 bytes of an `ncclUniqueId` (NUL-terminated text).
pub fn id_bytes(id: &UniqueId) -> [u8; abi::UNIQUE_ID_BYTES] {
    let mut out = [0u8; abi::UNIQUE_ID_BYTES];
    let text = id.to_text();
    let n = text.len().min(out.len() - 1);
    out[..n].copy_from_slice(&text.as_bytes()[..n]);
    out
}

/// Set every reduction of `plan` to `op`.
pub fn set_reduce_op(plan: &mut Plan, op: ReduceOp) {
    for g in &mut plan.gpus {
        for tb in &mut g.threadblocks {
            for o in &mut tb.ops {
                if o.name.is_reduction() {
                    o.reduce_op = Some(op);
                }
                for inner in o.ops.iter_mut().flatten() {
                    if inner.name.is_reduction() {
                        inner.reduce_op = Some(op);
                    }
                }
            }
        }
    }
}

/// The registry's plan for `key` on `world` ranks (out of place first, then in place), or `None`.
fn select(world: usize, key: Key, dtype: DataType) -> Option<Prepared> {
    for inplace in [false, true] {
        let request = Request::new(key.op.collective(), world, key.in_bytes).inplace(inplace).dtype(dtype);
        let Ok(selected) = registry::select(&request) else { continue };
        let meta = selected.program;
        let tuned = if selected.by_tuned_table {
            Ok(selected.target)
        } else {
            meta.tuned_target(selected.target, request.plan_message_size())
        };
        let Ok(target) = tuned else { continue };
        let Ok(mut plan) = meta.build_plan(&target) else { continue };
        if key.reduce != ReduceOp::Sum {
            set_reduce_op(&mut plan, key.reduce);
        }
        if let Ok(plan) = ExecutionPlan::new(plan) {
            return Some(Prepared { plan, inplace });
        }
    }
    None
}

/// Run `call` on `state`'s communicator if it is ours to run.
pub fn try_run(state: &CommState, call: &Call) -> Outcome {
    if policy::forced(call.op) || (crate::real::available() && crate::group::depth() > 0) {
        return Outcome::Forward;
    }
    if call.piece_bytes > policy::window(call.op) {
        return Outcome::Forward;
    }
    // A call that reaches us from inside our own setup or launch (the real NCCL calls its exported functions
    // through the PLT, so our setup's NCCL calls can come back here) goes to NCCL: the slot's lock is held.
    if BUSY.with(Cell::get) {
        return Outcome::Forward;
    }
    let Ok(mut slot) = state.accel.lock() else { return Outcome::Forward };
    BUSY.with(|b| b.set(true));
    let out = run_locked(state, &mut slot, call);
    BUSY.with(|b| b.set(false));
    out
}

thread_local! {
    /// Whether this thread is inside [`try_run`] with a communicator's slot locked.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

fn run_locked(state: &CommState, slot: &mut Slot, call: &Call) -> Outcome {
    if matches!(*slot, Slot::Untried) {
        // Setup is collective and allocates: never during a capture (the call goes to NCCL, on every rank).
        if capturing_before_setup(state.handle as NcclComm, call.stream) {
            return Outcome::Forward;
        }
        *slot = match Accel::over_real(state.handle as NcclComm) {
            Ok(a) => Slot::Ready(Box::new(a)),
            Err(e) => {
                eprintln!("mscclpp-nccl: communicator {:#x}: not accelerated: {e}", state.handle);
                Slot::Off(e)
            }
        };
    }
    match slot {
        Slot::Ready(a) => a.run(call),
        _ => Outcome::Forward,
    }
}

/// Whether `stream` is being captured, asked before our setup (an error counts as capturing, so nothing is set
/// up).
fn capturing_before_setup(comm: NcclComm, stream: CudaStream) -> bool {
    let Ok(ordinal) = query(comm, "device") else { return true };
    let Ok(device) = Device::open(ordinal as usize) else { return true };
    // SAFETY: the application passes a live stream of the communicator's GPU (NCCL's own contract).
    let stream = unsafe { Stream::borrow_raw(&device, stream as mscclpp_sys::driver::RawStream) };
    stream.is_capturing().unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mscclpp_lang::registry::Target;
    use mscclpp_lang::verify::plan_reduce_op;

    #[test]
    fn the_bootstrap_id_round_trips_through_the_nccl_id_bytes() {
        let id = UniqueId::from_addr("10.1.2.3:4567".parse().unwrap(), "job");
        let bytes = id_bytes(&id);
        assert_eq!(bytes.len(), abi::UNIQUE_ID_BYTES);
        assert_eq!(parse_id(&bytes).unwrap(), id);
        let v6 = UniqueId::from_addr("[fe80::1234:5678:9abc:def0]:65535".parse().unwrap(), "job");
        assert_eq!(parse_id(&id_bytes(&v6)).unwrap(), v6);
        let err = parse_id(&[0u8; abi::UNIQUE_ID_BYTES]).unwrap_err();
        assert!(err.contains("rank 0 could not create"), "{err}");
        assert!(parse_id(b"garbage\0").is_err());
    }

    #[test]
    fn every_collective_has_a_plan_across_its_window() {
        let mut found = 0;
        for world in [2usize, 4, 8] {
            for op in Op::ALL {
                let (elem, dtype) = match op {
                    Op::AllReduce | Op::ReduceScatter => (ElementType::F16, DataType::F16),
                    _ => (ElementType::U8, DataType::U8),
                };
                for piece in [1024u64, 16 << 10, policy::window(op)] {
                    let in_bytes = if op == Op::ReduceScatter { piece * world as u64 } else { piece };
                    let key = Key { op, in_bytes, elem, reduce: ReduceOp::Sum };
                    let p = select(world, key, dtype)
                        .unwrap_or_else(|| panic!("no plan for {} of {in_bytes} B on {world} ranks", op.name()));
                    assert_eq!(p.plan.plan().world_size(), world);
                    found += 1;
                }
            }
        }
        assert_eq!(found, 3 * 4 * 3);
    }

    #[test]
    fn min_and_max_reach_every_reduction_of_the_plan() {
        let meta = registry::find("allreduce_oneshot_ll").unwrap();
        let mut plan = meta.build_plan(&Target::new(2)).unwrap();
        assert_eq!(plan_reduce_op(&plan), ReduceOp::Sum);
        set_reduce_op(&mut plan, ReduceOp::Max);
        assert_eq!(plan_reduce_op(&plan), ReduceOp::Max);
        let reductions = plan
            .gpus
            .iter()
            .flat_map(|g| &g.threadblocks)
            .flat_map(|tb| &tb.ops)
            .flat_map(|o| std::iter::once(o).chain(o.inner()))
            .filter(|o| o.name.is_reduction())
            .inspect(|o| assert_eq!(o.reduce(), ReduceOp::Max))
            .count();
        assert!(reductions > 0);
    }
}
