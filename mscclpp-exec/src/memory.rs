//! GPU buffers and their registration: what a peer needs to map our memory, and the mapped result.

use std::sync::Arc;

use mscclpp_sys::driver::{
    Device, DeviceMemory, DevicePtr, IpcMapping, IpcMemHandle, Sharing, VmmAllocation, VmmMapping, export_mapped_fd,
    sharing,
};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::transport::ipc;

/// Device memory from `cuMemAlloc`, shared with other processes through legacy CUDA IPC handles.
#[derive(Debug)]
pub struct GpuBuffer {
    mem: DeviceMemory,
}

impl GpuBuffer {
    /// Allocate `bytes` (zeroed) on `device`.
    pub fn new(device: &Device, bytes: usize) -> Result<Self> {
        Ok(GpuBuffer { mem: DeviceMemory::zeroed(device, bytes)? })
    }

    /// Device address.
    pub fn ptr(&self) -> DevicePtr {
        self.mem.ptr()
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.mem.len()
    }

    /// Always false.
    pub fn is_empty(&self) -> bool {
        self.mem.is_empty()
    }

    /// The GPU.
    pub fn device(&self) -> &Device {
        self.mem.device()
    }

    /// Copy host bytes in at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        Ok(self.mem.copy_from_host(offset, data)?)
    }

    /// Copy bytes out from `offset`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        Ok(self.mem.copy_to_host(offset, out)?)
    }

    /// Fill every byte.
    pub fn fill(&self, value: u8) -> Result<()> {
        Ok(self.mem.fill(value)?)
    }
}

/// A symmetric buffer from the cuMem VMM API, shared with other processes as a POSIX file descriptor passed
/// over a Unix socket (the form NVLink multicast also needs).
#[derive(Debug)]
pub struct RawGpuBuffer {
    alloc: VmmAllocation,
    export: (String, u64, [u8; 32]),
}

impl RawGpuBuffer {
    /// Allocate at least `bytes` (rounded up to the allocation granularity), zeroed.
    pub fn new(device: &Device, bytes: usize) -> Result<Self> {
        let alloc = VmmAllocation::new(device, bytes)?;
        let fd = alloc.export_fd()?;
        let export = ipc::export(fd, alloc.size() as u64)?;
        let buf = RawGpuBuffer { alloc, export };
        if let Ok(mut live) = live_raw_buffers().lock() {
            live.push(buf.live_entry());
        }
        Ok(buf)
    }

    fn live_entry(&self) -> LiveRaw {
        LiveRaw {
            ptr: self.ptr(),
            len: self.len() as u64,
            device: self.device().ordinal(),
            export: self.export.clone(),
        }
    }

    /// Device address.
    pub fn ptr(&self) -> DevicePtr {
        self.alloc.ptr()
    }

    /// Mapped size (a multiple of the granularity).
    pub fn len(&self) -> usize {
        self.alloc.size()
    }

    /// Always false.
    pub fn is_empty(&self) -> bool {
        self.alloc.size() == 0
    }

    /// The GPU.
    pub fn device(&self) -> &Device {
        self.alloc.device()
    }

    /// Copy host bytes in at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        Ok(mscclpp_sys::driver::copy_to_device(
            self.device(),
            self.ptr() + offset as u64,
            self.len().saturating_sub(offset),
            data,
        )?)
    }

    /// Copy bytes out from `offset`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        Ok(mscclpp_sys::driver::copy_from_device(
            self.device(),
            self.ptr() + offset as u64,
            self.len().saturating_sub(offset),
            out,
        )?)
    }
}

impl Drop for RawGpuBuffer {
    fn drop(&mut self) {
        if let Ok(mut live) = live_raw_buffers().lock() {
            live.retain(|l| l.export.1 != self.export.1);
        }
        ipc::withdraw(self.export.1);
    }
}

/// A live [`RawGpuBuffer`]: where it is and how peers map it, so that a registration by address
/// ([`RegisteredMemory::for_ptr`]) of memory inside it takes the fd-passing path that cuMem allocations need
/// (legacy CUDA IPC refuses them).
#[derive(Clone, Debug)]
struct LiveRaw {
    ptr: DevicePtr,
    len: u64,
    device: usize,
    export: (String, u64, [u8; 32]),
}

fn live_raw_buffers() -> &'static std::sync::Mutex<Vec<LiveRaw>> {
    static LIVE: std::sync::OnceLock<std::sync::Mutex<Vec<LiveRaw>>> = std::sync::OnceLock::new();
    LIVE.get_or_init(|| std::sync::Mutex::new(Vec::new()))
}

/// How a peer can map a registered range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HandleDesc {
    /// Legacy CUDA IPC handle of the base allocation.
    Legacy {
        /// `CUipcMemHandle` bytes.
        handle: Vec<u8>,
        /// Size of the base allocation.
        base_size: u64,
        /// Offset of the range from the base.
        offset: u64,
    },
    /// cuMem allocation served as a file descriptor by the owner's fd server.
    Vmm {
        /// Abstract socket name of the owner's fd server.
        server: String,
        /// Allocation id at that server.
        id: u64,
        /// Token that proves the asker received this description.
        token: Vec<u8>,
        /// Size of the whole allocation.
        size: u64,
        /// Offset of the range from the allocation start.
        offset: u64,
    },
}

/// The serializable description of a registered range: what a peer needs to reach it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryDesc {
    /// Address in the owner's process.
    pub ptr: u64,
    /// Bytes.
    pub size: u64,
    /// Owner's host id.
    pub host: String,
    /// Owner's process id.
    pub pid: u32,
    /// Owner's GPU ordinal.
    pub device: u32,
    /// Owner's rank.
    pub rank: u32,
    /// How to map it.
    pub handle: HandleDesc,
    /// InfiniBand remote key of the owner's registration of this range's allocation (feature `ib`, when the owner
    /// uses InfiniBand). Absent in payloads of older versions and of builds without InfiniBand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib_rkey: Option<u32>,
}

/// A local GPU range registered for access by peers.
#[derive(Clone, Debug)]
pub struct RegisteredMemory {
    desc: MemoryDesc,
    device: Device,
    /// The file descriptor export made for this registration (memory someone else allocated with cuMem), offered
    /// to peers until the last clone of the registration is gone.
    export: Option<Arc<Withdrawn>>,
}

/// Withdraws an export from the fd server when dropped (the descriptor, and so the physical memory it keeps, is
/// closed then).
#[derive(Debug)]
struct Withdrawn(u64);

impl Drop for Withdrawn {
    fn drop(&mut self) {
        ipc::withdraw(self.0);
    }
}

impl RegisteredMemory {
    /// `[ptr, ptr + size)` of this process's GPU `device`, reached through `handle`.
    fn local(device: &Device, rank: usize, ptr: DevicePtr, size: u64, handle: HandleDesc) -> Self {
        RegisteredMemory {
            desc: MemoryDesc {
                ptr,
                size,
                host: crate::env::host_id(),
                pid: std::process::id(),
                device: device.ordinal() as u32,
                rank: rank as u32,
                handle,
                ib_rkey: None,
            },
            device: *device,
            export: None,
        }
    }

    /// The fd-server handle of byte `offset` of a cuMem allocation of `len` bytes exported as `export`.
    fn vmm(export: &(String, u64, [u8; 32]), len: u64, offset: u64) -> HandleDesc {
        HandleDesc::Vmm { server: export.0.clone(), id: export.1, token: export.2.to_vec(), size: len, offset }
    }

    /// Register `[ptr, ptr + size)` of a [`GpuBuffer`]-style allocation (cuMemAlloc).
    pub fn legacy(device: &Device, rank: usize, ptr: DevicePtr, size: usize) -> Result<Self> {
        let h = IpcMemHandle::export(device, ptr)?;
        let handle = HandleDesc::Legacy { handle: h.bytes.to_vec(), base_size: h.base_size, offset: h.offset };
        Ok(Self::local(device, rank, ptr, size as u64, handle))
    }

    /// Register `[ptr, ptr + size)` of any CUDA allocation: inside a live [`RawGpuBuffer`] (cuMem memory, e.g.
    /// the Python module's symmetric buffers handed back as raw pointers) through its fd export; inside another
    /// cuMem mapping (NCCL's `ncclMemAlloc`, an allocator's shareable segments) through a file descriptor
    /// exported for this registration; else through legacy CUDA IPC (`cuMemAlloc` memory, e.g. a framework's
    /// tensors).
    pub fn for_ptr(device: &Device, rank: usize, ptr: DevicePtr, size: usize) -> Result<Self> {
        let end = ptr.checked_add(size as u64);
        let raw = live_raw_buffers().lock().ok().and_then(|live| {
            live.iter()
                .find(|l| l.device == device.ordinal() && ptr >= l.ptr && end.is_some_and(|e| e <= l.ptr + l.len))
                .cloned()
        });
        if let Some(l) = raw {
            return Ok(Self::local(device, rank, ptr, size as u64, Self::vmm(&l.export, l.len, ptr - l.ptr)));
        }
        match sharing(device, ptr)? {
            Sharing::Legacy => Self::legacy(device, rank, ptr, size),
            Sharing::VmmFd => {
                let (fd, base, len) = export_mapped_fd(device, ptr)?;
                if end.is_none_or(|e| e > base + len) {
                    return Err(Error::InvalidArgument(format!(
                        "{size} B at {ptr:#x} run past the end of their cuMem mapping ({len} B at {base:#x}); \
                         register ranges inside one allocation"
                    )));
                }
                let export = ipc::export(fd, len)?;
                let mut r = Self::local(device, rank, ptr, size as u64, Self::vmm(&export, len, ptr - base));
                r.export = Some(Arc::new(Withdrawn(export.1)));
                Ok(r)
            }
            Sharing::VmmPrivate => Err(Error::InvalidArgument(format!(
                "the memory at {ptr:#x} is a cuMem allocation made without the POSIX file descriptor handle type, \
                 which no other process can map; allocate it with ncclMemAlloc, cudaMalloc or that handle type"
            ))),
        }
    }

    /// Whether [`RegisteredMemory::for_ptr`] can register memory at `ptr` (a local answer, asked before the
    /// ranks agree to register a call's buffers).
    pub fn can_register(device: &Device, ptr: DevicePtr) -> bool {
        sharing(device, ptr).is_ok_and(|s| s != Sharing::VmmPrivate)
    }

    /// Register a whole [`GpuBuffer`].
    pub fn from_gpu_buffer(buf: &GpuBuffer, rank: usize) -> Result<Self> {
        Self::legacy(buf.device(), rank, buf.ptr(), buf.len())
    }

    /// Register a sub-range of a [`RawGpuBuffer`].
    pub fn from_raw_buffer(buf: &RawGpuBuffer, rank: usize, offset: usize, size: usize) -> Result<Self> {
        if offset.checked_add(size).is_none_or(|e| e > buf.len()) {
            return Err(Error::InvalidArgument(format!(
                "range {offset}+{size} is outside a {}-byte buffer",
                buf.len()
            )));
        }
        let handle = Self::vmm(&buf.export, buf.len() as u64, offset as u64);
        Ok(Self::local(buf.device(), rank, buf.ptr() + offset as u64, size as u64, handle))
    }

    /// A sub-range of this registration (same handle, shifted offset).
    pub fn slice(&self, offset: u64, size: u64) -> Result<Self> {
        if offset.checked_add(size).is_none_or(|e| e > self.desc.size) {
            return Err(Error::InvalidArgument(format!(
                "slice {offset}+{size} is outside a {}-byte registration",
                self.desc.size
            )));
        }
        let mut desc = self.desc.clone();
        desc.ptr += offset;
        desc.size = size;
        match &mut desc.handle {
            HandleDesc::Legacy { offset: o, .. } | HandleDesc::Vmm { offset: o, .. } => *o += offset,
        }
        Ok(RegisteredMemory { desc, device: self.device, export: self.export.clone() })
    }

    /// Device address in this process.
    pub fn ptr(&self) -> DevicePtr {
        self.desc.ptr
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.desc.size
    }

    /// The description sent to peers.
    pub fn desc(&self) -> &MemoryDesc {
        &self.desc
    }
}

/// How a remote range is reachable from here.
#[derive(Debug)]
enum Mapping {
    /// Same process: the owner's pointer is valid here.
    SameProcess,
    /// Legacy IPC mapping.
    Ipc(#[expect(dead_code, reason = "held to keep the mapping alive until drop")] Arc<IpcMapping>),
    /// Imported VMM allocation.
    Vmm(#[expect(dead_code, reason = "held to keep the mapping alive until drop")] Arc<VmmMapping>),
    /// Another host: not mapped (network transports address it by the owner's pointer).
    NotMapped,
}

/// A peer's registered range, mapped into this process when it lives on the same host.
#[derive(Debug)]
pub struct RemoteMemory {
    desc: MemoryDesc,
    ptr: DevicePtr,
    _mapping: Mapping,
}

impl RemoteMemory {
    /// Decode a description received from a peer and map it for `device` if it is on this host.
    pub fn import(bytes: &[u8], device: &Device, from_rank: usize) -> Result<Self> {
        let desc: MemoryDesc = serde_json::from_slice(bytes)
            .map_err(|e| Error::Protocol { peer: from_rank, reason: format!("memory description: {e}") })?;
        Self::map(desc, device)
    }

    /// Map a description for `device`.
    pub fn map(desc: MemoryDesc, device: &Device) -> Result<Self> {
        if desc.host != crate::env::host_id() {
            return Ok(RemoteMemory { ptr: 0, desc, _mapping: Mapping::NotMapped });
        }
        if desc.pid == std::process::id() {
            if desc.device as usize != device.ordinal() {
                let owner = Device::open(desc.device as usize)?;
                device.enable_peer_access(&owner)?;
                device.bind()?;
            }
            return Ok(RemoteMemory { ptr: desc.ptr, desc, _mapping: Mapping::SameProcess });
        }
        match &desc.handle {
            HandleDesc::Legacy { handle, base_size, offset } => {
                let (ptr, m) = ipc::open_handle(device, desc.rank as usize, handle, *base_size, *offset)?;
                Ok(RemoteMemory { ptr, desc, _mapping: Mapping::Ipc(m) })
            }
            HandleDesc::Vmm { server, id, token, size, offset } => {
                let (ptr, m) =
                    ipc::import_allocation(device, desc.rank as usize, (server, *id, token), *size, *offset)?;
                Ok(RemoteMemory { ptr, desc, _mapping: Mapping::Vmm(Arc::new(m)) })
            }
        }
    }

    /// Address in this process (0 when the memory is on another host).
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Whether kernels of this process can access it directly.
    pub fn is_mapped(&self) -> bool {
        self.ptr != 0
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.desc.size
    }

    /// The owner's description.
    pub fn desc(&self) -> &MemoryDesc {
        &self.desc
    }
}
