//! Device memory (`cuMemAlloc`) and mapped pinned host memory (`cuMemHostAlloc`).

use cudarc::driver::sys;

use super::{Device, DevicePtr, result};
use crate::error::{Error, Result};

/// Device memory allocated with `cuMemAlloc` (shareable with other processes through legacy CUDA IPC handles).
#[derive(Debug)]
pub struct DeviceMemory {
    device: Device,
    ptr: DevicePtr,
    len: usize,
}

impl DeviceMemory {
    /// Allocate `len` bytes on `device`, zero-filled.
    pub fn zeroed(device: &Device, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::InvalidArgument("cannot allocate 0 bytes of device memory".into()));
        }
        device.bind()?;
        let ptr = result::mem_alloc(len)?;
        let mem = DeviceMemory { device: *device, ptr, len };
        mem.fill(0)?;
        Ok(mem)
    }

    /// The device address.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false (zero-size allocations are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The GPU this lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Copy `src` into this buffer at byte `offset` (synchronous).
    pub fn copy_from_host(&self, offset: usize, src: &[u8]) -> Result<()> {
        copy_h2d(&self.device, self.ptr, self.len, offset, src)
    }

    /// Copy bytes starting at `offset` into `dst` (synchronous).
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        copy_d2h(&self.device, self.ptr, self.len, offset, dst)
    }

    /// Fill with a byte value (synchronous).
    pub fn fill(&self, value: u8) -> Result<()> {
        self.device.bind()?;
        // SAFETY: we own `len` bytes at `ptr`.
        unsafe { memset_sync(self.ptr, value, self.len) }
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if !super::context_lost() && self.device.bind().is_ok() {
            // SAFETY: `ptr` was returned by cuMemAlloc and is freed exactly once. A failure cannot be reported
            // from drop and leaves at worst a leak.
            let _ = unsafe { result::mem_free(self.ptr) };
        }
    }
}

/// Synchronous host→device copy into `[ptr + offset, ptr + offset + src.len())`, bounds-checked against `len`.
pub(crate) fn copy_h2d(device: &Device, ptr: DevicePtr, len: usize, offset: usize, src: &[u8]) -> Result<()> {
    if offset.checked_add(src.len()).is_none_or(|end| end > len) {
        return Err(Error::InvalidArgument(format!(
            "copy of {} bytes at offset {offset} overruns a {len}-byte buffer",
            src.len()
        )));
    }
    if src.is_empty() {
        return Ok(());
    }
    device.bind()?;
    // SAFETY: bounds checked above; `src` is a valid host slice.
    unsafe { result::memcpy_htod(ptr + offset as u64, src) }?;
    // From pageable memory cuMemcpyHtoD returns once the data is staged, possibly before the DMA landed; kernels
    // on our non-blocking streams would not wait for it, so finish it here.
    sync_legacy_stream()
}

/// Set `len` bytes at `ptr` to `value` and wait until it is done: `cuMemsetD8` may return before the memset ran,
/// and kernels on our non-blocking streams would not wait for it.
///
/// # Safety
/// `[ptr, ptr + len)` must be device memory owned by the caller, in the current context.
pub(crate) unsafe fn memset_sync(ptr: DevicePtr, value: u8, len: usize) -> Result<()> {
    // SAFETY: the caller owns `len` bytes at `ptr`.
    unsafe { result::memset_d8(ptr, value, len) }?;
    sync_legacy_stream()
}

/// Wait for the work queued on the legacy default stream (the synchronous copies and memsets above).
fn sync_legacy_stream() -> Result<()> {
    // SAFETY: the null stream is the current context's legacy default stream, always valid.
    Ok(unsafe { result::stream_synchronize(std::ptr::null_mut()) }?)
}

/// Synchronous device→host copy, bounds-checked against `len`.
pub(crate) fn copy_d2h(device: &Device, ptr: DevicePtr, len: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
    if offset.checked_add(dst.len()).is_none_or(|end| end > len) {
        return Err(Error::InvalidArgument(format!(
            "copy of {} bytes at offset {offset} overruns a {len}-byte buffer",
            dst.len()
        )));
    }
    if dst.is_empty() {
        return Ok(());
    }
    device.bind()?;
    // SAFETY: bounds checked above; `dst` is a valid, exclusively borrowed host slice.
    Ok(unsafe { result::memcpy_dtoh(dst, ptr + offset as u64) }?)
}

/// Base address and size of the CUDA allocation that contains `ptr`. An address that no CUDA allocation of
/// this process holds (host memory, a freed buffer) is an error that says so.
pub fn address_range(device: &Device, ptr: DevicePtr) -> Result<(DevicePtr, u64)> {
    device.bind()?;
    let (base, size) = result::mem_get_address_range(ptr).map_err(|e| {
        Error::InvalidArgument(format!(
            "address {ptr:#x} is not inside a CUDA device allocation of this process (cuMemGetAddressRange: {:?}); \
             pass buffers allocated with cuMemAlloc/cudaMalloc (e.g. GpuBuffer or a torch CUDA tensor)",
            e.code
        ))
    })?;
    Ok((base, size as u64))
}

/// The driver's unique id of the CUDA allocation that contains `ptr`: an allocation freed and another made at
/// the same address get different ids.
pub fn buffer_id(device: &Device, ptr: DevicePtr) -> Result<u64> {
    device.bind()?;
    result::pointer_buffer_id(ptr).map_err(|e| {
        Error::InvalidArgument(format!(
            "address {ptr:#x} is not inside a CUDA device allocation of this process (cuPointerGetAttribute: {:?})",
            e.code
        ))
    })
}

/// Pinned host memory mapped into the device address space of every context (`PORTABLE | DEVICEMAP`).
///
/// The host sees it at [`host_ptr`](Self::host_ptr) and kernels at [`device_ptr`](Self::device_ptr); used for the
/// proxy FIFO, the device error slot and Ethernet staging.
#[derive(Debug)]
pub struct PinnedHostMemory {
    device: Device,
    host: *mut u8,
    dev: DevicePtr,
    len: usize,
}

// SAFETY: the allocation is plain memory owned by this value; concurrent access is coordinated by the users
// through atomics, exactly as for memory shared with the GPU.
unsafe impl Send for PinnedHostMemory {}
// SAFETY: see above.
unsafe impl Sync for PinnedHostMemory {}

impl PinnedHostMemory {
    /// Allocate `len` zeroed bytes of pinned, device-mapped host memory.
    pub fn zeroed(device: &Device, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::InvalidArgument("cannot allocate 0 bytes of pinned memory".into()));
        }
        device.bind()?;
        let host = result::mem_host_alloc(len, sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE)?;
        // SAFETY: `host` was just returned by cuMemHostAlloc with DEVICEMAP.
        let dev = match unsafe { result::mem_host_get_device_pointer(host) } {
            Ok(dev) => dev,
            Err(e) => {
                // SAFETY: free what we allocated above, once.
                let _ = unsafe { result::mem_free_host(host) };
                return Err(e.into());
            }
        };
        // SAFETY: `host` points to `len` writable bytes.
        unsafe { std::ptr::write_bytes(host.cast::<u8>(), 0, len) };
        Ok(PinnedHostMemory { device: *device, host: host.cast(), dev, len })
    }

    /// Host address.
    pub fn host_ptr(&self) -> *mut u8 {
        self.host
    }

    /// Device address (valid in kernels of any context).
    pub fn device_ptr(&self) -> DevicePtr {
        self.dev
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false (zero-size allocations are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole buffer as host bytes. Only meaningful while no kernel writes to it.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `host` points to `len` bytes owned by self; concurrent device writes are the caller's concern
        // (documented above), and u8 has no invalid values.
        unsafe { std::slice::from_raw_parts(self.host, self.len) }
    }

    /// The whole buffer as mutable host bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: exclusive borrow of memory owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.host, self.len) }
    }

    /// A reference to the `u64` at byte `offset`, usable atomically (for flags shared with the GPU).
    pub fn atomic_u64(&self, offset: usize) -> Result<&std::sync::atomic::AtomicU64> {
        if !offset.is_multiple_of(8) || offset + 8 > self.len {
            return Err(Error::InvalidArgument(format!(
                "atomic u64 at offset {offset} is misaligned or outside a {}-byte pinned buffer",
                self.len
            )));
        }
        // SAFETY: in bounds, 8-byte aligned (cuMemHostAlloc returns page-aligned memory), and AtomicU64 has
        // the layout of u64; the memory lives as long as `self`.
        Ok(unsafe { &*(self.host.add(offset) as *const std::sync::atomic::AtomicU64) })
    }

    /// A reference to the `u32` at byte `offset`, usable atomically.
    pub fn atomic_u32(&self, offset: usize) -> Result<&std::sync::atomic::AtomicU32> {
        if !offset.is_multiple_of(4) || offset + 4 > self.len {
            return Err(Error::InvalidArgument(format!(
                "atomic u32 at offset {offset} is misaligned or outside a {}-byte pinned buffer",
                self.len
            )));
        }
        // SAFETY: in bounds and aligned, see atomic_u64.
        Ok(unsafe { &*(self.host.add(offset) as *const std::sync::atomic::AtomicU32) })
    }
}

impl Drop for PinnedHostMemory {
    fn drop(&mut self) {
        if !super::context_lost() && self.device.bind().is_ok() {
            // SAFETY: `host` came from cuMemHostAlloc and is freed once.
            let _ = unsafe { result::mem_free_host(self.host.cast()) };
        }
    }
}
