//! Streams and events. Every host-side wait is bounded.

use std::time::{Duration, Instant};

use cudarc::driver::sys;

use super::{Device, DevicePtr, result};
use crate::error::{Error, Result};

/// A non-blocking CUDA stream owned by this value.
#[derive(Debug)]
pub struct Stream {
    device: Device,
    raw: sys::CUstream,
}

// SAFETY: CUstream handles may be used from any thread whose current context is the stream's; every method binds
// the context first.
unsafe impl Send for Stream {}
// SAFETY: the driver serialises operations on one stream internally.
unsafe impl Sync for Stream {}

/// Poll `done` until it returns true, the deadline passes, or `check_abort` reports an error.
fn poll_until(
    what: &dyn Fn() -> String,
    timeout: Duration,
    mut done: impl FnMut() -> Result<bool>,
    check_abort: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        if done()? {
            return Ok(());
        }
        check_abort()?;
        if start.elapsed() > timeout {
            return Err(Error::Timeout { what: what(), millis: timeout.as_millis() as u64 });
        }
        spins += 1;
        if spins < 2000 {
            std::hint::spin_loop();
        } else if spins < 4000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

impl Stream {
    /// Create a non-blocking stream on `device`.
    pub fn new(device: &Device) -> Result<Self> {
        device.bind()?;
        let raw = result::stream_create(sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)?;
        Ok(Stream { device: *device, raw })
    }

    /// Borrow a stream created elsewhere (e.g. by an application's CUDA runtime) on `device`; the returned
    /// value never destroys it.
    ///
    /// # Safety
    /// `raw` must be a live stream of `device`'s primary context (or null, the legacy default stream) for as
    /// long as the returned value is used.
    pub unsafe fn borrow_raw(device: &Device, raw: sys::CUstream) -> std::mem::ManuallyDrop<Stream> {
        std::mem::ManuallyDrop::new(Stream { device: *device, raw })
    }

    /// Whether the stream is being captured into a CUDA graph.
    pub fn is_capturing(&self) -> Result<bool> {
        self.device.bind()?;
        // SAFETY: `raw` is a live stream (or null).
        Ok(unsafe { result::stream_is_capturing(self.raw) }?)
    }

    /// The raw handle (for launches).
    pub fn raw(&self) -> sys::CUstream {
        self.raw
    }

    /// The GPU of this stream.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// True when all work queued so far has finished. Errors report a failed kernel.
    pub fn is_idle(&self) -> Result<bool> {
        // SAFETY: `raw` is a live stream.
        match unsafe { result::stream_query(self.raw) } {
            Ok(()) => Ok(true),
            Err(e) if e.code == sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Wait (bounded by `timeout`) for all queued work.
    pub fn synchronize(&self, timeout: Duration) -> Result<()> {
        self.synchronize_with(timeout, &mut || Ok(()))
    }

    /// Wait for all queued work, calling `check_abort` while waiting (e.g. to read a device error slot).
    pub fn synchronize_with(&self, timeout: Duration, check_abort: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        self.device.bind()?;
        let ordinal = self.device.ordinal();
        poll_until(&|| format!("a stream on GPU {ordinal} to finish its work"), timeout, || self.is_idle(), check_abort)
    }

    /// Queue an asynchronous device→device copy (`dst` and `src` may be peer-mapped addresses).
    pub fn copy_d2d(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller hands us addresses of live allocations (checked at channel construction); the copy
        // is ordered on this stream.
        Ok(unsafe { result::memcpy_dtod_async(dst, src, bytes, self.raw) }?)
    }

    /// Queue an asynchronous host→device copy from pinned memory.
    ///
    /// # Safety
    /// `src` must point to `bytes` bytes of pinned host memory that stay valid and unchanged until the copy
    /// has executed.
    pub unsafe fn copy_h2d_async(&self, dst: DevicePtr, src: *const u8, bytes: usize) -> Result<()> {
        // SAFETY: forwarded to the caller's contract.
        Ok(unsafe { result::memcpy_htod_async(dst, src.cast(), bytes, self.raw) }?)
    }

    /// Queue an asynchronous device→host copy into pinned memory.
    ///
    /// # Safety
    /// `dst` must point to `bytes` bytes of pinned host memory that stay valid until the copy has executed.
    pub unsafe fn copy_d2h_async(&self, dst: *mut u8, src: DevicePtr, bytes: usize) -> Result<()> {
        // SAFETY: forwarded to the caller's contract.
        Ok(unsafe { result::memcpy_dtoh_async(dst.cast(), src, bytes, self.raw) }?)
    }

    /// Queue a 64-bit store of `value` to `addr`, ordered after all prior work on the stream (with a memory
    /// barrier), as `cuStreamWriteValue64` does.
    pub fn write_value_u64(&self, addr: DevicePtr, value: u64) -> Result<()> {
        // SAFETY: `addr` is a live, 8-byte aligned device address (a semaphore token).
        Ok(unsafe { result::stream_write_value64(self.raw, addr, value) }?)
    }

    /// Queue an asynchronous memset.
    pub fn memset(&self, addr: DevicePtr, value: u8, bytes: usize) -> Result<()> {
        // SAFETY: the caller passes a live allocation of at least `bytes`.
        Ok(unsafe { result::memset_d8_async(addr, value, bytes, self.raw) }?)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if !super::context_lost() && self.device.bind().is_ok() {
            // SAFETY: destroyed once; pending work still completes per CUDA semantics.
            let _ = unsafe { result::stream_destroy(self.raw) };
        }
    }
}

/// A CUDA event, for timing work on a stream.
#[derive(Debug)]
pub struct Event {
    device: Device,
    raw: sys::CUevent,
}

// SAFETY: as for Stream.
unsafe impl Send for Event {}
// SAFETY: as for Stream.
unsafe impl Sync for Event {}

impl Event {
    /// Create a timing event.
    pub fn new(device: &Device) -> Result<Self> {
        device.bind()?;
        let raw = result::event_create(sys::CUevent_flags::CU_EVENT_DEFAULT as u32)?;
        Ok(Event { device: *device, raw })
    }

    /// Create an event for ordering only (no timing: cheaper to record and wait on).
    pub fn untimed(device: &Device) -> Result<Self> {
        device.bind()?;
        let raw = result::event_create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32)?;
        Ok(Event { device: *device, raw })
    }

    /// Whether the work before the event's last record has run (true for an event never recorded). Errors
    /// report a failed kernel.
    pub fn is_done(&self) -> Result<bool> {
        // SAFETY: live event.
        match unsafe { result::event_query(self.raw) } {
            Ok(()) => Ok(true),
            Err(e) if e.code == sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Record on `stream`.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are live.
        Ok(unsafe { result::event_record(self.raw, stream.raw) }?)
    }

    /// Make later work on `stream` wait until the work queued before this event's last record has run.
    pub fn wait_on(&self, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are live.
        Ok(unsafe { result::stream_wait_event(stream.raw, self.raw) }?)
    }

    /// Wait (bounded) until the event has completed.
    pub fn synchronize(&self, timeout: Duration) -> Result<()> {
        self.device.bind()?;
        poll_until(
            &|| "a CUDA event".to_string(),
            timeout,
            || {
                // SAFETY: live event.
                match unsafe { result::event_query(self.raw) } {
                    Ok(()) => Ok(true),
                    Err(e) if e.code == sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
                    Err(e) => Err(e.into()),
                }
            },
            &mut || Ok(()),
        )
    }

    /// Milliseconds between `start` and `self` (both must have completed).
    pub fn elapsed_ms_since(&self, start: &Event) -> Result<f32> {
        // SAFETY: both events are live and recorded.
        Ok(unsafe { result::event_elapsed_time(start.raw, self.raw) }?)
    }
}

/// How many timed runs a timing loop keeps queued ahead of the GPU ([`pace`]).
pub const RUNS_AHEAD: usize = 8;

/// Before queuing timed run `next` (whose end is `marks[next]`), wait (bounded by `timeout`) until run
/// `next - RUNS_AHEAD` has ended. A loop that queues thousands of launches without waiting fills the driver's queue
/// and then blocks inside the launch call with no timeout, and a context lost meanwhile (a kernel stopped by its
/// wait timeout) can crash the driver there; paced, the loop meets the error in this bounded wait instead. The
/// GPU still never idles: `RUNS_AHEAD - 1` runs stay queued.
pub fn pace(marks: &[Event], next: usize, timeout: Duration) -> Result<()> {
    match next.checked_sub(RUNS_AHEAD).and_then(|i| marks.get(i)) {
        Some(m) => m.synchronize(timeout),
        None => Ok(()),
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if !super::context_lost() && self.device.bind().is_ok() {
            // SAFETY: destroyed once.
            let _ = unsafe { result::event_destroy(self.raw) };
        }
    }
}

/// While alive, this thread may make calls a stream capture in the default (global) mode forbids (allocations,
/// synchronous copies, module loads): set-up work done on the first capture of a call. Restores the thread's
/// previous mode when dropped. Work queued on the capturing stream is still captured as usual.
#[derive(Debug)]
pub struct RelaxedCapture {
    previous: sys::CUstreamCaptureMode,
}

impl RelaxedCapture {
    /// Switch this thread to `CU_STREAM_CAPTURE_MODE_RELAXED` until the guard drops.
    pub fn begin() -> Result<Self> {
        let previous = result::thread_exchange_capture_mode(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)?;
        Ok(RelaxedCapture { previous })
    }
}

impl Drop for RelaxedCapture {
    fn drop(&mut self) {
        // In a lost context no driver call is safe; the thread's mode no longer matters then.
        if super::context_lost() {
            return;
        }
        let _ = result::thread_exchange_capture_mode(self.previous);
    }
}
