//! Loaded modules (cubins), kernel functions and launches with packed arguments.

use std::ffi::CString;
use std::sync::Arc;

use cudarc::driver::sys;

use super::{Device, DevicePtr, Stream, result};
use crate::error::{Error, Result};

/// Plain data that may be passed by value to a kernel: `#[repr(C)]`, no pointers into host memory, no padding
/// that the kernel would read.
///
/// # Safety
/// The type must have the same size, alignment and field layout as the parameter type of the kernel it is
/// passed to, and no padding bytes (its bytes are read as plain data, see [`as_bytes`]).
pub unsafe trait DeviceRepr: Copy {}

/// The bytes of plain device records (what is copied to the GPU or packed as kernel arguments).
pub fn as_bytes<T: DeviceRepr>(items: &[T]) -> &[u8] {
    // SAFETY: `T: DeviceRepr` is plain data without padding, so every byte is initialised; the view borrows `items`.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), std::mem::size_of_val(items)) }
}

macro_rules! device_repr {
    ($($t:ty),*) => { $(
        // SAFETY: primitive types have the same layout in Rust and CUDA C++.
        unsafe impl DeviceRepr for $t {}
    )* };
}
device_repr!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, usize, isize);

/// A kernel argument buffer, packed with each argument at its natural alignment (the layout of the kernel's
/// parameter list).
#[derive(Clone, Debug, Default)]
pub struct KernelArgs {
    buf: Vec<u8>,
}

impl KernelArgs {
    /// An empty argument list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append one argument by value.
    pub fn push<T: DeviceRepr>(&mut self, value: T) -> &mut Self {
        let align = std::mem::align_of::<T>();
        let size = std::mem::size_of::<T>();
        let start = self.buf.len().div_ceil(align) * align;
        self.buf.resize(start + size, 0);
        self.buf[start..start + size].copy_from_slice(as_bytes(std::slice::from_ref(&value)));
        self
    }

    /// Append a device pointer (e.g. to an array of channel handles).
    pub fn push_ptr(&mut self, ptr: DevicePtr) -> &mut Self {
        self.push(ptr)
    }

    /// The packed bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// Grid and block shape of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Number of thread blocks (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads per block (x, y, z).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory in bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch.
    pub fn linear(blocks: u32, threads: u32) -> Self {
        LaunchConfig { grid: (blocks, 1, 1), block: (threads, 1, 1), shared_mem_bytes: 0 }
    }
}

#[derive(Debug)]
struct ModuleInner {
    device: Device,
    raw: sys::CUmodule,
}

// SAFETY: module handles are usable from any thread that binds the module's context (every method does).
unsafe impl Send for ModuleInner {}
// SAFETY: immutable after load.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if !super::context_lost() && self.device.bind().is_ok() {
            // SAFETY: unloaded once, after every Function referencing it (they hold an Arc).
            let _ = unsafe { result::module_unload(self.raw) };
        }
    }
}

/// A loaded cubin.
#[derive(Clone, Debug)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

impl Module {
    /// Load a cubin (or PTX, NUL-terminated) image on `device`.
    pub fn load(device: &Device, image: &[u8]) -> Result<Self> {
        device.bind()?;
        // cuModuleLoadData reads a NUL-terminated string for PTX; an ELF image carries its own size. Copy into a
        // buffer with a trailing NUL so both are safe.
        let mut data = image.to_vec();
        data.push(0);
        // SAFETY: `data` is a valid image followed by NUL and outlives the call.
        let raw = unsafe { result::module_load_data(data.as_ptr().cast()) }?;
        Ok(Module { inner: Arc::new(ModuleInner { device: *device, raw }) })
    }

    /// Look up a kernel by its (unmangled, `extern "C"`) name.
    pub fn function(&self, name: &str) -> Result<Function> {
        self.inner.device.bind()?;
        let cname =
            CString::new(name).map_err(|_| Error::InvalidArgument(format!("kernel name {name:?} contains NUL")))?;
        // SAFETY: live module, NUL-terminated name.
        let raw = match unsafe { result::module_get_function(self.inner.raw, &cname) } {
            Ok(raw) => raw,
            Err(e) if e.code == sys::CUresult::CUDA_ERROR_NOT_FOUND => {
                return Err(Error::InvalidArgument(format!(
                    "kernel `{name}` is not in the module; declare it `extern \"C\" __global__`"
                )));
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Function { module: self.inner.clone(), raw, name: name.to_string() })
    }

    /// Address and size of a `__device__`/`__constant__` global, or `None` when the module has none of that
    /// name (e.g. the compiler removed it as unused).
    pub fn global(&self, name: &str) -> Result<Option<(DevicePtr, usize)>> {
        self.inner.device.bind()?;
        let cname =
            CString::new(name).map_err(|_| Error::InvalidArgument(format!("global name {name:?} contains NUL")))?;
        // SAFETY: live module, NUL-terminated name.
        match unsafe { result::module_get_global(self.inner.raw, &cname) } {
            Ok(found) => Ok(Some(found)),
            Err(e) if e.code == sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The GPU this module is loaded on.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }
}

/// A kernel in a loaded module.
#[derive(Clone, Debug)]
pub struct Function {
    module: Arc<ModuleInner>,
    raw: sys::CUfunction,
    name: String,
}

// SAFETY: function handles are immutable and usable from any thread bound to the module's context.
unsafe impl Send for Function {}
// SAFETY: see above.
unsafe impl Sync for Function {}

impl Function {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Allow up to `bytes` of dynamic shared memory.
    pub fn set_max_dynamic_shared_mem(&self, bytes: u32) -> Result<()> {
        let bytes = i32::try_from(bytes)
            .map_err(|_| Error::InvalidArgument(format!("{bytes} B of dynamic shared memory is out of range")))?;
        // SAFETY: live function handle (its module is kept alive by `self`).
        Ok(unsafe {
            result::func_set_attribute(
                self.raw,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes,
            )
        }?)
    }

    /// The dynamic shared memory a launch may currently use, in bytes (raised by
    /// [`Function::set_max_dynamic_shared_mem`]).
    pub fn max_dynamic_shared_mem(&self) -> Result<u32> {
        self.module.device.bind()?;
        // SAFETY: live function handle (its module is kept alive by `self`).
        let v = unsafe {
            result::func_get_attribute(
                self.raw,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            )
        }?;
        Ok(v.max(0) as u32)
    }

    /// Bytes of statically declared shared memory per thread block (`__shared__` arrays): the opt-in limit for
    /// dynamic shared memory is the GPU's per-block opt-in maximum less this.
    pub fn static_shared_mem(&self) -> Result<u32> {
        self.module.device.bind()?;
        // SAFETY: live function handle (its module is kept alive by `self`).
        let v = unsafe {
            result::func_get_attribute(self.raw, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        }?;
        Ok(v.max(0) as u32)
    }

    /// Launch on `stream` with a packed argument buffer.
    ///
    /// # Safety
    /// `args` must match the kernel's parameter list exactly, and every pointer in it must be valid for what
    /// the kernel does with it for as long as the kernel runs.
    pub unsafe fn launch(&self, stream: &Stream, config: LaunchConfig, args: &KernelArgs) -> Result<()> {
        // SAFETY: forwarded to the caller's contract.
        unsafe { self.launch_bytes(stream, config, args.as_bytes()) }
    }

    /// Launch on `stream` with one argument passed by value (a kernel whose only parameter is a `T`), without
    /// allocating: the launch path of a kernel called many times per second.
    ///
    /// # Safety
    /// The kernel's parameter list must be exactly one `T`, and every pointer in `arg` must be valid for what the
    /// kernel does with it for as long as the kernel runs.
    pub unsafe fn launch_value<T: DeviceRepr>(&self, stream: &Stream, config: LaunchConfig, arg: &T) -> Result<()> {
        // SAFETY: forwarded to the caller's contract; `as_bytes` views a `DeviceRepr` value's bytes.
        unsafe { self.launch_bytes(stream, config, as_bytes(std::slice::from_ref(arg))) }
    }

    /// Launch with a packed parameter buffer (the contract of [`Function::launch`]).
    unsafe fn launch_bytes(&self, stream: &Stream, config: LaunchConfig, bytes: &[u8]) -> Result<()> {
        self.module.device.bind()?;
        // Copy into a 16-byte aligned buffer as the driver expects for parameter buffers: on the stack for the
        // usual few hundred bytes, on the heap beyond.
        const STACK_WORDS: usize = 32;
        let words = bytes.len().div_ceil(16).max(1);
        let mut stack = [0u128; STACK_WORDS];
        let mut heap = Vec::new();
        let aligned: &mut [u128] = if words <= STACK_WORDS {
            &mut stack[..words]
        } else {
            heap.resize(words, 0u128);
            &mut heap
        };
        // SAFETY: `aligned` has at least as many bytes as `bytes`; the regions do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), bytes.len());
        }
        let mut size: usize = bytes.len();
        // The CU_LAUNCH_PARAM_* markers are small integers cast to pointers.
        let mut extra: [*mut std::ffi::c_void; 5] = [
            std::ptr::without_provenance_mut(1), // CU_LAUNCH_PARAM_BUFFER_POINTER
            aligned.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(2), // CU_LAUNCH_PARAM_BUFFER_SIZE
            (&mut size as *mut usize).cast(),
            std::ptr::null_mut(), // CU_LAUNCH_PARAM_END
        ];
        // SAFETY: the argument layout is the caller's contract; `aligned`, `size` and `extra` outlive the call
        // (the driver copies the parameters at launch).
        Ok(unsafe {
            result::launch_kernel(
                self.raw,
                config.grid,
                config.block,
                config.shared_mem_bytes,
                stream.raw(),
                extra.as_mut_ptr(),
            )
        }?)
    }
}
