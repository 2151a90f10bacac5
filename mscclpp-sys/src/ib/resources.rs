//! Owners of verbs objects: protection domain, memory regions, completion queue, reliable-connected queue pair.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;
use std::sync::Arc;

use super::device::{Context, LinkLayer, Mtu, os_error};
use super::ffi;
use crate::error::{Error, Result};

/// Access of a region that peers read and write by RDMA (`LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ`).
pub const ACCESS_RDMA: c_int = ffi::IBV_ACCESS_LOCAL_WRITE | ffi::IBV_ACCESS_REMOTE_WRITE | ffi::IBV_ACCESS_REMOTE_READ;
/// Access of a region only this process's HCA reads (the source of writes).
pub const ACCESS_LOCAL: c_int = ffi::IBV_ACCESS_LOCAL_WRITE;

/// RC retry parameters (as MSCCL++): local ACK timeout 4.096 µs * 2^18 ≈ 1 s, 7 retries, 7 RNR retries.
const QP_TIMEOUT: u8 = 18;
const QP_RETRY_CNT: u8 = 7;
const QP_RNR_RETRY: u8 = 7;
const QP_MIN_RNR_TIMER: u8 = 12;

/// A protection domain.
pub struct ProtectionDomain {
    ctx: Arc<Context>,
    raw: NonNull<ffi::ibv_pd>,
}

// SAFETY: a PD is an immutable handle used only as an argument of thread-safe verbs calls.
unsafe impl Send for ProtectionDomain {}
// SAFETY: see above.
unsafe impl Sync for ProtectionDomain {}

impl std::fmt::Debug for ProtectionDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtectionDomain").field("device", &self.ctx.name()).finish()
    }
}

impl ProtectionDomain {
    /// Allocate a PD on `ctx`.
    pub fn new(ctx: &Arc<Context>) -> Result<Arc<Self>> {
        // SAFETY: live context.
        let raw = unsafe { (ctx.verbs.f.alloc_pd)(ctx.raw.as_ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::Ib(format!(
                "ibv_alloc_pd on {} failed: {}; the HCA is out of resources or its driver is broken (dmesg)",
                ctx.name(),
                std::io::Error::last_os_error()
            ))
        })?;
        Ok(Arc::new(ProtectionDomain { ctx: ctx.clone(), raw }))
    }

    /// The context.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
}

impl Drop for ProtectionDomain {
    fn drop(&mut self) {
        // SAFETY: every MR and QP of this PD holds an `Arc` of it, so none is left. Failure cannot be acted on.
        unsafe { (self.ctx.verbs.f.dealloc_pd)(self.raw.as_ptr()) };
    }
}

/// A registered memory region: the HCA may read it (and, with [`ACCESS_RDMA`], peers may write and read it)
/// until it is dropped.
pub struct MemoryRegion {
    pd: Arc<ProtectionDomain>,
    raw: NonNull<ffi::ibv_mr>,
    addr: u64,
    len: u64,
    lkey: u32,
    rkey: u32,
}

// SAFETY: the MR handle is immutable after registration; its keys are copied out. Deregistration happens once, in
// Drop.
unsafe impl Send for MemoryRegion {}
// SAFETY: see above.
unsafe impl Sync for MemoryRegion {}

impl std::fmt::Debug for MemoryRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("addr", &format_args!("{:#x}", self.addr))
            .field("len", &self.len)
            .field("lkey", &self.lkey)
            .field("rkey", &self.rkey)
            .finish()
    }
}

impl MemoryRegion {
    /// Register `[addr, addr + len)` (host memory, or GPU memory through nvidia-peermem) with `access`.
    ///
    /// # Safety
    /// The range must stay allocated while the region lives. With remote access, peers may write it at any time
    /// until the region is dropped: the caller must not hold Rust references into it that assume exclusive or
    /// immutable access (GPU memory, or host memory accessed only through raw pointers / atomics, is fine).
    pub unsafe fn register(pd: &Arc<ProtectionDomain>, addr: u64, len: usize, access: c_int) -> Result<Self> {
        let ctx = &pd.ctx;
        // SAFETY: live PD; the caller guarantees the range (see the function's contract). The kernel pins the
        // pages (or nvidia-peermem the GPU pages) and rejects unmapped ranges.
        let raw = unsafe { (ctx.verbs.f.reg_mr)(pd.raw.as_ptr(), addr as *mut c_void, len, access) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::Ib(format!(
                "ibv_reg_mr({addr:#x}, {len} bytes) on {} failed: {}; GPU memory needs the nvidia-peermem kernel \
                 module (`modprobe nvidia-peermem`); host memory needs a large enough locked-memory limit (`ulimit \
                 -l unlimited`)",
                ctx.name(),
                std::io::Error::last_os_error()
            ))
        })?;
        Ok(Self::wrap(pd, raw, addr, len))
    }

    /// Register a dmabuf (e.g. from `cuMemGetHandleForAddressRange`): `[offset, offset + len)` of the buffer `fd`,
    /// addressed by peers from `iova`. Needs rdma-core 34 or newer. The fd may be closed after this returns.
    ///
    /// # Safety
    /// As [`MemoryRegion::register`]: the memory behind the dmabuf may be written by peers while registered.
    pub unsafe fn register_dmabuf(
        pd: &Arc<ProtectionDomain>,
        offset: u64,
        len: usize,
        iova: u64,
        fd: c_int,
        access: c_int,
    ) -> Result<Self> {
        let ctx = &pd.ctx;
        let reg = ctx.verbs.f.reg_dmabuf_mr.ok_or_else(|| {
            Error::Ib(format!(
                "{} has no ibv_reg_dmabuf_mr: rdma-core is older than 34; upgrade it or register with ibv_reg_mr \
                 (nvidia-peermem)",
                ctx.verbs.library_name()
            ))
        })?;
        // SAFETY: live PD; the caller guarantees the dmabuf (see the function's contract).
        let raw = unsafe { reg(pd.raw.as_ptr(), offset, len, iova, fd, access) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::Ib(format!(
                "ibv_reg_dmabuf_mr({len} bytes at iova {iova:#x}) on {} failed: {}; the kernel or HCA driver may lack \
                 dmabuf support (Linux 5.12+, MLNX_OFED 5.5+)",
                ctx.name(),
                std::io::Error::last_os_error()
            ))
        })?;
        Ok(Self::wrap(pd, raw, iova, len))
    }

    fn wrap(pd: &Arc<ProtectionDomain>, raw: NonNull<ffi::ibv_mr>, addr: u64, len: usize) -> Self {
        // SAFETY: `raw` is a live MR just returned by verbs; its keys never change.
        let (lkey, rkey) = unsafe { ((*raw.as_ptr()).lkey, (*raw.as_ptr()).rkey) };
        MemoryRegion { pd: pd.clone(), raw, addr, len: len as u64, lkey, rkey }
    }

    /// Start address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `[addr, addr + len)` lies inside the region.
    pub fn covers(&self, addr: u64, len: u64) -> bool {
        addr >= self.addr && addr.checked_add(len).is_some_and(|end| end <= self.addr + self.len)
    }

    /// Local key (for our scatter-gather entries).
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// Remote key (what peers put in their RDMA work requests).
    pub fn rkey(&self) -> u32 {
        self.rkey
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: registered once, deregistered once; the PD outlives it (held by `self.pd`).
        unsafe { (self.pd.ctx.verbs.f.dereg_mr)(self.raw.as_ptr()) };
    }
}

/// One work completion, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The work request's id.
    pub wr_id: u64,
    /// `IBV_WC_SUCCESS` or an error status (see [`super::wc_status_name`]).
    pub status: u32,
    /// Vendor-specific error syndrome.
    pub vendor_err: u32,
}

/// A completion queue.
pub struct CompletionQueue {
    ctx: Arc<Context>,
    raw: NonNull<ffi::ibv_cq>,
    depth: u32,
}

// SAFETY: polling a CQ is thread-safe in rdma-core (providers lock it); the handle itself is never mutated here.
unsafe impl Send for CompletionQueue {}
// SAFETY: see above.
unsafe impl Sync for CompletionQueue {}

impl std::fmt::Debug for CompletionQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionQueue").field("depth", &self.depth).finish()
    }
}

impl CompletionQueue {
    /// A CQ of at least `depth` entries.
    pub fn new(ctx: &Arc<Context>, depth: u32) -> Result<Arc<Self>> {
        let want = c_int::try_from(depth)
            .map_err(|_| Error::InvalidArgument(format!("completion queue depth {depth} is too large")))?;
        // SAFETY: live context; no completion channel, no context pointer, vector 0.
        let raw =
            unsafe { (ctx.verbs.f.create_cq)(ctx.raw.as_ptr(), want, std::ptr::null_mut(), std::ptr::null_mut(), 0) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::Ib(format!(
                "ibv_create_cq({depth} entries) on {} failed: {}; the HCA is out of resources (fewer connections, \
                 or check `ulimit -l`)",
                ctx.name(),
                std::io::Error::last_os_error()
            ))
        })?;
        // SAFETY: live CQ; `cqe` is the actual depth (at least the one asked for).
        let actual = unsafe { (*raw.as_ptr()).cqe };
        Ok(Arc::new(CompletionQueue { ctx: ctx.clone(), raw, depth: u32::try_from(actual).unwrap_or(depth) }))
    }

    /// Number of entries (at least the depth asked for).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Poll up to `out.len()` completions without blocking; returns how many were written to `out`.
    pub fn poll(&self, out: &mut [Completion]) -> Result<usize> {
        const BATCH: usize = 16;
        let mut wc = [ffi::ibv_wc::default(); BATCH];
        let n = out.len().min(BATCH);
        // SAFETY: `raw` is a live CQ whose `context` points to its live `ibv_context`.
        let poll_cq = unsafe { (*(*self.raw.as_ptr()).context).ops.poll_cq };
        let poll_cq = poll_cq.ok_or_else(|| {
            Error::Ib(format!("the provider of {} has no poll_cq; this HCA driver is not supported", self.ctx.name()))
        })?;
        // SAFETY: what verbs.h's inline ibv_poll_cq does; `wc` has room for `n` entries.
        let got = unsafe { poll_cq(self.raw.as_ptr(), n as c_int, wc.as_mut_ptr()) };
        if got < 0 {
            return Err(Error::Ib(format!(
                "ibv_poll_cq on {} failed ({got}): the completion queue overran or the device failed; check dmesg",
                self.ctx.name()
            )));
        }
        let got = got as usize;
        for (o, w) in out.iter_mut().zip(&wc[..got]) {
            *o = Completion { wr_id: w.wr_id, status: w.status, vendor_err: w.vendor_err };
        }
        Ok(got)
    }
}

impl Drop for CompletionQueue {
    fn drop(&mut self) {
        // SAFETY: every QP using this CQ holds an `Arc` of it, so none is left. Failure cannot be acted on.
        unsafe { (self.ctx.verbs.f.destroy_cq)(self.raw.as_ptr()) };
    }
}

/// What the local side needs about the peer's queue pair to connect to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteQp {
    /// Queue pair number.
    pub qpn: u32,
    /// The peer's initial send PSN (our receive PSN).
    pub psn: u32,
    /// The peer port's LID (InfiniBand).
    pub lid: u16,
    /// The peer's GID (RoCE, or InfiniBand across subnets).
    pub gid: [u8; 16],
}

/// A reliable-connected queue pair whose send queue posts RDMA WRITEs, signalled, to one peer.
pub struct QueuePair {
    pd: Arc<ProtectionDomain>,
    _cq: Arc<CompletionQueue>,
    raw: NonNull<ffi::ibv_qp>,
    max_send_wr: u32,
}

// SAFETY: posting to a QP is thread-safe in rdma-core (providers lock the send queue); state changes go through
// ibv_modify_qp, also thread-safe.
unsafe impl Send for QueuePair {}
// SAFETY: see above.
unsafe impl Sync for QueuePair {}

impl std::fmt::Debug for QueuePair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueuePair").field("qpn", &self.qp_num()).field("max_send_wr", &self.max_send_wr).finish()
    }
}

impl QueuePair {
    /// An RC QP on `pd` whose sends and (unused) receives complete on `cq`, with room for `max_send_wr`
    /// outstanding sends of one scatter-gather entry each.
    pub fn new_rc(pd: &Arc<ProtectionDomain>, cq: &Arc<CompletionQueue>, max_send_wr: u32) -> Result<Self> {
        let ctx = &pd.ctx;
        let mut init = ffi::ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: cq.raw.as_ptr(),
            recv_cq: cq.raw.as_ptr(),
            srq: std::ptr::null_mut(),
            cap: ffi::ibv_qp_cap { max_send_wr, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
            qp_type: ffi::IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: live PD and CQ of the same context; `init` is fully initialised.
        let raw = unsafe { (ctx.verbs.f.create_qp)(pd.raw.as_ptr(), &mut init) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::Ib(format!(
                "ibv_create_qp(RC, {max_send_wr} send WRs) on {} failed: {}; the HCA is out of queue pairs or \
                 memory (fewer connections, or check `ulimit -l`)",
                ctx.name(),
                std::io::Error::last_os_error()
            ))
        })?;
        Ok(QueuePair { pd: pd.clone(), _cq: cq.clone(), raw, max_send_wr })
    }

    /// The queue pair number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: live QP; `qp_num` is set at creation and never changes.
        unsafe { (*self.raw.as_ptr()).qp_num }
    }

    /// Outstanding send work requests the QP was created for.
    pub fn max_send_wr(&self) -> u32 {
        self.max_send_wr
    }

    fn modify(&self, attr: &mut ffi::ibv_qp_attr, mask: c_int, what: &str) -> Result<()> {
        // SAFETY: live QP; `attr` is fully initialised and `mask` names the fields that are meaningful.
        let rc = unsafe { (self.pd.ctx.verbs.f.modify_qp)(self.raw.as_ptr(), attr, mask) };
        if rc != 0 {
            return Err(Error::Ib(format!(
                "moving queue pair {} on {} to {what} failed: {}; check that both ranks agree on the link layer, \
                 MTU and GID index (MSCCLPP_IB_GID_INDEX), and that the port is up (`ibstat`)",
                self.qp_num(),
                self.pd.ctx.name(),
                os_error(rc)
            )));
        }
        Ok(())
    }

    /// RESET → INIT on the context's port, allowing remote writes and reads.
    pub fn to_init(&self) -> Result<()> {
        let mut a = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_INIT,
            pkey_index: 0,
            port_num: self.pd.ctx.port().port,
            qp_access_flags: (ffi::IBV_ACCESS_REMOTE_WRITE | ffi::IBV_ACCESS_REMOTE_READ) as u32,
            ..Default::default()
        };
        let mask = ffi::IBV_QP_STATE | ffi::IBV_QP_PKEY_INDEX | ffi::IBV_QP_PORT | ffi::IBV_QP_ACCESS_FLAGS;
        self.modify(&mut a, mask, "INIT")
    }

    /// INIT → RTR, connected to `remote` with path MTU `mtu`. A global route header is used on RoCE, when the
    /// peer has no LID, or when its GID is in another subnet.
    pub fn to_rtr(&self, remote: &RemoteQp, mtu: Mtu) -> Result<()> {
        let port = self.pd.ctx.port();
        let other_subnet = remote.gid != [0; 16] && remote.gid[..8] != port.gid[..8];
        let global = port.link_layer == LinkLayer::Ethernet || remote.lid == 0 || other_subnet;
        let mut ah = ffi::ibv_ah_attr { dlid: remote.lid, sl: 0, port_num: port.port, ..Default::default() };
        if global {
            ah.is_global = 1;
            ah.grh.dgid = ffi::ibv_gid { raw: remote.gid };
            ah.grh.sgid_index = port.gid_index;
            ah.grh.hop_limit = 255;
        }
        let mut a = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_RTR,
            path_mtu: mtu.to_raw(),
            dest_qp_num: remote.qpn,
            rq_psn: remote.psn & 0xff_ffff,
            max_dest_rd_atomic: 1,
            min_rnr_timer: QP_MIN_RNR_TIMER,
            ah_attr: ah,
            ..Default::default()
        };
        let mask = ffi::IBV_QP_STATE
            | ffi::IBV_QP_AV
            | ffi::IBV_QP_PATH_MTU
            | ffi::IBV_QP_DEST_QPN
            | ffi::IBV_QP_RQ_PSN
            | ffi::IBV_QP_MAX_DEST_RD_ATOMIC
            | ffi::IBV_QP_MIN_RNR_TIMER;
        self.modify(&mut a, mask, "RTR (ready to receive)")
    }

    /// RTR → RTS with our initial send PSN `psn`.
    pub fn to_rts(&self, psn: u32) -> Result<()> {
        let mut a = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_RTS,
            sq_psn: psn & 0xff_ffff,
            timeout: QP_TIMEOUT,
            retry_cnt: QP_RETRY_CNT,
            rnr_retry: QP_RNR_RETRY,
            max_rd_atomic: 1,
            ..Default::default()
        };
        let mask = ffi::IBV_QP_STATE
            | ffi::IBV_QP_SQ_PSN
            | ffi::IBV_QP_TIMEOUT
            | ffi::IBV_QP_RETRY_CNT
            | ffi::IBV_QP_RNR_RETRY
            | ffi::IBV_QP_MAX_QP_RD_ATOMIC;
        self.modify(&mut a, mask, "RTS (ready to send)")
    }

    /// Post one signalled RDMA WRITE of `len` bytes from local `addr` (inside the region of `lkey`) to the peer's
    /// `remote_addr` (inside its region of `rkey`). Its completion, with `wr_id`, arrives on the CQ. Writes of one
    /// QP are executed in the order they were posted.
    ///
    /// The HCA checks both keys and ranges: a wrong one fails the completion, never this process's memory. The
    /// caller keeps the local bytes unchanged until the completion if it cares about what is sent.
    pub fn post_write(&self, wr_id: u64, addr: u64, len: u32, lkey: u32, remote_addr: u64, rkey: u32) -> Result<()> {
        let mut sge = ffi::ibv_sge { addr, length: len, lkey };
        let mut wr = ffi::ibv_send_wr::rdma_write(wr_id, remote_addr, rkey, ffi::IBV_SEND_SIGNALED);
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        let mut bad: *mut ffi::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: `raw` is a live QP whose `context` points to its live `ibv_context`.
        let post_send = unsafe { (*(*self.raw.as_ptr()).context).ops.post_send };
        let post_send = post_send.ok_or_else(|| {
            Error::Ib(format!(
                "the provider of {} has no post_send; this HCA driver is not supported",
                self.pd.ctx.name()
            ))
        })?;
        // SAFETY: what verbs.h's inline ibv_post_send does. `wr` and `sge` live across the call, which copies them
        // into the send queue; `bad` is a valid out-pointer.
        let rc = unsafe { post_send(self.raw.as_ptr(), &mut wr, &mut bad) };
        if rc != 0 {
            return Err(Error::Ib(format!(
                "ibv_post_send on queue pair {} failed: {}; the send queue is full (more than {} outstanding \
                 writes) or the queue pair is in the error state after an earlier failure",
                self.qp_num(),
                os_error(rc),
                self.max_send_wr
            )));
        }
        Ok(())
    }
}

impl Drop for QueuePair {
    fn drop(&mut self) {
        // SAFETY: created once, destroyed once; its PD and CQ outlive it (held by `self`). Failure cannot be acted
        // on.
        unsafe { (self.pd.ctx.verbs.f.destroy_qp)(self.raw.as_ptr()) };
    }
}
