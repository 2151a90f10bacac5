//! Sharing GPU memory between processes: legacy CUDA IPC handles and cuMem VMM allocations exported as POSIX
//! file descriptors.

use std::collections::HashMap;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys;

use super::{Device, DevicePtr, result};
use crate::error::{Error, Result};

/// A legacy CUDA IPC handle (`cuIpcGetMemHandle`) of an allocation's base, plus where inside it a range starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpcMemHandle {
    /// The 64 opaque bytes of `CUipcMemHandle`.
    pub bytes: [u8; 64],
    /// Size of the whole base allocation.
    pub base_size: u64,
    /// Offset of the registered range from the allocation's base.
    pub offset: u64,
}

impl IpcMemHandle {
    /// Export the allocation that contains `ptr` (which must come from `cuMemAlloc`).
    pub fn export(device: &Device, ptr: DevicePtr) -> Result<Self> {
        let (base, size) = super::address_range(device, ptr)?;
        // SAFETY: `base` is the start of the allocation (from cuMemGetAddressRange).
        let handle = unsafe { result::ipc_get_mem_handle(base) }?;
        let mut bytes = [0u8; 64];
        for (b, c) in bytes.iter_mut().zip(handle.reserved.iter()) {
            *b = *c as u8;
        }
        Ok(IpcMemHandle { bytes, base_size: size, offset: ptr - base })
    }

    /// Map the peer's allocation into this process (cached: a handle is opened once per process and device).
    pub fn open(&self, device: &Device) -> Result<Arc<IpcMapping>> {
        let cache = ipc_cache();
        let mut map = cache.lock().map_err(|_| Error::Poisoned { what: "the IPC handle cache" })?;
        let key = (self.bytes, device.ordinal());
        if let Some(m) = map.get(&key).and_then(|w| w.upgrade()) {
            return Ok(m);
        }
        device.bind()?;
        // SAFETY: zeroed then filled; plain bytes.
        let mut handle: sys::CUipcMemHandle = unsafe { std::mem::zeroed() };
        for (c, b) in handle.reserved.iter_mut().zip(self.bytes.iter()) {
            *c = *b as std::ffi::c_char;
        }
        // SAFETY: the handle came from a peer's cuIpcGetMemHandle; LAZY_ENABLE_PEER_ACCESS is the only flag.
        let base = unsafe {
            result::ipc_open_mem_handle(handle, sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32)
        }?;
        let m = Arc::new(IpcMapping { device: *device, base, size: self.base_size });
        map.insert(key, Arc::downgrade(&m));
        Ok(m)
    }
}

type IpcCache = Mutex<HashMap<([u8; 64], usize), std::sync::Weak<IpcMapping>>>;

fn ipc_cache() -> &'static IpcCache {
    static CACHE: OnceLock<IpcCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// A peer allocation mapped through a legacy IPC handle; unmapped when the last user drops it.
#[derive(Debug)]
pub struct IpcMapping {
    device: Device,
    base: DevicePtr,
    size: u64,
}

impl IpcMapping {
    /// Base address of the mapped allocation in this process.
    pub fn base(&self) -> DevicePtr {
        self.base
    }

    /// Size of the mapped allocation.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for IpcMapping {
    fn drop(&mut self) {
        if !super::context_lost() && self.device.bind().is_ok() {
            // SAFETY: `base` came from cuIpcOpenMemHandle and is closed once (the cache holds only weak refs).
            let _ = unsafe { result::ipc_close_mem_handle(self.base) };
        }
    }
}

fn location(device: &Device) -> sys::CUmemLocation {
    sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device.ordinal() as i32 }
}

fn posix_fd_prop(device: &Device) -> sys::CUmemAllocationProp {
    sys::CUmemAllocationProp {
        type_: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        location: location(device),
        win32HandleMetaData: std::ptr::null_mut(),
        allocFlags: sys::CUmemAllocationProp_st__bindgen_ty_1 {
            compressionType: 0,
            gpuDirectRDMACapable: 0,
            usage: 0,
            reserved: [0; 4],
        },
    }
}

/// The allocation granularity for VMM allocations on `device`.
pub fn vmm_granularity(device: &Device) -> Result<usize> {
    let gran = result::mem_get_allocation_granularity(
        &posix_fd_prop(device),
        sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
    )?;
    Ok(gran.max(1))
}

/// Reserve a VA range, map `handle` there and grant `device` read/write access.
fn map_handle(device: &Device, handle: sys::CUmemGenericAllocationHandle, size: usize) -> Result<DevicePtr> {
    // Size is a multiple of the granularity (callers round).
    let ptr = result::mem_address_reserve(size)?;
    // SAFETY: the range was just reserved with exactly `size` bytes.
    if let Err(e) = unsafe { result::mem_map(ptr, size, handle) } {
        // SAFETY: release the reservation made above.
        let _ = unsafe { result::mem_address_free(ptr, size) };
        return Err(e.into());
    }
    let access = sys::CUmemAccessDesc {
        location: location(device),
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: the range is mapped.
    if let Err(e) = unsafe { result::mem_set_access(ptr, size, &access) } {
        // SAFETY: undo the map and reservation made above, once each.
        unsafe {
            let _ = result::mem_unmap(ptr, size);
            let _ = result::mem_address_free(ptr, size);
        }
        return Err(e.into());
    }
    Ok(ptr)
}

/// A cuMem (VMM) allocation on one GPU, exportable as a POSIX file descriptor: the mapping of a handle it created
/// itself.
#[derive(Debug)]
pub struct VmmAllocation {
    map: VmmMapping,
}

impl VmmAllocation {
    /// Allocate at least `bytes` (rounded up to the granularity), mapped and zeroed.
    pub fn new(device: &Device, bytes: usize) -> Result<Self> {
        if bytes == 0 {
            return Err(Error::InvalidArgument("cannot allocate 0 bytes".into()));
        }
        device.bind()?;
        if !device.supports_posix_fd_handles() {
            return Err(Error::InvalidArgument(format!(
                "GPU {} cannot export cuMem allocations as POSIX file descriptors; use GpuBuffer (legacy IPC)",
                device.ordinal()
            )));
        }
        let gran = vmm_granularity(device)?;
        let size = bytes.div_ceil(gran) * gran;
        let handle = result::mem_create(size, &posix_fd_prop(device))?;
        let a = VmmAllocation { map: VmmMapping::new(device, handle, size)? };
        // SAFETY: the mapping covers `size` bytes we own, in the bound context.
        unsafe { super::memory::memset_sync(a.ptr(), 0, size) }?;
        Ok(a)
    }

    /// Device address.
    pub fn ptr(&self) -> DevicePtr {
        self.map.ptr
    }

    /// Mapped size (a multiple of the granularity).
    pub fn size(&self) -> usize {
        self.map.size
    }

    /// The GPU it lives on.
    pub fn device(&self) -> &Device {
        &self.map.device
    }

    /// Export as a new POSIX file descriptor (owned by the caller).
    pub fn export_fd(&self) -> Result<OwnedFd> {
        self.map.device.bind()?;
        // SAFETY: the handle is owned by this allocation.
        let fd: RawFd = unsafe { result::mem_export_to_posix_fd(self.map.handle) }?;
        // SAFETY: the driver returned a fresh descriptor that nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Import an allocation of `size` bytes from a POSIX file descriptor received from its owner, and map it
    /// for `device`.
    pub fn import_fd(device: &Device, fd: &OwnedFd, size: usize) -> Result<VmmMapping> {
        use std::os::fd::AsRawFd;
        device.bind()?;
        // SAFETY: `fd` is an open descriptor borrowed for the call.
        let handle = unsafe { result::mem_import_from_posix_fd(fd.as_raw_fd()) }?;
        VmmMapping::new(device, handle, size)
    }
}

/// How another process can map the memory at an address, when someone else allocated it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Not a cuMem mapping (`cuMemAlloc`/`cudaMalloc` memory): legacy CUDA IPC handles share it.
    Legacy,
    /// A cuMem mapping whose allocation can be exported as a POSIX file descriptor (NCCL's `ncclMemAlloc`, an
    /// allocator's expandable segments made for IPC).
    VmmFd,
    /// A cuMem mapping created without the POSIX file descriptor handle type: no other process can map it.
    VmmPrivate,
}

/// How the memory at `ptr` (inside a live allocation of this process) can be shared ([`Sharing`]).
pub fn sharing(device: &Device, ptr: DevicePtr) -> Result<Sharing> {
    device.bind()?;
    let Ok(handle) = result::mem_retain_allocation_handle(ptr) else { return Ok(Sharing::Legacy) };
    let mask = result::mem_requested_handle_types(handle);
    // SAFETY: releases the reference retained above, once.
    let _ = unsafe { result::mem_release(handle) };
    let fd = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.0;
    Ok(if mask? & fd != 0 { Sharing::VmmFd } else { Sharing::VmmPrivate })
}

/// Export the cuMem allocation mapped at `ptr` (one someone else made and mapped, such as NCCL's
/// `ncclMemAlloc`) as a new POSIX file descriptor, with the start and size of its mapping. An error for memory
/// that is not a cuMem mapping or was created without the POSIX file descriptor handle type.
pub fn export_mapped_fd(device: &Device, ptr: DevicePtr) -> Result<(OwnedFd, DevicePtr, u64)> {
    device.bind()?;
    let handle = result::mem_retain_allocation_handle(ptr)?;
    // SAFETY: the handle was just retained; the fd (or the error) does not depend on the reference we release.
    let exported = unsafe { result::mem_export_to_posix_fd(handle) };
    // SAFETY: releases the reference retained above, once.
    let _ = unsafe { result::mem_release(handle) };
    let fd = exported.map_err(|e| {
        Error::InvalidArgument(format!(
            "the cuMem allocation at {ptr:#x} cannot be exported as a POSIX file descriptor ({}: {:?}); allocate it with \
             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR among its requested handle types (as ncclMemAlloc does)",
            e.call, e.code
        ))
    })?;
    // SAFETY: the driver returned a fresh descriptor that nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let (base, size) = super::address_range(device, ptr)?;
    Ok((fd, base, size))
}

/// A VMM allocation handle mapped into this process: a peer's (imported) or, inside [`VmmAllocation`], our own.
/// Unmapped, its address range freed and the handle released on drop.
#[derive(Debug)]
pub struct VmmMapping {
    device: Device,
    handle: sys::CUmemGenericAllocationHandle,
    ptr: DevicePtr,
    size: usize,
}

// SAFETY: plain handles and addresses; the driver is thread-safe.
unsafe impl Send for VmmMapping {}
// SAFETY: immutable after construction.
unsafe impl Sync for VmmMapping {}

impl VmmMapping {
    /// Map `handle` (`size` bytes, a multiple of the granularity) for `device`. Takes ownership of the handle: it
    /// is released on failure too.
    fn new(device: &Device, handle: sys::CUmemGenericAllocationHandle, size: usize) -> Result<Self> {
        match map_handle(device, handle, size) {
            Ok(ptr) => Ok(VmmMapping { device: *device, handle, ptr, size }),
            Err(e) => {
                // SAFETY: release the handle, which nothing else owns.
                let _ = unsafe { result::mem_release(handle) };
                Err(e)
            }
        }
    }

    /// Base address of the mapping.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Mapped size.
    pub fn size(&self) -> usize {
        self.size
    }
}

impl Drop for VmmMapping {
    fn drop(&mut self) {
        if !super::context_lost() && self.device.bind().is_ok() {
            // SAFETY: undo map, reservation and creation or import of the handle, once each.
            unsafe {
                let _ = result::mem_unmap(self.ptr, self.size);
                let _ = result::mem_address_free(self.ptr, self.size);
                let _ = result::mem_release(self.handle);
            }
        }
    }
}
