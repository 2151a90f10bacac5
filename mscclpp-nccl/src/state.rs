//! Our state beside each communicator, keyed by its handle; the last error; per-communicator call counts.
//!
//! Locks: the map is an `RwLock` held only to look up, insert or remove an `Arc`; nothing blocking ever runs
//! under it, so `ncclCommGetAsyncError` (polled by torch's watchdog and by NCCL itself) stays cheap. The
//! accelerated path of one communicator has its own mutex ([`crate::accel::Slot`]).

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::ffi::{CString, c_char};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use crate::abi::{self, NcclComm, NcclResult};
use crate::accel::Slot;
use crate::policy::Op;

/// The collectives we count, in [`Op`] order.
const OPS: usize = 4;

/// What we keep for one communicator.
pub struct CommState {
    /// The handle the application holds.
    pub handle: usize,
    /// Whether the handle is a real NCCL communicator (else it is ours: no real NCCL in the process).
    pub real: bool,
    /// An error of ours that `ncclCommGetAsyncError` reports.
    pub async_error: AsyncError,
    /// Calls we ran, per [`Op`].
    pub ours: [AtomicU64; OPS],
    /// Calls we forwarded to NCCL, per [`Op`].
    pub forwarded: [AtomicU64; OPS],
    /// The accelerated path (set up at the first eligible call).
    pub accel: Mutex<Slot>,
}

impl CommState {
    /// Fresh state for `handle`.
    pub fn new(handle: usize, real: bool, slot: Slot) -> Self {
        CommState {
            handle,
            real,
            async_error: AsyncError::default(),
            ours: Default::default(),
            forwarded: Default::default(),
            accel: Mutex::new(slot),
        }
    }

    /// Count one call of `op` that went to us (`ours`) or to NCCL.
    pub fn count(&self, op: Op, ours: bool) {
        let table = if ours { &self.ours } else { &self.forwarded };
        table[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// One line per operation: `allreduce: 12 mscclpp, 3 nccl`.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for op in Op::ALL {
            let (o, f) =
                (self.ours[op as usize].load(Ordering::Relaxed), self.forwarded[op as usize].load(Ordering::Relaxed));
            let _ = write!(s, "{}{}: {o} mscclpp, {f} nccl", if s.is_empty() { "" } else { "; " }, op.name());
        }
        s
    }
}

/// Reports an expired device wait of our kernels, if one happened (the executor's
/// [`mscclpp_exec::executor::Executor::device_error`]); must never block.
pub type Probe = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The asynchronous error of one communicator, as `ncclCommGetAsyncError` reports it: `ncclSuccess` until a
/// launch of ours fails ([`AsyncError::record`]) or a device wait of our kernels expires (seen by
/// [`AsyncError::poll`] through the probe), then that error for good. The first error wins. Lock-free: the
/// code is an atomic and the probe, set once, reads mapped host memory.
#[derive(Default)]
pub struct AsyncError {
    code: AtomicI32,
    probe: OnceLock<Probe>,
}

impl AsyncError {
    /// Watch the kernels `probe` reports on (set once; later calls are ignored).
    pub fn watch(&self, probe: Probe) {
        let _ = self.probe.set(probe);
    }

    /// Record `code` (a failed launch) unless an error is already recorded.
    pub fn record(&self, code: NcclResult) {
        if code != abi::SUCCESS {
            let _ = self.code.compare_exchange(abi::SUCCESS, code, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// The recorded error (`ncclSuccess`: none), without probing.
    pub fn get(&self) -> NcclResult {
        self.code.load(Ordering::Acquire)
    }

    /// The error to report now: the recorded one, else, when the probe reports an expired device wait,
    /// `ncclRemoteError` (a peer did not answer in time), with the report, prefixed by `context`, as the last
    /// error.
    pub fn poll(&self, context: impl FnOnce() -> String) -> NcclResult {
        let code = self.get();
        if code != abi::SUCCESS {
            return code;
        }
        if let Some(probe) = self.probe.get()
            && let Some(report) = probe()
            && self.code.compare_exchange(abi::SUCCESS, abi::REMOTE_ERROR, Ordering::AcqRel, Ordering::Acquire).is_ok()
        {
            set_last_error(format!("{}: a device wait of ours timed out: {report}", context()));
        }
        self.get()
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
    if let Ok(mut m) = map().write() {
        m.insert(state.handle, Arc::new(state));
    }
}

/// Forget `comm`, returning its state.
pub fn remove(comm: NcclComm) -> Option<Arc<CommState>> {
    map().write().ok()?.remove(&(comm as usize))
}

/// Whether `MSCCLPP_NCCL_LOG=info`.
pub fn log_info() -> bool {
    static INFO: OnceLock<bool> = OnceLock::new();
    *INFO.get_or_init(|| matches!(mscclpp_config::NCCL_LOG.get(), Ok(Some(_))))
}

/// The last error texts we handed out (older ones are kept a while, so a pointer a caller still holds stays
/// valid), and whether the newest is more recent than any error the real NCCL returned.
struct LastError {
    texts: VecDeque<CString>,
    ours_is_latest: AtomicBool,
}

/// How many old error texts stay valid.
const KEPT_ERRORS: usize = 64;

fn last_error() -> &'static Mutex<LastError> {
    static LAST: OnceLock<Mutex<LastError>> = OnceLock::new();
    LAST.get_or_init(|| Mutex::new(LastError { texts: VecDeque::new(), ours_is_latest: AtomicBool::new(false) }))
}

/// Record `msg` as the text `ncclGetLastError` returns.
pub fn set_last_error(msg: String) {
    let text = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    if let Ok(mut l) = last_error().lock() {
        if l.texts.len() >= KEPT_ERRORS {
            l.texts.pop_front();
        }
        l.texts.push_back(text);
        l.ours_is_latest.store(true, Ordering::Relaxed);
    }
}

/// Our latest error text, if it is newer than the real NCCL's.
pub fn our_last_error() -> Option<*const c_char> {
    let l = last_error().lock().ok()?;
    if !l.ours_is_latest.load(Ordering::Relaxed) {
        return None;
    }
    l.texts.back().map(|t| t.as_ptr())
}

/// Called with the result of every forwarded call: an error from the real NCCL makes its own last error the
/// one to report.
pub fn note_forwarded(result: &dyn Any) {
    if let Some(r) = result.downcast_ref::<NcclResult>()
        && *r != abi::SUCCESS
        && *r != abi::IN_PROGRESS
        && let Ok(l) = last_error().lock()
    {
        l.ours_is_latest.store(false, Ordering::Relaxed);
    }
}

/// Record `msg` and return `code` (for an exported function's error path).
pub fn fail(code: NcclResult, msg: String) -> NcclResult {
    set_last_error(msg);
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests that read the process-wide last error take this first.
    static LAST_ERROR_TESTS: Mutex<()> = Mutex::new(());

    #[test]
    fn last_error_keeps_a_bounded_history_and_yields_to_nccl() {
        let _one = LAST_ERROR_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..(KEPT_ERRORS + 10) {
            set_last_error(format!("error {i}"));
        }
        let p = our_last_error().expect("ours is the latest");
        // SAFETY: a pointer into a kept CString.
        let text = unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned();
        assert_eq!(text, format!("error {}", KEPT_ERRORS + 9));
        assert!(last_error().lock().unwrap().texts.len() <= KEPT_ERRORS);
        note_forwarded(&abi::INTERNAL_ERROR);
        assert!(our_last_error().is_none());
        set_last_error("again".into());
        assert!(our_last_error().is_some());
    }

    #[test]
    fn the_async_error_starts_clear_then_keeps_the_first_error() {
        let _one = LAST_ERROR_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let e = AsyncError::default();
        assert_eq!(e.poll(|| "comm".into()), abi::SUCCESS, "no probe, no error");
        let fired = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicU64::new(0));
        let (f, c) = (fired.clone(), calls.clone());
        e.watch(Arc::new(move || {
            c.fetch_add(1, Ordering::Relaxed);
            f.load(Ordering::Relaxed).then(|| "rank 0: LL packet read on channel 0 (peer rank 1)".to_string())
        }));
        assert_eq!(e.poll(|| "comm 0x1".into()), abi::SUCCESS, "the probe saw nothing");
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        fired.store(true, Ordering::Relaxed);
        assert_eq!(e.poll(|| "comm 0x1".into()), abi::REMOTE_ERROR);
        let p = our_last_error().expect("the report is the last error");
        // SAFETY: a pointer into a kept CString.
        let text = unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned();
        assert!(
            text.starts_with("comm 0x1: a device wait of ours timed out") && text.contains("peer rank 1"),
            "{text}"
        );
        // Sticky: the probe is not asked again, a later launch error does not replace it.
        e.record(abi::INTERNAL_ERROR);
        assert_eq!(e.poll(|| "comm 0x1".into()), abi::REMOTE_ERROR);
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        // A failed launch first: that error, and the probe is never consulted.
        let e = AsyncError::default();
        e.record(abi::SUCCESS);
        assert_eq!(e.get(), abi::SUCCESS, "success is not an error");
        e.record(abi::INTERNAL_ERROR);
        e.watch(Arc::new(|| panic!("not consulted once an error is recorded")));
        assert_eq!(e.poll(|| "comm".into()), abi::INTERNAL_ERROR);
    }

    #[test]
    fn states_are_found_by_handle_and_counted() {
        insert(CommState::new(0x1234, true, Slot::default()));
        let s = lookup(0x1234 as NcclComm).expect("inserted");
        s.count(Op::AllReduce, true);
        s.count(Op::AllReduce, false);
        s.count(Op::Broadcast, false);
        assert_eq!(
            s.summary(),
            "allreduce: 1 mscclpp, 1 nccl; allgather: 0 mscclpp, 0 nccl; reducescatter: 0 mscclpp, 0 nccl; broadcast: 0 mscclpp, 1 nccl"
        );
        assert!(lookup(0x9999 as NcclComm).is_none());
        assert!(remove(0x1234 as NcclComm).is_some());
        assert!(lookup(0x1234 as NcclComm).is_none());
    }
}
