//! A thin safe layer over the CUDA driver (through `cudarc::driver::sys`).
//!
//! Three layers: the raw `sys` functions (cudarc), called only by `result`'s wrappers (one per symbol, each
//! returning a `Result`; their list is what the loader checks), and safe types ([`Device`], [`Stream`],
//! [`DeviceMemory`], [`Graph`], ...) that own their handles and turn failures into our [`Error`].

mod graph;
mod ipc;
pub mod loader;
mod lost;
mod memory;
mod module;
pub(crate) mod result;
mod stream;

pub use graph::Graph;
pub use ipc::{
    IpcMapping, IpcMemHandle, Sharing, VmmAllocation, VmmMapping, export_mapped_fd, sharing, vmm_granularity,
};
pub use memory::{DeviceMemory, PinnedHostMemory, address_range, buffer_id};
pub use module::{DeviceRepr, Function, KernelArgs, LaunchConfig, Module, as_bytes};
pub use stream::{Event, RUNS_AHEAD, RelaxedCapture, Stream, pace};

use std::ffi::CStr;
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys;

use crate::error::{Error, Result};

/// A raw device address.
pub type DevicePtr = u64;

/// Whether a kernel of this process trapped or faulted (a sticky CUDA error, e.g. after a device wait ran past
/// `MSCCLPP_WAIT_TIMEOUT_MS`): the CUDA context cannot be used again, so report the error and exit. From then on
/// the owners of CUDA handles release nothing when dropped (the driver reclaims everything at exit).
pub fn context_lost() -> bool {
    lost::lost()
}
/// A raw stream handle (`CUstream`, the same handle as the runtime's `cudaStream_t`), for [`Stream::borrow_raw`].
pub type RawStream = cudarc::driver::sys::CUstream;

/// Build an [`Error::Cuda`] from a raw `CUresult` code. `call` is named without its `_v2` suffix.
pub(crate) fn cuda_error(call: &'static str, code: u32) -> Error {
    // SAFETY: `code` came from a driver call; CUresult is a #[repr(u32)] enum and the driver only returns listed
    // values.
    let rc: sys::CUresult = unsafe { std::mem::transmute::<u32, sys::CUresult>(code) };
    let read = |p: result::DriverResult<*const std::ffi::c_char>| match p {
        Ok(p) if !p.is_null() => {
            // SAFETY: non-null pointers from cuGetError* point to static NUL-terminated strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
        _ => "unknown".to_string(),
    };
    let name = read(result::get_error_name(rc));
    let message = read(result::get_error_string(rc));
    let call = call.strip_suffix("_v2").unwrap_or(call);
    if lost::is_sticky(rc) {
        Error::ContextLost { call, name, message, code }
    } else {
        Error::Cuda { call, name, message, code }
    }
}

impl From<result::DriverError> for Error {
    fn from(e: result::DriverError) -> Self {
        cuda_error(e.call, e.code as u32)
    }
}

/// A primary context handle, shareable between threads.
#[derive(Clone, Copy, Debug)]
struct Ctx(sys::CUcontext);
// SAFETY: a CUcontext is a process-wide handle that the driver lets any thread make current.
unsafe impl Send for Ctx {}
// SAFETY: see above; the handle itself is never mutated.
unsafe impl Sync for Ctx {}

fn contexts() -> &'static Mutex<Vec<Option<Ctx>>> {
    static CTX: OnceLock<Mutex<Vec<Option<Ctx>>>> = OnceLock::new();
    CTX.get_or_init(|| Mutex::new(Vec::new()))
}

/// Number of visible GPUs. Errors (never panics) when there is no driver.
pub fn device_count() -> Result<usize> {
    loader::driver()?;
    Ok(result::device_get_count()?.max(0) as usize)
}

/// Version of the installed driver as `major * 1000 + minor * 10` (e.g. 13000).
pub fn driver_version() -> Result<i32> {
    loader::driver()?;
    Ok(result::driver_get_version()?)
}

/// One GPU, with its primary context retained for the life of the process.
#[derive(Clone, Copy, Debug)]
pub struct Device {
    ordinal: usize,
    ctx: Ctx,
}

impl Device {
    /// The GPU of the CUDA context current on this thread (the CUDA runtime's current device, once the
    /// application used it), else GPU 0; opened as [`Device::open`] does.
    pub fn current() -> Result<Self> {
        let ordinal = result::ctx_get_device().map(|d| d.max(0) as usize).unwrap_or(0);
        Self::open(ordinal)
    }

    /// Open GPU `ordinal` and make its primary context current on this thread.
    pub fn open(ordinal: usize) -> Result<Self> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::NoDevice);
        }
        if ordinal >= count {
            return Err(Error::DeviceOutOfRange { ordinal, count });
        }
        let mut table = contexts().lock().map_err(|_| Error::Poisoned { what: "the CUDA context table" })?;
        if table.len() < count {
            table.resize(count, None);
        }
        let ctx = match table[ordinal] {
            Some(ctx) => ctx,
            None => {
                let dev = result::device_get(ordinal as i32)?;
                // The primary context is retained once and never released, so the handle stays valid for the
                // whole process.
                let raw = result::device_primary_ctx_retain(dev)?;
                table[ordinal] = Some(Ctx(raw));
                Ctx(raw)
            }
        };
        let device = Device { ordinal, ctx };
        device.bind()?;
        Ok(device)
    }

    /// The ordinal of this GPU.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Make this GPU's context current on the calling thread (each thread that calls CUDA must do this once).
    pub fn bind(&self) -> Result<()> {
        // SAFETY: the context was retained in `open` and is never released.
        Ok(unsafe { result::ctx_set_current(self.ctx.0) }?)
    }

    fn raw_device(&self) -> Result<sys::CUdevice> {
        Ok(result::device_get(self.ordinal as i32)?)
    }

    /// Query an integer attribute.
    pub fn attribute(&self, attr: sys::CUdevice_attribute) -> Result<i32> {
        Ok(result::device_get_attribute(attr, self.raw_device()?)?)
    }

    /// Compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> Result<(i32, i32)> {
        Ok((
            self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ))
    }

    /// The NVRTC architecture name of this GPU, e.g. `sm_90`.
    pub fn arch(&self) -> Result<String> {
        let (major, minor) = self.compute_capability()?;
        Ok(format!("sm_{major}{minor}"))
    }

    /// Number of streaming multiprocessors.
    pub fn multiprocessor_count(&self) -> Result<usize> {
        Ok(self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as usize)
    }

    /// The marketing name, e.g. `NVIDIA H200`.
    pub fn name(&self) -> Result<String> {
        let dev = self.raw_device()?;
        let mut buf = [0 as std::ffi::c_char; 256];
        result::device_get_name(&mut buf, dev)?;
        // SAFETY: the driver NUL-terminates within the given length.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
    }

    /// Whether this GPU can map memory of `peer` (NVLink or PCIe P2P).
    pub fn can_access_peer(&self, peer: &Device) -> Result<bool> {
        self.can_access_ordinal(peer.ordinal)
    }

    /// Whether this GPU can map memory of the GPU with ordinal `peer`, asked of the driver by device handle: no
    /// context is made on `peer` (a primary context there would cost this process hundreds of milliseconds and
    /// hundreds of MiB of that GPU's memory, for memory that another process owns and exports).
    pub fn can_access_ordinal(&self, peer: usize) -> Result<bool> {
        if peer == self.ordinal {
            return Ok(true);
        }
        let count = device_count()?;
        if peer >= count {
            return Err(Error::DeviceOutOfRange { ordinal: peer, count });
        }
        let a = self.raw_device()?;
        let b = result::device_get(peer as i32)?;
        Ok(result::device_can_access_peer(a, b)?)
    }

    /// Let kernels on this GPU access memory allocated on `peer` in this process. Idempotent.
    pub fn enable_peer_access(&self, peer: &Device) -> Result<()> {
        if peer.ordinal == self.ordinal {
            return Ok(());
        }
        if !self.can_access_peer(peer)? {
            return Err(Error::NoPeerAccess { from: self.ordinal, to: peer.ordinal });
        }
        self.bind()?;
        // SAFETY: both contexts are retained primary contexts.
        match unsafe { result::ctx_enable_peer_access(peer.ctx.0) } {
            Err(e) if e.code == sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            other => Ok(other?),
        }
    }

    /// The most shared memory one thread block may opt into (`MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`), in bytes.
    pub fn max_shared_memory_per_block_optin(&self) -> Result<u32> {
        let v = self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        Ok(v.max(0) as u32)
    }

    /// Whether the driver supports `cuStreamWriteValue64` on this GPU.
    pub fn supports_stream_mem_ops(&self) -> bool {
        self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS)
            .map(|v| v != 0)
            .unwrap_or(false)
    }

    /// Whether cuMem allocations of this GPU can be exported as POSIX file descriptors.
    pub fn supports_posix_fd_handles(&self) -> bool {
        self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
            .map(|v| v != 0)
            .unwrap_or(false)
    }
}

/// Whether NVLink multicast is allowed by the environment. Returns the error that names the variable when it is
/// disabled. Never calls any multicast API.
pub fn nvls_allowed() -> Result<()> {
    mscclpp_config::multicast_allowed().map_err(|f| Error::NvlsDisabled { variable: f.variable, value: f.value })
}

/// Synchronous copy of `src` to the device address `ptr` of an allocation of `len` bytes.
pub fn copy_to_device(device: &Device, ptr: DevicePtr, len: usize, src: &[u8]) -> Result<()> {
    memory::copy_h2d(device, ptr, len, 0, src)
}

/// Synchronous copy from the device address `ptr` of an allocation of `len` bytes into `dst`.
pub fn copy_from_device(device: &Device, ptr: DevicePtr, len: usize, dst: &mut [u8]) -> Result<()> {
    memory::copy_d2h(device, ptr, len, 0, dst)
}
