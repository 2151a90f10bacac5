//! The proxy service: GPU threads push triggers into a FIFO in pinned host memory; one host thread pops them and
//! performs the copies, signals and flushes on the connections (copy engine for CUDA IPC).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mscclpp_sys::driver::{Device, DeviceMemory, DevicePtr, PinnedHostMemory, as_bytes};
use mscclpp_sys::handles::{
    BasePortChannelDeviceHandle, FifoDeviceHandle, MemoryWindow, PortChannelDeviceHandle, PortDirectState,
    ProxyTrigger, TRIGGER_DATA, TRIGGER_FLAG, TRIGGER_SYNC, Trigger,
};

use crate::error::{Error, Result};
use crate::memory::{RegisteredMemory, RemoteMemory};
use crate::semaphore::Host2DeviceSemaphore;

/// Default number of FIFO slots.
pub const DEFAULT_FIFO_SIZE: u32 = 512;

/// Semaphores one proxy service can hold.
pub const MAX_SEMAPHORES: usize = 1024;
/// Memories one proxy service can hold (the trigger has 9 bits for a memory id).
pub const MAX_MEMORIES: usize = 512;

/// Default largest port-channel put that a GPU thread moves itself when the peer is on the same host
/// (`MSCCLPP_PORT_DIRECT_MAX` overrides it; 0 sends every put through the proxy).
/// One thread copies about 0.5 GB/s (latency-bound loads): on 2×H200 a 1 KiB putWithSignal round trip takes
/// 9.5 µs this way against 23 µs through the proxy, and the two paths cost the same at 4 KiB.
pub const DEFAULT_PORT_DIRECT_MAX: u64 = mscclpp_config::PORT_DIRECT_MAX.default;

/// The direct-path limit from `MSCCLPP_PORT_DIRECT_MAX` (a size as `mscclpp test --size` takes it: `2048`, `2K`,
/// ...), else the default.
pub fn port_direct_max() -> u64 {
    mscclpp_config::PORT_DIRECT_MAX.get().unwrap_or_else(|e| {
        tracing::warn!("{e}; using {DEFAULT_PORT_DIRECT_MAX}");
        DEFAULT_PORT_DIRECT_MAX
    })
}

/// The peer's direct token of `sem` as this GPU addresses it, when the direct path can apply (a peer on this
/// host); `None` between hosts.
fn direct_token(sem: &Host2DeviceSemaphore) -> Option<DevicePtr> {
    match sem.connection().transport() {
        crate::connection::Transport::CudaIpc => sem.remote_direct_token().filter(|t| *t != 0),
        _ => None,
    }
}

/// Whether port channels of `sem` use the direct path with the limit `max_bytes`.
fn uses_direct(sem: &Host2DeviceSemaphore, max_bytes: u64) -> bool {
    max_bytes != 0 && direct_token(sem).is_some()
}

/// Device memory of the direct path: one [`PortDirectState`] per semaphore, then the [`MemoryWindow`] table;
/// and the pinned host counters the proxy publishes (`done`, one per semaphore).
#[derive(Debug)]
struct DirectTables {
    dev: DeviceMemory,
    done: PinnedHostMemory,
}

impl DirectTables {
    const STATE: usize = std::mem::size_of::<PortDirectState>();

    fn new(device: &Device) -> Result<Self> {
        let len = MAX_SEMAPHORES * Self::STATE + MAX_MEMORIES * std::mem::size_of::<MemoryWindow>();
        Ok(DirectTables {
            dev: DeviceMemory::zeroed(device, len)?,
            done: PinnedHostMemory::zeroed(device, MAX_SEMAPHORES * 8)?,
        })
    }

    fn state_ptr(&self, semaphore_id: u32) -> DevicePtr {
        self.dev.ptr() + (semaphore_id as usize * Self::STATE) as u64
    }

    fn windows_offset() -> usize {
        MAX_SEMAPHORES * Self::STATE
    }

    /// Write the tables for these semaphores and memories (only while no kernel uses them).
    fn fill(&self, sems: &[Arc<Host2DeviceSemaphore>], mems: &[ProxyMemory], max_bytes: u64) -> Result<()> {
        let windows: Vec<MemoryWindow> = mems.iter().map(ProxyMemory::window).collect();
        let states: Vec<PortDirectState> = sems
            .iter()
            .enumerate()
            .map(|(i, sem)| {
                let token = direct_token(sem).unwrap_or(0);
                PortDirectState {
                    remote_direct_token: token,
                    memories: self.dev.ptr() + Self::windows_offset() as u64,
                    done: self.done.device_ptr() + (i * 8) as u64,
                    max_bytes: if token == 0 { 0 } else { max_bytes },
                    n_memories: windows.len() as u32,
                    ..PortDirectState::default()
                }
            })
            .collect();
        for i in 0..sems.len() {
            self.done.atomic_u64(i * 8)?.store(0, Ordering::Release);
        }
        self.dev.copy_from_host(0, as_bytes(&states))?;
        self.dev.copy_from_host(Self::windows_offset(), as_bytes(&windows))?;
        Ok(())
    }

    /// Publish that the first `n` triggers of semaphore `i` have completed.
    fn publish(&self, i: usize, n: u64) -> Result<()> {
        self.done.atomic_u64(i * 8)?.store(n, Ordering::Release);
        Ok(())
    }
}

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
    /// Where the memory lies in this process (`base` 0: on another host, not mapped here).
    fn window(&self) -> MemoryWindow {
        match self {
            ProxyMemory::Local { ptr, size } => MemoryWindow { base: *ptr, size: *size },
            ProxyMemory::Remote(r) => MemoryWindow { base: r.ptr(), size: r.size() },
        }
    }

    fn resolve(&self, off: u64, len: u64, what: &str) -> Result<DevicePtr> {
        let MemoryWindow { base: ptr, size } = self.window();
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
    direct: Arc<DirectTables>,
    direct_max: u64,
    tables: Tables,
    thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    error: Arc<Mutex<Option<String>>>,
    /// Statistics, kept only when asked for ([`ProxyService::enable_stats`]).
    stats: Option<Arc<StatsCells>>,
}

/// Where the proxy thread spends its time (host CPU time inside driver calls). Kept only when asked for
/// ([`ProxyService::enable_stats`]): they cost four clock reads and four atomic adds per trigger.
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
    triggers: AtomicU64,
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
            direct: Arc::new(DirectTables::new(device)?),
            direct_max: port_direct_max(),
            tables: Tables { semaphores: Vec::new(), memories: Vec::new() },
            thread: None,
            stop: Arc::new(AtomicBool::new(false)),
            error: Arc::new(Mutex::new(None)),
            stats: None,
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
        if self.tables.semaphores.len() >= MAX_SEMAPHORES {
            return Err(Error::InvalidArgument(format!("at most {MAX_SEMAPHORES} semaphores per proxy service")));
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
        if self.tables.memories.len() >= MAX_MEMORIES {
            return Err(Error::InvalidArgument(format!("at most {MAX_MEMORIES} memories per proxy service")));
        }
        self.tables.memories.push(m);
        Ok(self.tables.memories.len() as u32 - 1)
    }

    /// The device handle of a port channel with memories named per call. Its direct-path pointer is null when the
    /// direct path cannot apply (a peer on another host, or a limit of 0 set before this call): every operation
    /// then goes through the proxy, and the GPU does not count its triggers for the direct path.
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
            direct: if uses_direct(sem, self.direct_max) { self.direct.state_ptr(semaphore_id) } else { 0 },
        })
    }

    /// Override the direct-path limit (bytes; 0 sends every put through the proxy). Takes effect at start(); set
    /// it before taking channel handles so that with 0 they carry no direct-path pointer.
    pub fn set_direct_max(&mut self, bytes: u64) -> Result<()> {
        self.not_running()?;
        self.direct_max = bytes;
        Ok(())
    }

    /// Keep statistics from the next start() on: triggers handled and the time spent per kind of work
    /// ([`ProxyService::handled`], [`ProxyService::stats`]). Off by default.
    pub fn enable_stats(&mut self) -> Result<()> {
        self.not_running()?;
        if self.stats.is_none() {
            self.stats = Some(Arc::new(StatsCells::default()));
        }
        Ok(())
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
            direct: b.direct,
            dst,
            src,
        })
    }

    /// Start the proxy thread (while no kernel uses this service's channels).
    pub fn start(&mut self) -> Result<()> {
        self.not_running()?;
        self.direct.fill(&self.tables.semaphores, &self.tables.memories, self.direct_max)?;
        let direct = self.direct.clone();
        let fifo = self.fifo.clone();
        let sems = self.tables.semaphores.clone();
        let mems = self.tables.memories.clone();
        let stop = self.stop.clone();
        let error = self.error.clone();
        let stats = self.stats.clone();
        let device = self.device;
        let direct_max = self.direct_max;
        stop.store(false, Ordering::Relaxed);
        let t = std::thread::Builder::new()
            .name("mscclpp-proxy".into())
            .spawn(move || {
                let ctx = LoopCtx {
                    device: &device,
                    fifo: &fifo,
                    sems: &sems,
                    mems: &mems,
                    direct: &direct,
                    direct_max,
                    stats: stats.as_deref(),
                };
                if let Err(e) = proxy_loop(&ctx, &stop)
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

    /// Triggers handled so far (0 unless [`ProxyService::enable_stats`] was called before start()).
    pub fn handled(&self) -> u64 {
        self.stats.as_ref().map_or(0, |s| s.triggers.load(Ordering::Relaxed))
    }

    /// Time spent by the proxy thread per kind of work (all 0 unless [`ProxyService::enable_stats`] was called
    /// before start()).
    pub fn stats(&self) -> ProxyStats {
        let Some(s) = &self.stats else {
            return ProxyStats::default();
        };
        ProxyStats {
            triggers: s.triggers.load(Ordering::Relaxed),
            data_ns: s.data_ns.load(Ordering::Relaxed),
            flag_ns: s.flag_ns.load(Ordering::Relaxed),
            sync_ns: s.sync_ns.load(Ordering::Relaxed),
        }
    }
}

impl Drop for ProxyService {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

struct LoopCtx<'a> {
    device: &'a Device,
    fifo: &'a Fifo,
    sems: &'a [Arc<Host2DeviceSemaphore>],
    mems: &'a [ProxyMemory],
    direct: &'a DirectTables,
    direct_max: u64,
    stats: Option<&'a StatsCells>,
}

/// What the proxy has handled per semaphore of the direct path, and which of their connections may still have
/// copies in flight; completion is published to the GPU's direct path (`PortDirectState::done`). Semaphores
/// without the direct path are not tracked: nothing on the GPU reads their counts.
struct Completion {
    /// Connection index of each semaphore (`None`: no direct path).
    conn_of: Vec<Option<usize>>,
    /// The connections of direct-path semaphores (for their streams).
    conns: Vec<Arc<crate::connection::Connection>>,
    /// The direct-path semaphores of each connection.
    members: Vec<Vec<usize>>,
    handled: Vec<u64>,
    dirty: Vec<bool>,
}

impl Completion {
    fn new(sems: &[Arc<Host2DeviceSemaphore>], direct_max: u64) -> Self {
        let mut conns: Vec<Arc<crate::connection::Connection>> = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut conn_of = Vec::with_capacity(sems.len());
        for (i, s) in sems.iter().enumerate() {
            if !uses_direct(s, direct_max) {
                conn_of.push(None);
                continue;
            }
            let c = s.connection();
            let idx = match conns.iter().position(|x| Arc::ptr_eq(x, c)) {
                Some(i) => i,
                None => {
                    conns.push(c.clone());
                    members.push(Vec::new());
                    conns.len() - 1
                }
            };
            members[idx].push(i);
            conn_of.push(Some(idx));
        }
        let n = conns.len();
        Completion { conn_of, conns, members, handled: vec![0; sems.len()], dirty: vec![false; n] }
    }

    /// A trigger with data or a signal of semaphore `si` was handled.
    fn handled(&mut self, si: usize) {
        if let Some(c) = self.conn_of[si] {
            self.handled[si] += 1;
            self.dirty[c] = true;
        }
    }

    /// The connection of semaphore `si` was flushed: publish the counts of its semaphores.
    fn flushed(&mut self, si: usize, direct: &DirectTables) -> Result<()> {
        match self.conn_of[si] {
            Some(c) => self.complete(c, direct),
            None => Ok(()),
        }
    }

    /// Everything queued on connection `c` has completed: publish the counts of its semaphores.
    fn complete(&mut self, c: usize, direct: &DirectTables) -> Result<()> {
        for &i in &self.members[c] {
            direct.publish(i, self.handled[i])?;
        }
        self.dirty[c] = false;
        Ok(())
    }

    /// Publish connections whose streams have drained (called while the FIFO is empty).
    fn poll_idle(&mut self, direct: &DirectTables) -> Result<()> {
        for c in 0..self.conns.len() {
            if self.dirty[c] && self.conns[c].is_idle()? {
                self.complete(c, direct)?;
            }
        }
        Ok(())
    }
}

fn proxy_loop(ctx: &LoopCtx<'_>, stop: &AtomicBool) -> Result<()> {
    let LoopCtx { device, fifo, sems, mems, direct, direct_max, stats } = *ctx;
    device.bind()?;
    let flush_timeout = mscclpp_sys::device_env::wait_timeout();
    let mut done = Completion::new(sems, direct_max);
    let now = || stats.map(|_| Instant::now());
    let mut tail = 0u64;
    let mut idle = 0u32;
    loop {
        let Some(t) = fifo.poll(tail)? else {
            idle = idle.wrapping_add(1);
            if idle.is_multiple_of(1024) && stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            if idle.is_multiple_of(64) {
                done.poll_idle(direct)?;
            }
            if idle > 1 << 20 {
                std::thread::sleep(Duration::from_micros(20));
            } else {
                std::hint::spin_loop();
            }
            continue;
        };
        idle = 0;
        let si = t.semaphore_id as usize;
        let sem = sems.get(si).ok_or_else(|| {
            Error::InvalidArgument(format!("trigger names semaphore {} which does not exist", t.semaphore_id))
        })?;
        let conn = sem.connection();
        let t0 = now();
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
        let t1 = now();
        if t.kind & TRIGGER_FLAG != 0 {
            sem.signal()?;
        }
        // The GPU counts the same triggers in PortDirectState::issued.
        if t.kind & (TRIGGER_DATA | TRIGGER_FLAG) != 0 {
            done.handled(si);
        }
        let t2 = now();
        if t.kind & TRIGGER_SYNC != 0 {
            conn.flush(flush_timeout)?;
            done.flushed(si, direct)?;
        }
        if let (Some(s), Some(t0), Some(t1), Some(t2)) = (stats, t0, t1, t2) {
            let t3 = Instant::now();
            s.data_ns.fetch_add((t1 - t0).as_nanos() as u64, Ordering::Relaxed);
            s.flag_ns.fetch_add((t2 - t1).as_nanos() as u64, Ordering::Relaxed);
            s.sync_ns.fetch_add((t3 - t2).as_nanos() as u64, Ordering::Relaxed);
            s.triggers.fetch_add(1, Ordering::Relaxed);
        }
        tail += 1;
        fifo.set_tail(tail)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trigger_range_inside_its_memory_resolves_to_its_address() {
        let m = ProxyMemory::Local { ptr: 0x1000, size: 256 };
        assert_eq!(m.resolve(0, 256, "source").unwrap(), 0x1000);
        assert_eq!(m.resolve(16, 32, "source").unwrap(), 0x1010);
        // An empty copy at the very end is inside.
        assert_eq!(m.resolve(256, 0, "source").unwrap(), 0x1100);
    }

    #[test]
    fn a_trigger_range_past_its_memory_is_refused_naming_it() {
        let m = ProxyMemory::Local { ptr: 0x1000, size: 256 };
        let e = m.resolve(200, 64, "destination").unwrap_err().to_string();
        assert!(e.contains("destination range 200+64 overruns a 256-byte memory"), "{e}");
        // Offsets near u64::MAX must not wrap around into the memory.
        let e = m.resolve(u64::MAX - 8, 16, "source").unwrap_err().to_string();
        assert!(e.contains("overruns"), "{e}");
    }

    #[test]
    fn memory_on_another_host_is_refused_not_copied() {
        // A window with a null base: the memory is not mapped in this process.
        let m = ProxyMemory::Local { ptr: 0, size: 1 << 20 };
        let e = m.resolve(0, 8, "destination").unwrap_err().to_string();
        assert!(e.contains("another host"), "{e}");
    }
}
