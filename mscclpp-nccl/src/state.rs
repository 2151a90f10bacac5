//! Process-wide state: the last error, calls per collective and route, and a communicator's asynchronous error
//! ([`AsyncError`]); what we keep per communicator is [`crate::comm`]'s.

use std::any::Any;
use std::collections::VecDeque;
use std::ffi::{CString, c_char};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use mscclpp_exec::frontend::Path;

use crate::abi::{self, NcclResult};
use crate::policy::Op;

/// The collectives we count, in [`Op`] order.
pub const OPS: usize = 4;

/// Where a call ran, in counter order: our paths ([`Path::ALL`]), then NCCL.
pub const ROUTES: usize = Path::ALL.len() + 1;

/// Calls per collective and route, over every communicator of the process (destroyed ones included).
static TOTALS: [[AtomicU64; ROUTES]; OPS] = [const { [const { AtomicU64::new(0) }; ROUTES] }; OPS];

/// Count one call of `op` on `path` (`None`: NCCL) in the process totals; its route index.
pub(crate) fn count_total(op: Op, path: Option<Path>) -> usize {
    let r = route(path);
    TOTALS[op as usize][r].fetch_add(1, Ordering::Relaxed);
    r
}

/// The route index of a call that ran on `path` (`None`: NCCL).
fn route(path: Option<Path>) -> usize {
    path.map_or(ROUTES - 1, |p| p as usize)
}

/// The process-wide counts, op-major ([`Op::ALL`]), route-minor (zero copy, registered, staged, window, NCCL).
pub fn totals() -> [u64; OPS * ROUTES] {
    let mut out = [0; OPS * ROUTES];
    for (o, row) in TOTALS.iter().enumerate() {
        for (r, c) in row.iter().enumerate() {
            out[o * ROUTES + r] = c.load(Ordering::Relaxed);
        }
    }
    out
}

/// Host time spent inside the library's collective functions, per collective and route (our paths, then NCCL): a
/// histogram of 0.1 µs buckets up to 200 µs (the last holds everything slower: first calls that set up), and the
/// total. Measured only under `MSCCLPP_NCCL_LOG=info` ([`host_clock`]).
const HOST_BUCKETS: usize = 2000;
/// Nanoseconds per histogram bucket.
const HOST_BUCKET_NS: u64 = 100;
struct HostTime {
    buckets: [AtomicU64; HOST_BUCKETS],
    total_ns: AtomicU64,
}
static HOST_TIME: [[HostTime; ROUTES]; OPS] = [const {
    [const { HostTime { buckets: [const { AtomicU64::new(0) }; HOST_BUCKETS], total_ns: AtomicU64::new(0) } }; ROUTES]
}; OPS];

/// The start of a collective call's host time, when it is measured (`MSCCLPP_NCCL_LOG=info`).
pub(crate) fn host_clock() -> Option<std::time::Instant> {
    log_info().then(std::time::Instant::now)
}

/// Add the host time of one call of `op` started at `start` ([`host_clock`]) that ran on `path` (`None`: it was
/// forwarded to NCCL, whose own host time is then what was measured, with our decision to forward).
pub(crate) fn add_host_time(op: Op, path: Option<Path>, start: Option<std::time::Instant>) {
    if let Some(t) = start {
        let ns = t.elapsed().as_nanos() as u64;
        let h = &HOST_TIME[op as usize][route(path)];
        h.buckets[((ns / HOST_BUCKET_NS) as usize).min(HOST_BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
        h.total_ns.fetch_add(ns, Ordering::Relaxed);
    }
}

/// Host time per call inside the library, per collective and route that ran: the median (to 0.1 µs) and the mean
/// (which first calls that set up raise), e.g. `allreduce: zero-copy median 2.1 us, mean 5.3 us (n=200), nccl
/// median 4.3 us, mean 4.4 us (n=200)`; empty when nothing was timed.
pub fn host_times() -> String {
    let names = Path::ALL.map(Path::name);
    let mut s = String::new();
    for op in Op::ALL {
        let parts: Vec<String> = names
            .iter()
            .chain(&["nccl"])
            .zip(&HOST_TIME[op as usize])
            .filter_map(|(name, h)| {
                let counts: Vec<u64> = h.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
                let n: u64 = counts.iter().sum();
                if n == 0 {
                    return None;
                }
                let mut seen = 0;
                let median = counts.iter().position(|&c| {
                    seen += c;
                    2 * seen >= n
                });
                let median_us = (median.unwrap_or(0) as u64 * HOST_BUCKET_NS + HOST_BUCKET_NS / 2) as f64 / 1e3;
                let mean_us = h.total_ns.load(Ordering::Relaxed) as f64 / n as f64 / 1e3;
                Some(format!("{name} median {median_us:.2} us, mean {mean_us:.2} us (n={n})"))
            })
            .collect();
        if !parts.is_empty() {
            let _ = write!(s, "{}{}: {}", if s.is_empty() { "" } else { "; " }, op.name(), parts.join(", "));
        }
    }
    s
}

/// One line per collective of `counts` (op-major, route-minor), e.g.
/// `allreduce: 12 mscclpp (10 zero-copy, 0 registered, 2 staged, 0 window), 3 nccl`.
pub fn render(counts: &[u64; OPS * ROUTES]) -> String {
    let mut s = String::new();
    for op in Op::ALL {
        let c = &counts[op as usize * ROUTES..][..ROUTES];
        let ours: u64 = c[..ROUTES - 1].iter().sum();
        let paths: Vec<String> = Path::ALL.iter().map(|p| format!("{} {}", c[*p as usize], p.name())).collect();
        let _ = write!(
            s,
            "{}{}: {ours} mscclpp ({}), {} nccl",
            if s.is_empty() { "" } else { "; " },
            op.name(),
            paths.join(", "),
            c[ROUTES - 1]
        );
    }
    s
}

/// Under `MSCCLPP_NCCL_LOG=info`, a communicator's counts are printed every this many calls of one kind and route,
/// at destroy, and at process exit.
pub const LOG_EVERY: u64 = 100_000;

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
            self.first(code);
        }
    }

    /// Record `code` if no error is recorded yet; whether this call recorded it.
    fn first(&self, code: NcclResult) -> bool {
        self.code.compare_exchange(abi::SUCCESS, code, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// The recorded error (`ncclSuccess`: none), without probing.
    pub fn get(&self) -> NcclResult {
        self.code.load(Ordering::Acquire)
    }

    /// The error to report now: the recorded one, else, when the probe reports an expired device wait,
    /// `ncclRemoteError` (a peer did not answer in time), with the report, prefixed by `context`, as the last
    /// error; else, once the process's CUDA context is lost, `ncclUnhandledCudaError`.
    pub fn poll(&self, context: impl FnOnce() -> String) -> NcclResult {
        let code = self.get();
        if code != abi::SUCCESS {
            return code;
        }
        let Some(probe) = self.probe.get() else { return code };
        match probe() {
            Some(report) if self.first(abi::REMOTE_ERROR) => {
                set_last_error(format!("{}: a device wait of ours timed out: {report}", context()));
            }
            // A kernel trapped or faulted without a report of ours (one that died outside a wait, or whose report
            // never landed): the communicator cannot run anything again.
            None if mscclpp_sys::driver::context_lost() && self.first(abi::UNHANDLED_CUDA_ERROR) => {
                set_last_error(format!(
                    "{}: the CUDA context of this process is lost (a kernel trapped or faulted; no device wait of \
                     ours reported a timeout): the communicator cannot be used again; abort it and restart the process",
                    context()
                ));
            }
            _ => {}
        }
        self.get()
    }
}

/// The newest error text we handed out, if any.
pub fn latest_error() -> Option<String> {
    let l = last_error().lock().ok()?;
    l.texts.back().map(|t| t.to_string_lossy().into_owned())
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
    fn host_times_are_means_per_collective_and_route() {
        let start = std::time::Instant::now().checked_sub(std::time::Duration::from_micros(3));
        assert!(start.is_some());
        add_host_time(Op::Broadcast, Some(Path::Registered), start);
        add_host_time(Op::Broadcast, None, start);
        add_host_time(Op::Broadcast, None, None); // not measured: not counted
        let text = host_times();
        let line = text.split("; ").find(|l| l.starts_with("broadcast: ")).unwrap_or_default();
        assert!(
            line.contains("registered median ") && line.contains("nccl median ") && line.contains("(n=1)"),
            "{text}"
        );
        assert!(!line.contains("staged"), "a route without calls is not listed: {text}");
        let after = |key: &str| -> f64 {
            line.split(key).nth(1).and_then(|r| r.split(' ').next()).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        };
        assert!(after("registered median ") >= 3.0 && after("mean ") >= 3.0, "{text}");
        // The exported copy: its length, then the line itself, cut to the buffer with a NUL.
        // SAFETY: NULL with length 0 only asks for the length.
        let n = unsafe { crate::mscclpp_nccl_host_times(std::ptr::null_mut(), 0) };
        assert!(n >= text.len() && n > 0);
        let mut buf = vec![1 as std::ffi::c_char; 12];
        // SAFETY: `buf` has 12 writable bytes.
        assert_eq!(unsafe { crate::mscclpp_nccl_host_times(buf.as_mut_ptr(), buf.len()) }, n);
        assert_eq!(buf[11], 0);
        let cut: Vec<u8> = buf[..11].iter().map(|&c| c as u8).collect();
        assert!(host_times().as_bytes().starts_with(&cut), "{cut:?}");
    }

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
}
