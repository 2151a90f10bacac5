//! The proxy service: GPU threads push triggers into a FIFO in pinned host memory; one host thread pops them and
//! performs the copies, signals and flushes on the connections (copy engine for CUDA IPC).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use mscclpp_sys::driver::{Device, DeviceMemory, DevicePtr, PinnedHostMemory};
use mscclpp_sys::handles::{
    BasePortChannelDeviceHandle, FifoDeviceHandle, PortChannelDeviceHandle, ProxyTrigger, TRIGGER_DATA, TRIGGER_FLAG,
    TRIGGER_SYNC, Trigger,
};

use crate::error::{Error, Result};
use crate::memory::{RegisteredMemory, RemoteMemory};
use crate::semaphore::Host2DeviceSemaphore;

/// Default number of FIFO slots.
pub const DEFAULT_FIFO_SIZE: u32 = 512;

/// The FIFO: triggers and the completed count (`tail`) in pinned host memory, the reservation counter (`head`)
/// and the GPU's tail cache in device memory.
#[derive(Debug)]
pub struct Fifo {
    host: PinnedHostMemory,
    dev: DeviceMemory,
    size: u32,
    log2: u32,
}

impl Fifo {
    /// A FIFO of `size` slots (a power of two).
    pub fn new(device: &Device, size: u32) -> Result<Self> {
        if size == 0 || !size.is_power_of_two() || size > 1 << 20 {
            return Err(Error::InvalidArgument(format!("FIFO size {size} must be a power of two up to 2^20")));
        }
        // Layout of the pinned block: [triggers: size * 16][tail: 8, on its own 64-byte line].
        let host = PinnedHostMemory::zeroed(device, size as usize * 16 + 64)?;
        let dev = DeviceMemory::zeroed(device, 64)?;
        Ok(Fifo { host, dev, size, log2: size.trailing_zeros() })
    }

    fn tail_offset(&self) -> usize {
        self.size as usize * 16
    }

    /// The device handle.
    pub fn device_handle(&self) -> FifoDeviceHandle {
        FifoDeviceHandle {
            triggers: self.host.device_ptr(),
            tail: self.host.device_ptr() + self.tail_offset() as u64,
            head: self.dev.ptr(),
            tail_cache: self.dev.ptr() + 8,
            size: self.size,
            log2_size: self.log2,
        }
    }

    /// Non-blocking: the trigger at position `tail`, if the GPU has published it.
    pub fn poll(&self, tail: u64) -> Result<Option<Trigger>> {
        let slot = ((tail & (self.size as u64 - 1)) * 16) as usize;
        let snd = self.host.atomic_u64(slot + 8)?.load(Ordering::Acquire);
        if snd & (1 << 63) != ProxyTrigger::parity_for(tail, self.log2) {
            return Ok(None);
        }
        let fst = self.host.atomic_u64(slot)?.load(Ordering::Acquire);
        Ok(Some(ProxyTrigger { fst, snd }.decode()))
    }

    /// Publish that every trigger before `tail` is complete.
    pub fn set_tail(&self, tail: u64) -> Result<()> {
        self.host.atomic_u64(self.tail_offset())?.store(tail, Ordering::Release);
        Ok(())
    }
}

/// A memory the proxy can name in triggers.
#[derive(Debug, Clone)]
enum ProxyMemory {
    Local { ptr: DevicePtr, size: u64 },
    Remote(Arc<RemoteMemory>),
}

impl ProxyMemory {
    fn resolve(&self, off: u64, len: u64, what: &str) -> Result<DevicePtr> {
        let (ptr, size) = match self {
            ProxyMemory::Local { ptr, size } => (*ptr, *size),
            ProxyMemory::Remote(r) => (r.ptr(), r.size()),
        };
        if ptr == 0 {
            return Err(Error::Unsupported(format!("{what} memory is on another host and not mapped here")));
        }
        if off.checked_add(len).is_none_or(|e| e > size) {
            return Err(Error::InvalidArgument(format!("{what} range {off}+{len} overruns a {size}-byte memory")));
        }
        Ok(ptr + off)
    }
}

struct Tables {
    semaphores: Vec<Arc<Host2DeviceSemaphore>>,
    memories: Vec<ProxyMemory>,
}

/// Owns the FIFO, the semaphores and memories that triggers name, and the proxy thread.
pub struct ProxyService {
    device: Device,
    fifo: Arc<Fifo>,
    tables: Tables,
    thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    error: Arc<Mutex<Option<String>>>,
    handled: Arc<AtomicU64>,
    stats: Arc<StatsCells>,
}

/// Where the proxy thread spends its time (host CPU time inside driver calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Triggers handled.
    pub triggers: u64,
    /// Nanoseconds spent queuing copies.
    pub data_ns: u64,
    /// Nanoseconds spent queuing signals.
    pub flag_ns: u64,
    /// Nanoseconds spent in flushes (waiting for the copies).
    pub sync_ns: u64,
}

#[derive(Debug, Default)]
struct StatsCells {
    data_ns: AtomicU64,
    flag_ns: AtomicU64,
    sync_ns: AtomicU64,
}

impl std::fmt::Debug for ProxyService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyService")
            .field("device", &self.device.ordinal())
            .field("semaphores", &self.tables.semaphores.len())
            .field("memories", &self.tables.memories.len())
            .field("running", &self.thread.is_some())
            .finish()
    }
}

impl ProxyService {
    /// A stopped service with a FIFO of [`DEFAULT_FIFO_SIZE`] slots.
    pub fn new(device: &Device) -> Result<Self> {
        Self::with_fifo_size(device, DEFAULT_FIFO_SIZE)
    }

    /// A stopped service with a FIFO of `size` slots.
    pub fn with_fifo_size(device: &Device, size: u32) -> Result<Self> {
        Ok(ProxyService {
            device: *device,
            fifo: Arc::new(Fifo::new(device, size)?),
            tables: Tables { semaphores: Vec::new(), memories: Vec::new() },
            thread: None,
            stop: Arc::new(AtomicBool::new(false)),
            error: Arc::new(Mutex::new(None)),
            handled: Arc::new(AtomicU64::new(0)),
            stats: Arc::new(StatsCells::default()),
        })
    }

    fn not_running(&self) -> Result<()> {
        if self.thread.is_some() {
            return Err(Error::InvalidArgument(
                "the proxy service is running: add semaphores and memories before start()".into(),
            ));
        }
        Ok(())
    }

    /// Add a semaphore; returns its id (used by triggers).
    pub fn add_semaphore(&mut self, sem: Arc<Host2DeviceSemaphore>) -> Result<u32> {
        self.not_running()?;
        if self.tables.semaphores.len() >= 1024 {
            return Err(Error::InvalidArgument("at most 1024 semaphores per proxy service".into()));
        }
        self.tables.semaphores.push(sem);
        Ok(self.tables.semaphores.len() as u32 - 1)
    }

    /// Add a local registered memory (a source of puts); returns its id.
    pub fn add_memory(&mut self, mem: &RegisteredMemory) -> Result<u32> {
        self.push_memory(ProxyMemory::Local { ptr: mem.ptr(), size: mem.size() })
    }

    /// Add a peer's memory (a destination of puts); returns its id.
    pub fn add_remote_memory(&mut self, mem: Arc<RemoteMemory>) -> Result<u32> {
        self.push_memory(ProxyMemory::Remote(mem))
    }

    fn push_memory(&mut self, m: ProxyMemory) -> Result<u32> {
        self.not_running()?;
        if self.tables.memories.len() >= 512 {
            return Err(Error::InvalidArgument("at most 512 memories per proxy service".into()));
        }
        self.tables.memories.push(m);
        Ok(self.tables.memories.len() as u32 - 1)
    }

    /// The device handle of a port channel with memories named per call.
    pub fn base_port_channel(&self, semaphore_id: u32) -> Result<BasePortChannelDeviceHandle> {
        let sem = self
            .tables
            .semaphores
            .get(semaphore_id as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("no semaphore {semaphore_id}")))?;
        Ok(BasePortChannelDeviceHandle {
            semaphore_id,
            reserved: 0,
            semaphore: sem.device_handle(),
            fifo: self.fifo.device_handle(),
        })
    }

    /// The device handle of a port channel from local memory `src` to remote memory `dst`.
    pub fn port_channel(&self, semaphore_id: u32, dst: u32, src: u32) -> Result<PortChannelDeviceHandle> {
        let b = self.base_port_channel(semaphore_id)?;
        for (id, what) in [(dst, "destination"), (src, "source")] {
            if id as usize >= self.tables.memories.len() {
                return Err(Error::InvalidArgument(format!("no {what} memory {id} in the proxy service")));
            }
        }
        Ok(PortChannelDeviceHandle {
            semaphore_id: b.semaphore_id,
            reserved: 0,
            semaphore: b.semaphore,
            fifo: b.fifo,
            dst,
            src,
        })
    }

    /// Start the proxy thread.
    pub fn start(&mut self) -> Result<()> {
        self.not_running()?;
        let fifo = self.fifo.clone();
        let sems = self.tables.semaphores.clone();
        let mems = self.tables.memories.clone();
        let stop = self.stop.clone();
        let error = self.error.clone();
        let handled = self.handled.clone();
        let stats = self.stats.clone();
        let device = self.device;
        stop.store(false, Ordering::Relaxed);
        let t = std::thread::Builder::new()
            .name("mscclpp-proxy".into())
            .spawn(move || {
                if let Err(e) = proxy_loop(&device, &fifo, &sems, &mems, &stop, &handled, &stats)
                    && let Ok(mut slot) = error.lock()
                {
                    tracing::error!("proxy thread stopped: {e}");
                    *slot = Some(e.to_string());
                }
            })
            .map_err(|e| Error::io("spawning the proxy thread", e))?;
        self.thread = Some(t);
        Ok(())
    }

    /// Stop and join the proxy thread; returns the error that stopped it, if any.
    pub fn stop(&mut self) -> Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.check()
    }

    /// The error that stopped the proxy thread, if any.
    pub fn check(&self) -> Result<()> {
        match self.error.lock().ok().and_then(|e| e.clone()) {
            Some(e) => Err(Error::Unsupported(format!("the proxy thread failed: {e}"))),
            None => Ok(()),
        }
    }

    /// Triggers handled so far.
    pub fn handled(&self) -> u64 {
        self.handled.load(Ordering::Relaxed)
    }

    /// Time spent by the proxy thread per kind of work.
    pub fn stats(&self) -> ProxyStats {
        ProxyStats {
            triggers: self.handled(),
            data_ns: self.stats.data_ns.load(Ordering::Relaxed),
            flag_ns: self.stats.flag_ns.load(Ordering::Relaxed),
            sync_ns: self.stats.sync_ns.load(Ordering::Relaxed),
        }
    }
}

impl Drop for ProxyService {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn proxy_loop(
    device: &Device,
    fifo: &Fifo,
    sems: &[Arc<Host2DeviceSemaphore>],
    mems: &[ProxyMemory],
    stop: &AtomicBool,
    handled: &AtomicU64,
    stats: &StatsCells,
) -> Result<()> {
    device.bind()?;
    let flush_timeout = mscclpp_sys::device_env::wait_timeout();
    let mut tail = 0u64;
    let mut idle = 0u32;
    loop {
        let Some(t) = fifo.poll(tail)? else {
            idle = idle.wrapping_add(1);
            if idle.is_multiple_of(1024) && stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            if idle > 1 << 20 {
                std::thread::sleep(Duration::from_micros(20));
            } else {
                std::hint::spin_loop();
            }
            continue;
        };
        idle = 0;
        let sem = sems.get(t.semaphore_id as usize).ok_or_else(|| {
            Error::InvalidArgument(format!("trigger names semaphore {} which does not exist", t.semaphore_id))
        })?;
        let conn = sem.connection();
        let t0 = std::time::Instant::now();
        if t.kind & TRIGGER_DATA != 0 && t.size > 0 {
            let src = mems
                .get(t.src as usize)
                .ok_or_else(|| Error::InvalidArgument(format!("trigger names source memory {}", t.src)))?;
            let dst = mems
                .get(t.dst as usize)
                .ok_or_else(|| Error::InvalidArgument(format!("trigger names destination memory {}", t.dst)))?;
            let src_ptr = src.resolve(t.src_offset, t.size, "source")?;
            match dst {
                ProxyMemory::Remote(r) => conn.write(r, t.dst_offset, src_ptr, 0, t.size)?,
                ProxyMemory::Local { .. } => {
                    let dst_ptr = dst.resolve(t.dst_offset, t.size, "destination")?;
                    conn.copy_local(dst_ptr, src_ptr, t.size)?;
                }
            }
        }
        let t1 = std::time::Instant::now();
        if t.kind & TRIGGER_FLAG != 0 {
            sem.signal()?;
        }
        let t2 = std::time::Instant::now();
        if t.kind & TRIGGER_SYNC != 0 {
            conn.flush(flush_timeout)?;
        }
        let t3 = std::time::Instant::now();
        stats.data_ns.fetch_add((t1 - t0).as_nanos() as u64, Ordering::Relaxed);
        stats.flag_ns.fetch_add((t2 - t1).as_nanos() as u64, Ordering::Relaxed);
        stats.sync_ns.fetch_add((t3 - t2).as_nanos() as u64, Ordering::Relaxed);
        tail += 1;
        fifo.set_tail(tail)?;
        handled.fetch_add(1, Ordering::Relaxed);
    }
}
