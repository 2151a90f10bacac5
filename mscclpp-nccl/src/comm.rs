//! What we keep beside each communicator, keyed by its handle ([`CommState`]: the accelerated path, its
//! windows, its call counts, its asynchronous error), and the calls that go through it: whether a collective is
//! ours to run (setting the accelerated path up at the first eligible call), symmetric windows, the kernel
//! watcher.
//!
//! Locks: the map is an `RwLock` held only to look up, insert or remove an `Arc`; nothing blocking ever runs
//! under it, so `ncclCommGetAsyncError` (polled by torch's watchdog and by NCCL itself) stays cheap. The
//! accelerated path of one communicator has its own mutex ([`Slot`]).

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use mscclpp_exec::frontend::Path;
use mscclpp_sys::driver::{Device, Stream};

use crate::abi::{self, CudaStream, NcclComm};
use crate::accel::{Accel, Call, Outcome, Slot, query};
use crate::policy::{self, Op};
use crate::state::{AsyncError, LOG_EVERY, OPS, ROUTES, count_total, log_info, render, totals};

/// A symmetric window registered on a communicator (`ncclCommWindowRegister` with `NCCL_WIN_COLL_SYMMETRIC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowEntry {
    /// The window handle the application holds.
    pub handle: usize,
    /// First byte.
    pub base: u64,
    /// Bytes.
    pub size: u64,
}

/// What we keep for one communicator.
pub struct CommState {
    /// The handle the application holds.
    pub handle: usize,
    /// Whether the handle is a real NCCL communicator (else it is ours: no real NCCL in the process).
    pub real: bool,
    /// An error of ours that `ncclCommGetAsyncError` reports.
    pub async_error: AsyncError,
    /// Calls per [`Op`] and route (our paths, then NCCL).
    pub routes: [[AtomicU64; ROUTES]; OPS],
    /// The accelerated path (set up at the first eligible call).
    pub accel: Mutex<Slot>,
    /// Its symmetric windows, handed to the accelerated path when it is set up (and as they come after).
    pub windows: Mutex<Vec<WindowEntry>>,
}

impl CommState {
    /// Fresh state for `handle`.
    pub fn new(handle: usize, real: bool, slot: Slot) -> Self {
        CommState {
            handle,
            real,
            async_error: AsyncError::default(),
            routes: Default::default(),
            accel: Mutex::new(slot),
            windows: Mutex::new(Vec::new()),
        }
    }

    /// Count one call of `op` that ran on `path` (`None`: NCCL); under `MSCCLPP_NCCL_LOG=info`, print the counts
    /// every [`LOG_EVERY`] calls of the communicator (an application may never destroy it).
    pub fn count(&self, op: Op, path: Option<Path>) {
        let r = count_total(op, path);
        let n = self.routes[op as usize][r].fetch_add(1, Ordering::Relaxed) + 1;
        if log_info() && n.is_multiple_of(LOG_EVERY) {
            eprintln!("mscclpp-nccl: communicator {:#x}: {}", self.handle, self.summary());
        }
    }

    /// The counts of this communicator, op-major, route-minor.
    pub fn counts(&self) -> [u64; OPS * ROUTES] {
        let mut out = [0; OPS * ROUTES];
        for (o, row) in self.routes.iter().enumerate() {
            for (r, c) in row.iter().enumerate() {
                out[o * ROUTES + r] = c.load(Ordering::Relaxed);
            }
        }
        out
    }

    /// One line per operation: `allreduce: 12 mscclpp (10 zero-copy, 0 registered, 2 staged, 0 window), 3 nccl`.
    pub fn summary(&self) -> String {
        render(&self.counts())
    }
}

type Map = HashMap<usize, Arc<CommState>>;

fn map() -> &'static RwLock<Map> {
    static MAP: OnceLock<RwLock<Map>> = OnceLock::new();
    MAP.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Our state for `comm`, if we know it.
pub fn lookup(comm: NcclComm) -> Option<Arc<CommState>> {
    let m = map().read().ok()?;
    m.get(&(comm as usize)).cloned()
}

/// Remember `state` under its handle.
pub fn insert(state: CommState) {
    if log_info() {
        static AT_EXIT: OnceLock<()> = OnceLock::new();
        AT_EXIT.get_or_init(|| {
            // SAFETY: registers a plain extern "C" function with no arguments, as atexit requires.
            unsafe { libc::atexit(print_at_exit) };
        });
    }
    if let Ok(mut m) = map().write() {
        m.insert(state.handle, Arc::new(state));
    }
}

/// Start (once per process) the thread that watches every communicator's kernels: when a device wait of ours
/// expires, the error is recorded for `ncclCommGetAsyncError` and said on stderr at once, naming the rank, peer,
/// plan and operation, even when the application meets the failure first elsewhere (a synchronize that returns
/// "unspecified launch failure") and never asks NCCL why.
pub fn start_watcher() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let spawned = std::thread::Builder::new().name("mscclpp-nccl-watch".into()).spawn(|| {
            loop {
                std::thread::sleep(std::time::Duration::from_millis(50));
                let states: Vec<Arc<CommState>> = match map().try_read() {
                    Ok(m) => m.values().cloned().collect(),
                    Err(_) => continue,
                };
                for st in states {
                    if st.async_error.get() != abi::SUCCESS {
                        continue;
                    }
                    let handle = st.handle;
                    if st.async_error.poll(|| format!("mscclpp-nccl: communicator {handle:#x}")) != abi::SUCCESS
                        && let Some(t) = crate::state::latest_error()
                    {
                        eprintln!("{t}");
                    }
                }
            }
        });
        if let Err(e) = spawned {
            eprintln!("mscclpp-nccl: could not start the kernel watcher thread: {e}");
        }
    });
}

/// At process exit (`MSCCLPP_NCCL_LOG=info`): the counts of every communicator still alive, and the totals.
extern "C" fn print_at_exit() {
    if let Ok(m) = map().try_read() {
        for st in m.values() {
            eprintln!("mscclpp-nccl: communicator {:#x} at exit: {}", st.handle, st.summary());
        }
    }
    eprintln!("mscclpp-nccl: process totals: {}", render(&totals()));
    let host = crate::state::host_times();
    if !host.is_empty() {
        eprintln!("mscclpp-nccl: host time per call inside the library: {host}");
    }
}

/// Forget `comm`, returning its state.
pub fn remove(comm: NcclComm) -> Option<Arc<CommState>> {
    map().write().ok()?.remove(&(comm as usize))
}

/// Remember a symmetric window of `state`'s communicator (and hand it to the accelerated path when it is set up).
pub fn add_window(state: &CommState, w: WindowEntry) {
    if let Ok(mut list) = state.windows.lock() {
        list.push(w);
    }
    if let Ok(mut slot) = state.accel.lock()
        && let Slot::Ready(a) = &mut *slot
    {
        a.add_window(w.base, w.size);
    }
}

/// Forget the symmetric window `handle` of `state`'s communicator (nothing when it is not one of ours).
pub fn remove_window(state: &CommState, handle: usize) {
    let gone = state.windows.lock().ok().and_then(|mut list| {
        let at = list.iter().position(|w| w.handle == handle)?;
        Some(list.remove(at))
    });
    if let Some(w) = gone
        && let Ok(mut slot) = state.accel.lock()
        && let Slot::Ready(a) = &mut *slot
    {
        a.remove_window(w.base);
    }
}

/// Run `call` on `state`'s communicator if it is ours to run.
pub fn try_run(state: &CommState, call: &Call) -> Outcome {
    if policy::forced(call.op) || (crate::real::available() && crate::group::depth() > 0) {
        return Outcome::Forward;
    }
    if call.piece_bytes > policy::window_bound(call.op) {
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

/// How many calls on `comm` ran zero copy (on the application's buffers, nothing registered), when the
/// communicator is ours and set up; for tests and diagnostics.
pub fn zero_copy_calls(comm: NcclComm) -> Option<u64> {
    let st = lookup(comm)?;
    if !matches!(&*st.accel.lock().ok()?, Slot::Ready(_)) {
        return None;
    }
    let counts = st.counts();
    Some(Op::ALL.iter().map(|&op| counts[op as usize * ROUTES + Path::ZeroCopy as usize]).sum())
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
            Ok(mut a) => {
                for w in state.windows.lock().map(|l| l.clone()).unwrap_or_default() {
                    a.add_window(w.base, w.size);
                }
                state.async_error.watch(a.probe());
                start_watcher();
                Slot::Ready(Box::new(a))
            }
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

/// Start loading our interpreter for a communicator NCCL just made, on a thread of its own, so that the setup at
/// its first collective finds it loaded (the load overlaps NCCL's own connection setup there). Only for
/// communicators we may accelerate: two ranks or more, not every collective forced to NCCL.
pub fn warm_up(comm: NcclComm) {
    if Op::ALL.iter().all(|&op| policy::forced(op)) {
        return;
    }
    let (Ok(rank), Ok(world), Ok(ordinal)) = (query(comm, "rank"), query(comm, "count"), query(comm, "device")) else {
        return;
    };
    if world < 2 {
        return;
    }
    if let Ok(device) = Device::open(ordinal as usize) {
        mscclpp_exec::executor::warm_up(device, rank as usize);
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

    #[test]
    fn states_are_found_by_handle_and_counted() {
        insert(CommState::new(0x1234, true, Slot::default()));
        let s = lookup(0x1234 as NcclComm).expect("inserted");
        let before = totals();
        s.count(Op::AllReduce, Some(Path::ZeroCopy));
        s.count(Op::AllReduce, Some(Path::Staged));
        s.count(Op::AllReduce, None);
        s.count(Op::AllGather, Some(Path::Window));
        s.count(Op::Broadcast, None);
        assert_eq!(
            s.summary(),
            "allreduce: 2 mscclpp (1 zero-copy, 0 registered, 1 staged, 0 window), 1 nccl; \
             allgather: 1 mscclpp (0 zero-copy, 0 registered, 0 staged, 1 window), 0 nccl; \
             reducescatter: 0 mscclpp (0 zero-copy, 0 registered, 0 staged, 0 window), 0 nccl; \
             broadcast: 0 mscclpp (0 zero-copy, 0 registered, 0 staged, 0 window), 1 nccl"
        );
        let after = totals();
        assert_eq!(ROUTES, 5);
        assert_eq!(after[0] - before[0], 1, "process totals count the zero-copy all-reduce");
        assert_eq!(after[ROUTES + 3] - before[ROUTES + 3], 1, "the all-gather in a window");
        assert_eq!(after[3 * ROUTES + 4] - before[3 * ROUTES + 4], 1, "and the forwarded broadcast");
        assert!(lookup(0x9999 as NcclComm).is_none());
        assert!(remove(0x1234 as NcclComm).is_some());
        assert!(lookup(0x1234 as NcclComm).is_none());
    }
}
