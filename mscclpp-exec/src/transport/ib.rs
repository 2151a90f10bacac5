//! InfiniBand transport between hosts (feature `ib`): one reliable-connected queue pair per connection; the proxy
//! thread moves GPU memory with RDMA WRITE and signals semaphores with an 8-byte RDMA WRITE on the same queue pair.
//!
//! - [`IbContext`]: the process's HCA port (chosen by local rank, [`crate::env::local_rank`], from
//!   `MSCCLPP_HCA_DEVICES`), its protection
//!   domain and the memory regions registered so far (reused for every range they cover).
//! - Registered memory carries its remote key: when InfiniBand is in use (`MSCCLPP_TRANSPORT=ib`, or a context is
//!   already open), [`with_remote_key`] registers the whole allocation behind a `RegisteredMemory` before it is
//!   sent and puts the key in `MemoryDesc::ib_rkey`.
//! - [`IbLink`]: queue pair, completion queue and the ring of 8-byte signal values. Set up over the bootstrap
//!   (QP number, PSN, LID, GID, MTU, link layer), then `write` / `update` / `flush`.
//!
//! Signals: the new semaphore value is stored into a slot of a small registered host ring and sent with an RDMA
//! WRITE of 8 bytes to the peer's token. RC queue pairs execute writes in the order they were posted, so the
//! value lands after every data write posted before it (no WRITE_WITH_IMM: that would need posted receives and
//! a receiver thread). Every work request is signalled; the number outstanding never exceeds the queue depth
//! ([`QUEUE_DEPTH`]): a post first polls completions until there is room, so the CQ cannot overflow and a ring
//! slot is never rewritten before the write that read it completed.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mscclpp_sys::driver::Device;
use mscclpp_sys::ib::{
    ACCESS_LOCAL, ACCESS_RDMA, Completion, CompletionQueue, Context, LinkLayer, MemoryRegion, Mtu, PortInfo,
    ProtectionDomain, QueuePair, RemoteQp,
};
use serde::{Deserialize, Serialize};

use crate::bootstrap::Bootstrap;
use crate::error::{Error, Result};
use crate::memory::{HandleDesc, MemoryDesc, RemoteMemory};

/// Send work requests a link may have outstanding (also the completion queue depth and the signal ring size).
pub const QUEUE_DEPTH: u32 = 1024;

/// Largest single RDMA WRITE; longer puts are split.
const MAX_WRITE: u64 = 1 << 30;

fn ib_err(msg: impl Into<String>) -> Error {
    Error::Sys(mscclpp_sys::Error::Ib(msg.into()))
}

/// The text of an error without the `InfiniBand: ` prefix of [`mscclpp_sys::Error::Ib`].
fn ib_text(e: &Error) -> String {
    match e {
        Error::Sys(mscclpp_sys::Error::Ib(m)) => m.clone(),
        other => other.to_string(),
    }
}

/// The process's HCA port, protection domain and registered memory regions.
pub struct IbContext {
    ctx: Arc<Context>,
    pd: Arc<ProtectionDomain>,
    regions: Mutex<Vec<Arc<MemoryRegion>>>,
}

impl std::fmt::Debug for IbContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IbContext").field("device", &self.ctx.name()).field("port", self.ctx.port()).finish()
    }
}

/// The process's InfiniBand context, or why it could not be opened (kept: it is not retried).
static GLOBAL: OnceLock<std::result::Result<IbContext, std::sync::Arc<Error>>> = OnceLock::new();

impl IbContext {
    /// The process-wide context, opened on first use for `local_rank` (later calls return the same one, or the
    /// same error: an HCA that could not be opened is not retried).
    pub fn global(local_rank: usize) -> Result<&'static IbContext> {
        let r = GLOBAL.get_or_init(|| {
            let open = || -> Result<IbContext> {
                let ctx = Context::open_for_local_rank(local_rank)?;
                let pd = ProtectionDomain::new(&ctx)?;
                Ok(IbContext { ctx, pd, regions: Mutex::new(Vec::new()) })
            };
            open().map_err(std::sync::Arc::new)
        });
        match r {
            Ok(c) => Ok(c),
            Err(e) => Err(ib_err(ib_text(e))),
        }
    }

    /// The context if one was opened successfully.
    pub fn opened() -> Option<&'static IbContext> {
        GLOBAL.get().and_then(|r| r.as_ref().ok())
    }

    /// Device name, e.g. `mlx5_0`.
    pub fn device_name(&self) -> &str {
        self.ctx.name()
    }

    /// The port in use.
    pub fn port(&self) -> &PortInfo {
        self.ctx.port()
    }

    fn regions(&self) -> Result<std::sync::MutexGuard<'_, Vec<Arc<MemoryRegion>>>> {
        self.regions.lock().map_err(|_| ib_err("the table of registered memory was poisoned by a panic"))
    }

    /// A registered region covering `[addr, addr + len)`, if any.
    pub fn lookup(&self, addr: u64, len: u64) -> Option<Arc<MemoryRegion>> {
        self.regions().ok()?.iter().find(|r| r.covers(addr, len)).cloned()
    }

    /// Register `[addr, addr + len)` for RDMA by peers (write and read), or return a region that already covers it.
    /// Regions stay registered for the life of the process.
    ///
    /// # Safety
    /// As [`MemoryRegion::register`]: the range stays allocated while the process runs, and peers may write it at
    /// any time, so no Rust reference may assume exclusive or immutable access to it (GPU memory is fine).
    pub unsafe fn register(&self, addr: u64, len: u64) -> Result<Arc<MemoryRegion>> {
        let mut regions = self.regions()?;
        if let Some(r) = regions.iter().find(|r| r.covers(addr, len)) {
            return Ok(r.clone());
        }
        let size = usize::try_from(len).map_err(|_| ib_err(format!("cannot register {len} bytes")))?;
        // SAFETY: the caller upholds the contract of `MemoryRegion::register`.
        let mr = Arc::new(unsafe { MemoryRegion::register(&self.pd, addr, size, ACCESS_RDMA) }?);
        regions.push(mr.clone());
        Ok(mr)
    }

    /// Register the whole CUDA allocation of `device` containing `[addr, addr + len)` (or reuse a region covering
    /// the range).
    pub fn register_gpu(&self, device: &Device, addr: u64, len: u64) -> Result<Arc<MemoryRegion>> {
        if let Some(r) = self.lookup(addr, len) {
            return Ok(r);
        }
        let (base, size) = mscclpp_sys::interpreter::address_range(device, addr)?;
        if addr.checked_add(len).is_none_or(|end| end > base + size) {
            return Err(Error::InvalidArgument(format!(
                "{len} bytes at {addr:#x} run past the end of their CUDA allocation ({size} bytes at {base:#x})"
            )));
        }
        // SAFETY: `[base, base + size)` is a live CUDA device allocation (cuMemGetAddressRange just said so); no
        // Rust reference points into device memory. The caller keeps the allocation alive while it is used.
        unsafe { self.register(base, size) }
    }
}

/// `desc` with the InfiniBand remote key of its allocation when this process uses InfiniBand
/// (`MSCCLPP_TRANSPORT=ib` or an open [`IbContext`]); `desc` unchanged otherwise, or when the registration fails
/// (logged: peers on other hosts then get a clear error when they write it).
pub fn with_remote_key(desc: &MemoryDesc) -> Cow<'_, MemoryDesc> {
    if desc.ib_rkey.is_some() || !(crate::env::ib_requested() || IbContext::opened().is_some()) {
        return Cow::Borrowed(desc);
    }
    let ctx = match IbContext::global(crate::env::local_rank(desc.rank as usize)) {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!("memory at {:#x} sent without an InfiniBand key: {e}", desc.ptr);
            return Cow::Borrowed(desc);
        }
    };
    let (offset, size) = match &desc.handle {
        HandleDesc::Legacy { base_size, offset, .. } => (*offset, *base_size),
        HandleDesc::Vmm { size, offset, .. } => (*offset, *size),
    };
    let Some(base) = desc.ptr.checked_sub(offset) else {
        return Cow::Borrowed(desc);
    };
    // SAFETY: the description comes from a `RegisteredMemory` of this process: `[base, base + size)` is the CUDA
    // allocation its handle was exported from (cuMemAlloc or cuMem VMM), device memory that no Rust reference
    // points into.
    match unsafe { ctx.register(base, size) } {
        Ok(mr) => {
            let mut d = desc.clone();
            d.ib_rkey = Some(mr.rkey());
            Cow::Owned(d)
        }
        Err(e) => {
            tracing::warn!(
                "rank {}: {size} bytes at {base:#x} could not be registered with {}; ranks on other hosts cannot \
                 write them by RDMA: {e}",
                desc.rank,
                ctx.device_name()
            );
            Cow::Borrowed(desc)
        }
    }
}

/// What one side of a link tells the other to connect the queue pairs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QpInfo {
    /// Queue pair number.
    pub qpn: u32,
    /// Initial packet sequence number of its send queue.
    pub psn: u32,
    /// Port LID (0 on RoCE).
    pub lid: u16,
    /// Port GID at `MSCCLPP_IB_GID_INDEX`.
    pub gid: [u8; 16],
    /// Active MTU as the verbs value (`IBV_MTU_256` = 1 ... `IBV_MTU_4096` = 5).
    pub mtu: u32,
    /// Link layer as the verbs value (1 InfiniBand, 2 Ethernet/RoCE).
    pub link_layer: u8,
}

impl QpInfo {
    /// The peer's MTU, checked.
    pub fn mtu(&self, peer: usize) -> Result<Mtu> {
        Mtu::from_raw(self.mtu)
            .ok_or_else(|| Error::Protocol { peer, reason: format!("unknown InfiniBand MTU value {}", self.mtu) })
    }

    /// The peer's link layer, checked.
    pub fn link_layer(&self, peer: usize) -> Result<LinkLayer> {
        LinkLayer::from_raw(self.link_layer)
            .ok_or_else(|| Error::Protocol { peer, reason: format!("unknown link layer value {}", self.link_layer) })
    }

    /// What the local queue pair needs to connect to this one.
    pub fn remote_qp(&self) -> RemoteQp {
        RemoteQp { qpn: self.qpn, psn: self.psn, lid: self.lid, gid: self.gid }
    }
}

/// The path MTU of a link: the smaller active MTU.
pub fn path_mtu(local: Mtu, remote: Mtu) -> Mtu {
    local.min(remote)
}

/// The messages of the connection handshake (JSON over the bootstrap).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Handshake {
    /// Our queue pair, ready to be connected.
    Info(QpInfo),
    /// Our queue pair reached RTS: the peer may post.
    Ready,
    /// This side could not set up InfiniBand (the text says why).
    Failed(String),
}

impl Handshake {
    /// Encode for the bootstrap.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::InvalidArgument(format!("serializing the IB handshake: {e}")))
    }

    /// Decode what `peer` sent.
    pub fn from_bytes(bytes: &[u8], peer: usize) -> Result<Self> {
        serde_json::from_slice(bytes)
            .map_err(|e| Error::Protocol { peer, reason: format!("InfiniBand handshake message: {e}") })
    }
}

/// A ring of 8-byte signal values in registered host memory (the sources of semaphore writes).
struct SignalRing {
    // Declared before `words`: deregistered before the memory is freed.
    mr: MemoryRegion,
    words: Box<[AtomicU64]>,
}

impl SignalRing {
    fn new(pd: &Arc<ProtectionDomain>, slots: u32) -> Result<Self> {
        let words: Box<[AtomicU64]> = (0..slots).map(|_| AtomicU64::new(0)).collect();
        let addr = words.as_ptr() as u64;
        // SAFETY: the boxed slice does not move and outlives the region (field order); the access is local only,
        // so peers cannot write it; the HCA reads it while we store through atomics.
        let mr = unsafe { MemoryRegion::register(pd, addr, words.len() * 8, ACCESS_LOCAL) }?;
        Ok(SignalRing { mr, words })
    }

    fn slot_addr(&self, slot: usize) -> u64 {
        self.mr.addr() + slot as u64 * 8
    }
}

#[derive(Debug, Default)]
struct LinkState {
    posted: u64,
    completed: u64,
    failure: Option<String>,
}

/// A queue-pair connection to one peer: RDMA WRITEs of data and semaphore values, completions polled by the
/// caller (the proxy thread).
pub struct IbLink {
    peer: usize,
    ctx: &'static IbContext,
    device: Option<Device>,
    // Declared before `signals`: destroyed (cancelling outstanding work) before the ring is deregistered.
    qp: QueuePair,
    cq: Arc<CompletionQueue>,
    signals: SignalRing,
    depth: u64,
    state: Mutex<LinkState>,
}

impl std::fmt::Debug for IbLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IbLink")
            .field("peer", &self.peer)
            .field("device", &self.ctx.device_name())
            .field("qpn", &self.qp.qp_num())
            .finish()
    }
}

/// The local half of a link before the peer's queue pair is known.
struct Prepared {
    ctx: &'static IbContext,
    qp: QueuePair,
    cq: Arc<CompletionQueue>,
    signals: SignalRing,
    info: QpInfo,
}

fn prepare(local_rank: usize) -> Result<Prepared> {
    let ctx = IbContext::global(local_rank)?;
    let cq = CompletionQueue::new(&ctx.ctx, QUEUE_DEPTH)?;
    let qp = QueuePair::new_rc(&ctx.pd, &cq, QUEUE_DEPTH)?;
    qp.to_init()?;
    let signals = SignalRing::new(&ctx.pd, QUEUE_DEPTH)?;
    let port = ctx.port();
    let info = QpInfo {
        qpn: qp.qp_num(),
        psn: mscclpp_sys::ib::random_psn(),
        lid: port.lid,
        gid: port.gid,
        mtu: port.active_mtu.to_raw(),
        link_layer: port.link_layer.to_raw(),
    };
    Ok(Prepared { ctx, qp, cq, signals, info })
}

impl Prepared {
    fn connect(&self, remote: &QpInfo, peer: usize) -> Result<()> {
        let port = self.ctx.port();
        let theirs = remote.link_layer(peer)?;
        if theirs != port.link_layer {
            return Err(ib_err(format!(
                "rank {peer}'s HCA port is {theirs:?} and ours ({}) is {:?}: they cannot be connected; pick ports of \
                 the same kind with MSCCLPP_HCA_DEVICES",
                self.ctx.device_name(),
                port.link_layer
            )));
        }
        let mtu = path_mtu(port.active_mtu, remote.mtu(peer)?);
        self.qp.to_rtr(&remote.remote_qp(), mtu)?;
        Ok(self.qp.to_rts(self.info.psn)?)
    }
}

impl IbLink {
    /// Connect to `peer` over the bootstrap under `tag` (the peer calls this with the same tag). `device` is the
    /// local GPU, used to register the allocations behind source pointers on first use; without it every source
    /// must be registered beforehand ([`IbContext::register`]).
    ///
    /// Either side's failure (no HCA, port down, ...) is sent to the other, so both return an error instead of
    /// one waiting for the bootstrap timeout.
    pub fn connect(bootstrap: &Arc<dyn Bootstrap>, peer: usize, tag: u64, device: Option<Device>) -> Result<Self> {
        let local = prepare(crate::env::local_rank(bootstrap.rank()));
        let hello = match &local {
            Ok(p) => Handshake::Info(p.info.clone()),
            Err(e) => Handshake::Failed(ib_text(e)),
        };
        let sent = bootstrap.send(peer, tag, &hello.to_bytes()?);
        // Our own failure first: it is the one to report, even when the peer could not be told.
        let local = local.map_err(|e| ib_err(format!("connecting to rank {peer}: {}", ib_text(&e))))?;
        sent?;
        let remote = match Handshake::from_bytes(&bootstrap.recv(peer, tag)?, peer)? {
            Handshake::Info(info) => info,
            Handshake::Failed(why) => {
                return Err(ib_err(format!("rank {peer} could not set up its side of the connection: {why}")));
            }
            Handshake::Ready => {
                return Err(Error::Protocol {
                    peer,
                    reason: "InfiniBand handshake: `ready` before the QP info".into(),
                });
            }
        };
        let connected = local.connect(&remote, peer);
        let ready = match &connected {
            Ok(()) => Handshake::Ready,
            Err(e) => Handshake::Failed(ib_text(e)),
        };
        let sent = bootstrap.send(peer, tag, &ready.to_bytes()?);
        connected.map_err(|e| ib_err(format!("connecting to rank {peer}: {}", ib_text(&e))))?;
        sent?;
        match Handshake::from_bytes(&bootstrap.recv(peer, tag)?, peer)? {
            Handshake::Ready => {}
            Handshake::Failed(why) => {
                return Err(ib_err(format!("rank {peer} could not connect its queue pair: {why}")));
            }
            Handshake::Info(_) => {
                return Err(Error::Protocol { peer, reason: "InfiniBand handshake: QP info twice".into() });
            }
        }
        let Prepared { ctx, qp, cq, signals, .. } = local;
        let depth = u64::from(QUEUE_DEPTH.min(qp.max_send_wr()).min(cq.depth()));
        tracing::debug!("rank {peer}: InfiniBand queue pair {} on {} connected", qp.qp_num(), ctx.device_name());
        Ok(IbLink { peer, ctx, device, qp, cq, signals, depth, state: Mutex::new(LinkState::default()) })
    }

    /// The peer's rank.
    pub fn peer(&self) -> usize {
        self.peer
    }

    /// The process's context (for registering memory).
    pub fn context(&self) -> &'static IbContext {
        self.ctx
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, LinkState>> {
        self.state.lock().map_err(|_| ib_err(format!("the link to rank {} was poisoned by a panic", self.peer)))
    }

    fn local_region(&self, src: u64, size: u64) -> Result<Arc<MemoryRegion>> {
        if let Some(r) = self.ctx.lookup(src, size) {
            return Ok(r);
        }
        match &self.device {
            Some(d) => self.ctx.register_gpu(d, src, size),
            None => Err(ib_err(format!(
                "the {size} bytes at {src:#x} to be written to rank {} are not registered with {}: register them \
                 first (IbContext::register)",
                self.peer,
                self.ctx.device_name()
            ))),
        }
    }

    /// Poll once; count completions and remember the first failed one.
    fn poll(&self, st: &mut LinkState) -> Result<usize> {
        let mut wc = [Completion { wr_id: 0, status: 0, vendor_err: 0 }; 16];
        let n = self.cq.poll(&mut wc)?;
        for c in &wc[..n] {
            st.completed += 1;
            if c.status != mscclpp_sys::ib::ffi::IBV_WC_SUCCESS && st.failure.is_none() {
                let text = mscclpp_sys::ib::Verbs::global()
                    .map(|v| v.wc_status_str(c.status))
                    .unwrap_or_else(|_| mscclpp_sys::ib::wc_status_name(c.status).to_string());
                st.failure = Some(format!(
                    "RDMA write {} to rank {} failed: {text} (status {}, vendor error {:#x}); {}. The queue pair is \
                     now in the error state",
                    c.wr_id,
                    self.peer,
                    c.status,
                    c.vendor_err,
                    mscclpp_sys::ib::wc_status_hint(c.status)
                ));
            }
        }
        self.check(st)?;
        Ok(n)
    }

    fn check(&self, st: &LinkState) -> Result<()> {
        match &st.failure {
            Some(f) => Err(ib_err(f.clone())),
            None => Ok(()),
        }
    }

    /// Poll until fewer than `limit` work requests are outstanding, or fail after `timeout`.
    fn drain_to(&self, st: &mut LinkState, limit: u64, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        let mut spins = 0u32;
        while st.posted - st.completed > limit {
            if self.poll(st)? > 0 {
                continue;
            }
            if start.elapsed() > timeout {
                return Err(Error::Sys(mscclpp_sys::Error::Timeout {
                    what: format!(
                        "{} RDMA write(s) to rank {} to complete ({} posted, {} completed)",
                        st.posted - st.completed - limit,
                        self.peer,
                        st.posted,
                        st.completed
                    ),
                    millis: timeout.as_millis() as u64,
                }));
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(256) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }

    fn post(&self, st: &mut LinkState, addr: u64, len: u32, lkey: u32, remote: u64, rkey: u32) -> Result<()> {
        // Room in the send queue and the CQ: at most `depth` outstanding after this post.
        self.drain_to(st, self.depth - 1, mscclpp_sys::device_env::wait_timeout())?;
        self.qp.post_write(st.posted, addr, len, lkey, remote, rkey)?;
        st.posted += 1;
        Ok(())
    }

    /// Post RDMA WRITEs of `size` bytes from local `src` to the peer's `dst` in its region of `rkey`. `src` must
    /// be registered (or be GPU memory of the link's device, registered on first use); its bytes must stay
    /// unchanged until [`IbLink::flush`].
    pub fn write(&self, dst: u64, rkey: u32, src: u64, size: u64) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        let mr = self.local_region(src, size)?;
        let mut st = self.lock()?;
        self.check(&st)?;
        let mut off = 0u64;
        while off < size {
            let n = (size - off).min(MAX_WRITE);
            self.post(&mut st, src + off, n as u32, mr.lkey(), dst + off, rkey)?;
            off += n;
        }
        Ok(())
    }

    /// Post an 8-byte RDMA WRITE of `value` to the peer's token at `token` (region `rkey`), after every write
    /// posted before it.
    pub fn update(&self, token: u64, rkey: u32, value: u64) -> Result<()> {
        let mut st = self.lock()?;
        self.check(&st)?;
        // Make room first: the slot of this post is then no longer read by an outstanding write.
        self.drain_to(&mut st, self.depth - 1, mscclpp_sys::device_env::wait_timeout())?;
        let slot = (st.posted % self.signals.words.len() as u64) as usize;
        self.signals.words[slot].store(value, Ordering::Release);
        let (addr, lkey) = (self.signals.slot_addr(slot), self.signals.mr.lkey());
        self.post(&mut st, addr, 8, lkey, token, rkey)
    }

    /// Put `size` bytes from local `src` into the peer's registered memory `dst` at `dst_off`.
    pub fn put(&self, dst: &RemoteMemory, dst_off: u64, src: u64, size: u64) -> Result<()> {
        self.write(dst.desc().ptr + dst_off, remote_key(dst, self.peer)?, src, size)
    }

    /// Set the peer's semaphore token `token` to `value`, after every earlier put.
    pub fn signal(&self, token: &RemoteMemory, value: u64) -> Result<()> {
        self.update(token.desc().ptr, remote_key(token, self.peer)?, value)
    }

    /// Wait until every posted write completed, or fail after `timeout` (naming the peer), or at the first failed
    /// completion (with the verbs status text).
    pub fn flush(&self, timeout: Duration) -> Result<()> {
        let mut st = self.lock()?;
        self.drain_to(&mut st, 0, timeout)
    }

    /// Non-blocking: whether every posted write completed (polls once).
    pub fn is_idle(&self) -> Result<bool> {
        let mut st = self.lock()?;
        if st.posted != st.completed {
            self.poll(&mut st)?;
        }
        self.check(&st)?;
        Ok(st.posted == st.completed)
    }

    /// Work requests posted and completed so far.
    pub fn counts(&self) -> Result<(u64, u64)> {
        let st = self.lock()?;
        Ok((st.posted, st.completed))
    }
}

/// The remote key of a peer's memory, or an error saying why it has none.
pub fn remote_key(mem: &RemoteMemory, peer: usize) -> Result<u32> {
    mem.desc().ib_rkey.ok_or_else(|| {
        ib_err(format!(
            "rank {peer}'s memory at {:#x} ({} bytes) carries no InfiniBand key: that rank did not register it with \
             its HCA. Set MSCCLPP_TRANSPORT=ib on every rank (so memory is registered before it is sent), and check \
             that rank's log for a failed registration (GPU memory needs nvidia-peermem)",
            mem.desc().ptr,
            mem.size()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_messages_round_trip() {
        let info = QpInfo { qpn: 0x1234, psn: 0xabcdef, lid: 7, gid: [3; 16], mtu: 5, link_layer: 1 };
        for m in [Handshake::Info(info.clone()), Handshake::Ready, Handshake::Failed("no HCA".into())] {
            assert_eq!(Handshake::from_bytes(&m.to_bytes().expect("encode"), 1).expect("decode"), m);
        }
        let e = Handshake::from_bytes(b"{\"Nope\":1}", 3).expect_err("garbage").to_string();
        assert!(e.contains("rank 3") && e.contains("InfiniBand handshake"), "{e}");
    }

    #[test]
    fn path_mtu_is_the_smaller() {
        assert_eq!(path_mtu(Mtu::B4096, Mtu::B1024), Mtu::B1024);
        assert_eq!(path_mtu(Mtu::B2048, Mtu::B4096), Mtu::B2048);
    }
}
